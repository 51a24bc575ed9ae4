-- Dollars per line item of a source, for the dry run's estimate (rollup dollars to rows). $1 = source.
SELECT sum(net_amount_usd) / nullif(count(*), 0) AS usd_per_row FROM line_items WHERE source = $1
