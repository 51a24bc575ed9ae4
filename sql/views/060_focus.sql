-- FOCUS 1.2: one row per line item with every column of the specification, by its name and data
-- type, so queries and dashboards written against FOCUS bind without edits. Derived from the line
-- item where it has the fact, from the mappings kept as data (focus_map_providers,
-- focus_map_services), and NULL where the API says nothing (the README's table says which and why).
-- Extra columns carry the x_ prefix the specification reserves.
CREATE OR REPLACE VIEW focus AS
WITH li AS (
  SELECT li.*, p.provider_name, p.default_service_category, s.service_category
  FROM line_items li
  LEFT JOIN focus_map_providers p ON p.provider_type = li.provider_type
  LEFT JOIN focus_map_services s ON s.service_key = lower(li.provider_service)
)
SELECT
  NULL::VARCHAR AS AvailabilityZone,
  net_amount_usd::DECIMAL(38, 10) AS BilledCost,
  NULL::VARCHAR AS BillingAccountId,
  NULL::VARCHAR AS BillingAccountName,
  NULL::VARCHAR AS BillingAccountType,
  'USD' AS BillingCurrency,
  (date_trunc('month', usage_date) + INTERVAL 1 MONTH)::TIMESTAMP AT TIME ZONE 'UTC' AS BillingPeriodEnd,
  date_trunc('month', usage_date)::TIMESTAMP AT TIME ZONE 'UTC' AS BillingPeriodStart,
  NULL::VARCHAR AS CapacityReservationId,
  NULL::VARCHAR AS CapacityReservationStatus,
  -- The stated rule: the category the API sent beyond its spec table (charge_category, for rows
  -- ingested through the FOCUS endpoint) when it is one of FOCUS's; else a negative net amount is a
  -- credit, anything else usage.
  CASE lower(json_extract_string(extra, '$.charge_category'))
    WHEN 'usage' THEN 'Usage' WHEN 'purchase' THEN 'Purchase' WHEN 'tax' THEN 'Tax' WHEN 'credit' THEN 'Credit' WHEN 'adjustment' THEN 'Adjustment'
    ELSE CASE WHEN net_amount_usd < 0 THEN 'Credit' ELSE 'Usage' END
  END AS ChargeCategory,
  -- The API reports no corrections of earlier periods: no row is a correction.
  NULL::VARCHAR AS ChargeClass,
  NULL::VARCHAR AS ChargeDescription,
  -- A line item is a day's metered amount; a purchase is one-time.
  CASE WHEN lower(json_extract_string(extra, '$.charge_category')) = 'purchase' THEN 'One-Time' ELSE 'Usage-Based' END AS ChargeFrequency,
  (usage_date + INTERVAL 1 DAY)::TIMESTAMP AT TIME ZONE 'UTC' AS ChargePeriodEnd,
  usage_date::TIMESTAMP AT TIME ZONE 'UTC' AS ChargePeriodStart,
  NULL::VARCHAR AS CommitmentDiscountCategory,
  NULL::VARCHAR AS CommitmentDiscountId,
  NULL::VARCHAR AS CommitmentDiscountName,
  NULL::DECIMAL(38, 10) AS CommitmentDiscountQuantity,
  NULL::VARCHAR AS CommitmentDiscountStatus,
  NULL::VARCHAR AS CommitmentDiscountType,
  NULL::VARCHAR AS CommitmentDiscountUnit,
  NULL::DECIMAL(38, 10) AS ConsumedQuantity,
  NULL::VARCHAR AS ConsumedUnit,
  NULL::DECIMAL(38, 10) AS ContractedCost,
  NULL::DECIMAL(38, 10) AS ContractedUnitPrice,
  -- The net amount is what was billed after discounts, without amortization the API does not report.
  net_amount_usd::DECIMAL(38, 10) AS EffectiveCost,
  NULL::VARCHAR AS InvoiceId,
  coalesce(provider_name, provider_type) AS InvoiceIssuerName,
  NULL::DECIMAL(38, 10) AS ListCost,
  NULL::DECIMAL(38, 10) AS ListUnitPrice,
  NULL::VARCHAR AS PricingCategory,
  NULL::VARCHAR AS PricingCurrency,
  NULL::DECIMAL(38, 10) AS PricingCurrencyContractedUnitPrice,
  NULL::DECIMAL(38, 10) AS PricingCurrencyEffectiveCost,
  NULL::DECIMAL(38, 10) AS PricingCurrencyListUnitPrice,
  NULL::DECIMAL(38, 10) AS PricingQuantity,
  NULL::VARCHAR AS PricingUnit,
  coalesce(provider_name, provider_type) AS ProviderName,
  coalesce(provider_name, provider_type) AS PublisherName,
  NULL::VARCHAR AS RegionId,
  NULL::VARCHAR AS RegionName,
  NULL::VARCHAR AS ResourceId,
  NULL::VARCHAR AS ResourceName,
  NULL::VARCHAR AS ResourceType,
  coalesce(service_category, default_service_category, 'Other') AS ServiceCategory,
  provider_service AS ServiceName,
  NULL::VARCHAR AS ServiceSubcategory,
  NULL::VARCHAR AS SkuId,
  NULL::VARCHAR AS SkuMeter,
  NULL::JSON AS SkuPriceDetails,
  NULL::VARCHAR AS SkuPriceId,
  project_id AS SubAccountId,
  NULL::VARCHAR AS SubAccountName,
  CASE WHEN project_id IS NOT NULL THEN 'Project' END AS SubAccountType,
  NULL::JSON AS Tags,
  source AS x_source,
  id AS x_line_item_id,
  user_email AS x_user_email,
  provider_type AS x_provider_type,
  currency_original AS x_currency_original,
  extra AS x_extra
FROM li;
COMMENT ON VIEW focus IS 'FOCUS 1.2: every column of the specification, one row per line item (see the README for where each comes from)';
