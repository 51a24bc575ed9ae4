-- Money as exact decimals (DECIMAL(38,10), api/fields.ts MONEY_TYPE): a sum is exact to the cent and
-- prints as money. Each stored double becomes the decimal of its shortest text (12.34, not the binary
-- 12.339999…), which is the number the API's JSON carried. deviation_percent is a ratio and stays DOUBLE.
ALTER TABLE line_items ALTER COLUMN net_amount_usd SET DATA TYPE DECIMAL(38,10) USING CAST(CAST(net_amount_usd AS VARCHAR) AS DECIMAL(38,10));
ALTER TABLE rollups_daily ALTER COLUMN cost_usd SET DATA TYPE DECIMAL(38,10) USING CAST(CAST(cost_usd AS VARCHAR) AS DECIMAL(38,10));
ALTER TABLE anomalies ALTER COLUMN actual_cost SET DATA TYPE DECIMAL(38,10) USING CAST(CAST(actual_cost AS VARCHAR) AS DECIMAL(38,10));
ALTER TABLE anomalies ALTER COLUMN expected_cost SET DATA TYPE DECIMAL(38,10) USING CAST(CAST(expected_cost AS VARCHAR) AS DECIMAL(38,10));
