-- FOCUS 1.3 and 1.4's rules for the columns they add, on their views, as violations (the 1.2 rules run on
-- `focus`, which both views are built on, so they hold there too): ServiceProviderName "MUST NOT be null";
-- ContractApplied, AllocatedMethodDetails, AllocatedTags and CommitmentProgramEligibilityDetails are JSON
-- objects when present. Run once the views' columns are known to be their versions' (verify.ts).
WITH cells AS (
  SELECT '1.3' AS version, x_source, x_line_item_id,
         unnest(['ServiceProviderName', 'ContractApplied', 'AllocatedMethodDetails', 'AllocatedTags']) AS col,
         unnest([ServiceProviderName, ContractApplied::VARCHAR, AllocatedMethodDetails::VARCHAR, AllocatedTags::VARCHAR]) AS v
  FROM focus_1_3
  UNION ALL
  SELECT '1.4', x_source, x_line_item_id,
         unnest(['ServiceProviderName', 'ContractApplied', 'AllocatedMethodDetails', 'AllocatedTags', 'CommitmentProgramEligibilityDetails']),
         unnest([ServiceProviderName, ContractApplied::VARCHAR, AllocatedMethodDetails::VARCHAR, AllocatedTags::VARCHAR,
                 CommitmentProgramEligibilityDetails::VARCHAR])
  FROM focus_1_4
),
broken AS (
  SELECT 'FOCUS ' || version || ': ' || col || CASE WHEN col = 'ServiceProviderName' THEN ' must not be null' ELSE ' must be a JSON object' END AS rule,
         x_source AS source, x_line_item_id AS example
  FROM cells
  WHERE (col = 'ServiceProviderName' AND v IS NULL)
     OR (col <> 'ServiceProviderName' AND v IS NOT NULL AND coalesce(json_type(try_cast(v AS JSON)), '') <> 'OBJECT')
)
SELECT rule, source, count(*)::BIGINT AS rows, min(example) AS example FROM broken GROUP BY rule, source ORDER BY rule, source
