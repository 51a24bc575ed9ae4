-- The FOCUS 1.2 rules that apply to the focus view, as violations: the rule, the source, how many rows
-- (or dates) break it, and one example. Allowed values and the columns that must not be null where the
-- API gives the fact are the specification's, kept here as data (the subcategories in
-- focus_subcategories). The same rules the FinOps Foundation's focus_validator checks on this data, so a
-- user without Python gets the answer. $1 = tolerance in dollars.
WITH f AS (SELECT * FROM focus),
allowed(col, value) AS (VALUES
  ('ChargeCategory', 'Usage'), ('ChargeCategory', 'Purchase'), ('ChargeCategory', 'Tax'), ('ChargeCategory', 'Credit'), ('ChargeCategory', 'Adjustment'),
  ('ChargeClass', 'Correction'),
  ('ChargeFrequency', 'One-Time'), ('ChargeFrequency', 'Recurring'), ('ChargeFrequency', 'Usage-Based'),
  ('PricingCategory', 'Standard'), ('PricingCategory', 'Dynamic'), ('PricingCategory', 'Committed'), ('PricingCategory', 'Other'),
  ('ServiceCategory', 'AI and Machine Learning'), ('ServiceCategory', 'Analytics'), ('ServiceCategory', 'Business Applications'),
  ('ServiceCategory', 'Compute'), ('ServiceCategory', 'Databases'), ('ServiceCategory', 'Developer Tools'), ('ServiceCategory', 'Multicloud'),
  ('ServiceCategory', 'Identity'), ('ServiceCategory', 'Integration'), ('ServiceCategory', 'Internet of Things'),
  ('ServiceCategory', 'Management and Governance'), ('ServiceCategory', 'Media'), ('ServiceCategory', 'Migration'), ('ServiceCategory', 'Mobile'),
  ('ServiceCategory', 'Networking'), ('ServiceCategory', 'Security'), ('ServiceCategory', 'Storage'), ('ServiceCategory', 'Web'), ('ServiceCategory', 'Other')
),
-- One row per row and checked column (two lists unnested side by side).
cells AS (
  SELECT x_source, x_line_item_id,
         unnest(['ChargeCategory', 'ChargeClass', 'ChargeFrequency', 'PricingCategory', 'ServiceCategory', 'BilledCost', 'EffectiveCost',
                 'BillingCurrency', 'BillingPeriodStart', 'BillingPeriodEnd', 'ChargePeriodStart', 'ChargePeriodEnd', 'InvoiceIssuerName',
                 'ProviderName', 'PublisherName', 'ServiceName', 'ServiceSubcategory', 'BillingAccountId', 'BillingAccountName',
                 'ContractedCost', 'ListCost', 'ChargeDescription', 'PricingCurrency']) AS col,
         unnest([ChargeCategory, ChargeClass, ChargeFrequency, PricingCategory, ServiceCategory, BilledCost::VARCHAR, EffectiveCost::VARCHAR,
                 BillingCurrency, BillingPeriodStart::VARCHAR, BillingPeriodEnd::VARCHAR, ChargePeriodStart::VARCHAR, ChargePeriodEnd::VARCHAR,
                 InvoiceIssuerName, ProviderName, PublisherName, ServiceName, ServiceSubcategory, BillingAccountId, BillingAccountName,
                 ContractedCost::VARCHAR, ListCost::VARCHAR, ChargeDescription, PricingCurrency]) AS v
  FROM f
),
-- Must not be null (the specification's mandatory non-null columns the API gives the facts for; nullable ones may be).
-- BillingAccountName: costsync names every account (ACCOUNT_NAMING_SUPPORTED); ChargeDescription is a SHOULD;
-- PricingCurrency, once present, MUST NOT be null (PricingCurrency-C-004-M).
required(col) AS (VALUES ('ChargeCategory'), ('ChargeFrequency'), ('ServiceCategory'), ('BilledCost'), ('EffectiveCost'), ('BillingCurrency'),
  ('BillingPeriodStart'), ('BillingPeriodEnd'), ('ChargePeriodStart'), ('ChargePeriodEnd'), ('InvoiceIssuerName'), ('ProviderName'),
  ('PublisherName'), ('ServiceName'), ('ServiceSubcategory'), ('BillingAccountId'), ('BillingAccountName'), ('ContractedCost'), ('ListCost'),
  ('ChargeDescription'), ('PricingCurrency')),
violations AS (
  SELECT col || ' must not be null' AS rule, x_source AS source, x_line_item_id AS example
  FROM cells WHERE v IS NULL AND col IN (SELECT col FROM required)
  UNION ALL
  SELECT col || ' must be one of the allowed values', x_source, x_line_item_id || ' (' || v || ')'
  FROM cells WHERE v IS NOT NULL AND col IN (SELECT col FROM allowed) AND (col, v) NOT IN (SELECT (col, value) FROM allowed)
  UNION ALL
  SELECT 'ChargePeriodEnd must be after ChargePeriodStart', x_source, x_line_item_id FROM f WHERE NOT (ChargePeriodEnd > ChargePeriodStart)
  UNION ALL
  SELECT 'BillingPeriodEnd must be after BillingPeriodStart', x_source, x_line_item_id FROM f WHERE NOT (BillingPeriodEnd > BillingPeriodStart)
  UNION ALL
  SELECT 'the charge period must lie within the billing period', x_source, x_line_item_id FROM f
  WHERE ChargePeriodStart < BillingPeriodStart OR ChargePeriodEnd > BillingPeriodEnd
  UNION ALL
  SELECT 'ChargeClass must be null unless the row is a correction', x_source, x_line_item_id FROM f WHERE ChargeClass IS NOT NULL AND ChargeClass <> 'Correction'
  UNION ALL
  SELECT 'ServiceSubcategory must be one of the allowed values, under its one parent ServiceCategory', x_source, x_line_item_id || ' (' || ServiceCategory || ' / ' || ServiceSubcategory || ')'
  FROM f WHERE ServiceSubcategory IS NOT NULL AND (ServiceCategory, ServiceSubcategory) NOT IN (SELECT (service_category, service_subcategory) FROM focus_subcategories)
  UNION ALL
  SELECT 'ServiceName should have one ServiceSubcategory', any_value(x_source), ServiceName || ' (' || string_agg(DISTINCT ServiceSubcategory, ', ') || ')'
  FROM f GROUP BY ServiceName HAVING count(DISTINCT ServiceSubcategory) > 1
  UNION ALL
  SELECT 'BillingAccountType must not be null when BillingAccountId is not null', x_source, x_line_item_id FROM f WHERE BillingAccountId IS NOT NULL AND BillingAccountType IS NULL
  UNION ALL
  SELECT 'BillingAccountType must be null when BillingAccountId is null', x_source, x_line_item_id FROM f WHERE BillingAccountId IS NULL AND BillingAccountType IS NOT NULL
  UNION ALL
  SELECT 'SubAccountName must not be null when SubAccountId is not null', x_source, x_line_item_id FROM f WHERE SubAccountId IS NOT NULL AND SubAccountName IS NULL
  UNION ALL
  SELECT 'SubAccountType must not be null when SubAccountId is not null', x_source, x_line_item_id FROM f WHERE SubAccountId IS NOT NULL AND SubAccountType IS NULL
  UNION ALL
  SELECT 'ContractedCost must match BilledCost for a standalone charge without a unit price', x_source, x_line_item_id || ' (' || ContractedCost || ' vs ' || BilledCost || ')'
  FROM f WHERE ContractedUnitPrice IS NULL AND ContractedCost IS DISTINCT FROM BilledCost AND ContractedCost IS NOT NULL
  UNION ALL
  SELECT 'ListCost must match BilledCost for a standalone charge without a unit price', x_source, x_line_item_id || ' (' || ListCost || ' vs ' || BilledCost || ')'
  FROM f WHERE ListUnitPrice IS NULL AND ListCost IS DISTINCT FROM BilledCost AND ListCost IS NOT NULL
  UNION ALL
  SELECT 'BillingCurrency and PricingCurrency must be three-letter upper-case currency codes', x_source, x_line_item_id || ' (' || coalesce(BillingCurrency, '') || '/' || coalesce(PricingCurrency, '') || ')'
  FROM f WHERE NOT regexp_full_match(BillingCurrency, '[A-Z]{3}') OR (PricingCurrency IS NOT NULL AND NOT regexp_full_match(PricingCurrency, '[A-Z]{3}'))
  UNION ALL
  SELECT 'PricingCurrencyEffectiveCost must equal EffectiveCost when PricingCurrency is the BillingCurrency', x_source, x_line_item_id
  FROM f WHERE PricingCurrency = BillingCurrency AND PricingCurrencyEffectiveCost IS DISTINCT FROM EffectiveCost
),
totals AS (
  SELECT coalesce(a.source, b.source) AS source, coalesce(a.date, b.date) AS date, a.usd AS focus_usd, b.usd AS line_items_usd, a.n AS focus_rows, b.n AS line_item_rows
  FROM (SELECT x_source AS source, CAST(ChargePeriodStart AS DATE) AS date, sum(BilledCost)::DOUBLE AS usd, count(*) AS n FROM f GROUP BY ALL) a
  FULL OUTER JOIN (SELECT source, usage_date AS date, sum(net_amount_usd) AS usd, count(*) AS n FROM line_items GROUP BY ALL) b
    ON a.source = b.source AND a.date = b.date
)
SELECT rule, source, count(*) AS rows, min(example) AS example FROM violations GROUP BY ALL
UNION ALL
SELECT 'BilledCost and row counts must equal the line items'' per source and date', source, count(*), min(date::VARCHAR || ': $' || coalesce(round(focus_usd, 2), 0) || ' in ' || coalesce(focus_rows, 0) || ' rows vs $' || coalesce(round(line_items_usd, 2), 0) || ' in ' || coalesce(line_item_rows, 0))
FROM totals
WHERE coalesce(focus_rows, 0) <> coalesce(line_item_rows, 0) OR abs(coalesce(focus_usd, 0) - coalesce(line_items_usd, 0)) > $1
GROUP BY ALL
ORDER BY rule, source
