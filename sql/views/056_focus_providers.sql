-- FOCUS mapping, kept as data: the API's provider slug → the provider's name for FOCUS's ProviderName,
-- PublisherName and InvoiceIssuerName (the API names no reseller or marketplace, so the provider is
-- all three). A slug not listed keeps its own name.
CREATE OR REPLACE VIEW focus_map_providers AS
SELECT * FROM (VALUES
  ('aws', 'Amazon Web Services', 'Compute'),
  ('gcp', 'Google Cloud', 'Compute'),
  ('azure', 'Microsoft Azure', 'Compute'),
  ('oci', 'Oracle Cloud Infrastructure', 'Compute'),
  ('openai', 'OpenAI', 'AI and Machine Learning'),
  ('anthropic', 'Anthropic', 'AI and Machine Learning'),
  ('mistral', 'Mistral AI', 'AI and Machine Learning'),
  ('cohere', 'Cohere', 'AI and Machine Learning'),
  ('snowflake', 'Snowflake', 'Databases'),
  ('databricks', 'Databricks', 'Analytics'),
  ('datadog', 'Datadog', 'Management and Governance'),
  ('mongodb', 'MongoDB Atlas', 'Databases'),
  ('cloudflare', 'Cloudflare', 'Networking'),
  ('vercel', 'Vercel', 'Web'),
  ('github', 'GitHub', 'Developer Tools')
) AS t(provider_type, provider_name, default_service_category);
COMMENT ON VIEW focus_map_providers IS 'FOCUS mapping: provider slug to ProviderName, and the ServiceCategory of its services not listed in focus_map_services';
