-- FOCUS 1.3 and 1.4 beside 1.2, each a view of `focus` (FOCUS 1.2, where every value is derived) with the
-- columns its version adds, so a query written for a version runs unchanged against its view. The 1.2
-- columns keep their order, each version's additions follow, then the x_ extras. docs/focus-and-push.md
-- says per version and column what costsync puts there and why.
CREATE OR REPLACE VIEW focus_1_2 AS SELECT * FROM focus;
COMMENT ON VIEW focus_1_2 IS 'FOCUS 1.2: the focus view under its version''s name';

CREATE OR REPLACE VIEW focus_1_3 AS
SELECT
  COLUMNS('^[A-Z]'),
  -- No allocation the data generator calculated: the API reports each charge whole.
  NULL::JSON AS AllocatedMethodDetails,
  NULL::VARCHAR AS AllocatedMethodId,
  NULL::VARCHAR AS AllocatedResourceId,
  NULL::VARCHAR AS AllocatedResourceName,
  NULL::JSON AS AllocatedTags,
  -- No contract commitment is known to apply to any charge (it MUST NOT be null only when one does).
  NULL::JSON AS ContractApplied,
  -- The provider the API names hosts its own services and exposes no other host: the host is the service provider.
  ProviderName AS HostProviderName,
  -- Who sells the service: the provider the API names (1.2's ProviderName, which 1.3 deprecates and keeps).
  ProviderName AS ServiceProviderName,
  COLUMNS('^x_')
FROM focus;
COMMENT ON VIEW focus_1_3 IS 'FOCUS 1.3: the FOCUS 1.2 columns (ProviderName and PublisherName deprecated), then ServiceProviderName, HostProviderName, the split cost allocation columns and ContractApplied';

CREATE OR REPLACE VIEW focus_1_4 AS
SELECT
  COLUMNS(c -> regexp_matches(c, '^[A-Z]') AND c NOT IN ('ProviderName', 'PublisherName')),
  -- No commitment program is known to the API.
  NULL::JSON AS CommitmentProgramEligibilityDetails,
  -- The API names no invoice, so no invoice line either.
  NULL::VARCHAR AS InvoiceDetailId,
  COLUMNS('^x_')
FROM focus_1_3;
COMMENT ON VIEW focus_1_4 IS 'FOCUS 1.4: FOCUS 1.3 without ProviderName and PublisherName (removed), with CommitmentProgramEligibilityDetails and InvoiceDetailId';
