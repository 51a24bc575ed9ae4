-- FOCUS 1.2: one row per line item with every column of the specification, by its name and data
-- type, so queries and dashboards written against FOCUS bind without edits. Derived from the line
-- item where it has the fact, from the source (workspace) it came from, from the mappings kept as
-- data (focus_map_providers, focus_map_services, focus_subcategories), and NULL where the API says
-- nothing (docs/focus-and-push.md's table says which, why, and the specification's line each choice satisfies).
-- Extra columns carry the x_ prefix the specification reserves.
CREATE OR REPLACE VIEW focus AS
WITH li AS (
  SELECT li.*, p.provider_name,
         coalesce(s.service_category, p.default_service_category, 'Other') AS category,
         s.service_subcategory,
         CASE lower(json_extract_string(li.extra, '$.charge_category'))
           WHEN 'usage' THEN 'Usage' WHEN 'purchase' THEN 'Purchase' WHEN 'tax' THEN 'Tax' WHEN 'credit' THEN 'Credit' WHEN 'adjustment' THEN 'Adjustment'
           ELSE CASE WHEN li.net_amount_usd < 0 THEN 'Credit' ELSE 'Usage' END
         END AS charge_category,
         -- The currency the provider priced in (the API's currency_original); the billing currency when it gives none.
         CASE WHEN regexp_full_match(coalesce(li.currency_original, ''), '[A-Za-z]{3}') THEN upper(li.currency_original) ELSE 'USD' END AS pricing_currency
  FROM line_items li
  LEFT JOIN focus_map_providers p ON p.provider_type = li.provider_type
  LEFT JOIN focus_map_services s ON s.service_key = lower(li.provider_service)
)
SELECT
  NULL::VARCHAR AS AvailabilityZone,
  net_amount_usd::DECIMAL(38, 10) AS BilledCost,
  -- The workspace (costsync's source) each row was read from: the account its costs are billed to in the
  -- Cost Data service, named by the user; the API names no provider account.
  source AS BillingAccountId,
  source AS BillingAccountName,
  'Workspace' AS BillingAccountType,
  'USD' AS BillingCurrency,
  (date_trunc('month', usage_date) + INTERVAL 1 MONTH)::TIMESTAMP AT TIME ZONE 'UTC' AS BillingPeriodEnd,
  date_trunc('month', usage_date)::TIMESTAMP AT TIME ZONE 'UTC' AS BillingPeriodStart,
  NULL::VARCHAR AS CapacityReservationId,
  NULL::VARCHAR AS CapacityReservationStatus,
  -- The stated rule: the category the API sent beyond its spec table (charge_category, for rows
  -- ingested through the FOCUS endpoint) when it is one of FOCUS's; else a negative net amount is a
  -- credit, anything else usage.
  charge_category AS ChargeCategory,
  -- The API reports no corrections of earlier periods: no row is a correction.
  NULL::VARCHAR AS ChargeClass,
  -- A self-contained summary of the charge from what the row says: service, category, day, project.
  provider_service || ' ' || lower(charge_category) || ' on ' || strftime(usage_date, '%Y-%m-%d')
    || coalesce(' for project ' || project_id, '') AS ChargeDescription,
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
  -- Each line item is a standalone charge with no unit price: ContractedCost and ListCost MUST match
  -- BilledCost (ContractedCost-C-008-C, ListCost-C-008-C); no negotiated or list price is reported.
  net_amount_usd::DECIMAL(38, 10) AS ContractedCost,
  NULL::DECIMAL(38, 10) AS ContractedUnitPrice,
  -- The net amount is what was billed after discounts, without amortization the API does not report.
  net_amount_usd::DECIMAL(38, 10) AS EffectiveCost,
  NULL::VARCHAR AS InvoiceId,
  coalesce(provider_name, provider_type) AS InvoiceIssuerName,
  net_amount_usd::DECIMAL(38, 10) AS ListCost,
  NULL::DECIMAL(38, 10) AS ListUnitPrice,
  NULL::VARCHAR AS PricingCategory,
  pricing_currency AS PricingCurrency,
  NULL::DECIMAL(38, 10) AS PricingCurrencyContractedUnitPrice,
  -- Denominated in PricingCurrency: known when that is the billing currency; the API gives no amount in another.
  CASE WHEN pricing_currency = 'USD' THEN net_amount_usd::DECIMAL(38, 10) END AS PricingCurrencyEffectiveCost,
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
  category AS ServiceCategory,
  provider_service AS ServiceName,
  coalesce(service_subcategory, 'Other (' || category || ')') AS ServiceSubcategory,
  NULL::VARCHAR AS SkuId,
  NULL::VARCHAR AS SkuMeter,
  NULL::JSON AS SkuPriceDetails,
  NULL::VARCHAR AS SkuPriceId,
  project_id AS SubAccountId,
  -- The API gives a project id and no other name for it: the id is its name.
  project_id AS SubAccountName,
  CASE WHEN project_id IS NOT NULL THEN 'Project' END AS SubAccountType,
  NULL::JSON AS Tags,
  source AS x_source,
  id AS x_line_item_id,
  user_email AS x_user_email,
  provider_type AS x_provider_type,
  currency_original AS x_currency_original,
  extra AS x_extra
FROM li;
COMMENT ON VIEW focus IS 'FOCUS 1.2: every column of the specification, one row per line item (see docs/focus-and-push.md for where each comes from)';
