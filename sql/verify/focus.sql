-- The FOCUS 1.2 rules that apply to the focus view, as violations: the rule, the source, how many rows
-- (or dates) break it, and one example. Allowed values and the columns that must not be null where the
-- API gives the fact are the specification's, kept here as data. $1 = tolerance in dollars.
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
                 'ProviderName', 'PublisherName', 'ServiceName']) AS col,
         unnest([ChargeCategory, ChargeClass, ChargeFrequency, PricingCategory, ServiceCategory, BilledCost::VARCHAR, EffectiveCost::VARCHAR,
                 BillingCurrency, BillingPeriodStart::VARCHAR, BillingPeriodEnd::VARCHAR, ChargePeriodStart::VARCHAR, ChargePeriodEnd::VARCHAR,
                 InvoiceIssuerName, ProviderName, PublisherName, ServiceName]) AS v
  FROM f
),
-- Must not be null (the specification's mandatory non-null columns the API gives the facts for; nullable ones may be).
required(col) AS (VALUES ('ChargeCategory'), ('ChargeFrequency'), ('ServiceCategory'), ('BilledCost'), ('EffectiveCost'), ('BillingCurrency'),
  ('BillingPeriodStart'), ('BillingPeriodEnd'), ('ChargePeriodStart'), ('ChargePeriodEnd'), ('InvoiceIssuerName'), ('ProviderName'),
  ('PublisherName'), ('ServiceName')),
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
