-- FOCUS 1.3 and 1.4's rules for the columns they add and change, on their views, as violations (the 1.2
-- rules run on `focus`, which both views are built on, so they hold there too), from the column pages:
-- ServiceProviderName "MUST NOT be null"; the JSON columns JSON objects; AllocatedResourceId,
-- AllocatedResourceName, AllocatedMethodDetails and AllocatedTags "MUST be null when a charge is not related
-- to a data generator-calculated split cost allocation" (AllocatedMethodId null); AllocatedMethodDetails'
-- AllocatedRatio values sum to 1; AllocatedTags "MUST NOT include resource tags already present in Tags";
-- in 1.4, InvoiceDetailId null when the charge has no invoice (InvoiceId null) and unique within its
-- InvoiceId, and CommitmentProgramEligibilityDetails' CommitmentPrograms at least one object, each with a
-- ProgramType, one of them CommitmentDiscountType when that is set. Run once the views' columns are known
-- to be their versions' (verify.ts).
WITH v13 AS (SELECT '1.3' AS version, * EXCLUDE (ProviderName, PublisherName),
                    NULL::JSON AS CommitmentProgramEligibilityDetails, NULL::VARCHAR AS InvoiceDetailId FROM focus_1_3),
v14 AS (SELECT '1.4' AS version, * FROM focus_1_4),
rows AS (SELECT * FROM v13 UNION ALL BY NAME SELECT * FROM v14),
broken AS (
  SELECT version, 'ServiceProviderName must not be null' AS rule, x_source, x_line_item_id FROM rows WHERE ServiceProviderName IS NULL
  UNION ALL
  SELECT version, c || ' must be a JSON object', x_source, x_line_item_id
  FROM (SELECT version, x_source, x_line_item_id,
               unnest(['ContractApplied', 'AllocatedMethodDetails', 'AllocatedTags', 'CommitmentProgramEligibilityDetails']) AS c,
               unnest([ContractApplied::VARCHAR, AllocatedMethodDetails::VARCHAR, AllocatedTags::VARCHAR,
                       CommitmentProgramEligibilityDetails::VARCHAR]) AS v
        FROM rows)
  WHERE v IS NOT NULL AND coalesce(json_type(try_cast(v AS JSON)), '') <> 'OBJECT'
  UNION ALL
  SELECT version, c || ' must be null when AllocatedMethodId is (no split cost allocation)', x_source, x_line_item_id
  FROM (SELECT version, x_source, x_line_item_id, AllocatedMethodId,
               unnest(['AllocatedResourceId', 'AllocatedResourceName', 'AllocatedMethodDetails', 'AllocatedTags']) AS c,
               unnest([AllocatedResourceId, AllocatedResourceName, AllocatedMethodDetails::VARCHAR, AllocatedTags::VARCHAR]) AS v
        FROM rows)
  WHERE AllocatedMethodId IS NULL AND v IS NOT NULL
  UNION ALL
  SELECT version, 'AllocatedMethodDetails'' AllocatedRatio values must sum to 1', x_source, x_line_item_id
  FROM rows
  WHERE json_type(try_cast(AllocatedMethodDetails AS JSON)) = 'OBJECT'
    AND abs(coalesce(list_sum(list_transform(
          coalesce(try_cast(json_extract(AllocatedMethodDetails, '$.Elements') AS JSON[]), []),
          e -> try_cast(json_extract_string(e, '$.AllocatedRatio') AS DOUBLE))), 0) - 1) > 1e-9
  UNION ALL
  SELECT version, 'AllocatedTags must not repeat a tag of Tags', x_source, x_line_item_id
  FROM rows
  WHERE json_type(try_cast(AllocatedTags AS JSON)) = 'OBJECT' AND json_type(try_cast(Tags AS JSON)) = 'OBJECT'
    AND len(list_intersect(json_keys(AllocatedTags), json_keys(Tags))) > 0
  UNION ALL
  SELECT version, 'InvoiceDetailId must be null when InvoiceId is (no invoice)', x_source, x_line_item_id
  FROM rows WHERE InvoiceDetailId IS NOT NULL AND InvoiceId IS NULL
  UNION ALL
  SELECT version, 'InvoiceDetailId must be unique within its InvoiceId', x_source, x_line_item_id
  FROM (SELECT *, count(*) OVER (PARTITION BY version, InvoiceId, InvoiceDetailId) AS n FROM rows WHERE InvoiceDetailId IS NOT NULL)
  WHERE n > 1
  UNION ALL
  SELECT version, 'CommitmentProgramEligibilityDetails must list CommitmentPrograms, each with a ProgramType', x_source, x_line_item_id
  FROM rows
  WHERE json_type(try_cast(CommitmentProgramEligibilityDetails AS JSON)) = 'OBJECT'
    AND (coalesce(json_array_length(json_extract(CommitmentProgramEligibilityDetails, '$.CommitmentPrograms')), 0) = 0
         OR coalesce(json_type(json_extract(CommitmentProgramEligibilityDetails, '$.CommitmentPrograms')), '') <> 'ARRAY'
         OR list_bool_or(list_transform(
              json_extract(CommitmentProgramEligibilityDetails, '$.CommitmentPrograms[*]'),
              p -> coalesce(json_type(p, '$.ProgramType'), '') <> 'VARCHAR')))
  UNION ALL
  SELECT version, 'CommitmentProgramEligibilityDetails must name CommitmentDiscountType among its ProgramType values', x_source, x_line_item_id
  FROM rows
  WHERE CommitmentDiscountType IS NOT NULL AND json_type(try_cast(CommitmentProgramEligibilityDetails AS JSON)) = 'OBJECT'
    AND NOT list_contains(json_extract_string(CommitmentProgramEligibilityDetails, '$.CommitmentPrograms[*].ProgramType'), CommitmentDiscountType)
)
SELECT 'FOCUS ' || version || ': ' || rule AS rule, x_source AS source, count(*)::BIGINT AS rows, min(x_line_item_id) AS example
FROM broken GROUP BY ALL ORDER BY rule, source
