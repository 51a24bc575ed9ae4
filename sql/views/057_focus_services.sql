-- FOCUS mapping, kept as data: a service name (as the API's provider_service gives it) → FOCUS
-- ServiceCategory (one of the specification's allowed values). Matched without regard to case; a
-- service not listed takes its provider's default (focus_map_providers), else 'Other'.
CREATE OR REPLACE VIEW focus_map_services AS
SELECT lower(service) AS service_key, service, service_category FROM (VALUES
  ('Amazon EC2', 'Compute'), ('AWS Lambda', 'Compute'), ('Amazon ECS', 'Compute'), ('Amazon EKS', 'Compute'),
  ('Amazon S3', 'Storage'), ('Amazon EBS', 'Storage'), ('Amazon EFS', 'Storage'),
  ('Amazon RDS', 'Databases'), ('Amazon DynamoDB', 'Databases'), ('Amazon Aurora', 'Databases'), ('Amazon Redshift', 'Analytics'),
  ('Amazon CloudFront', 'Networking'), ('Amazon VPC', 'Networking'), ('Amazon Route 53', 'Networking'),
  ('Amazon CloudWatch', 'Management and Governance'), ('Amazon Bedrock', 'AI and Machine Learning'), ('Amazon SageMaker', 'AI and Machine Learning'),
  ('Compute Engine', 'Compute'), ('Google Kubernetes Engine', 'Compute'), ('Cloud Run', 'Compute'), ('Cloud Functions', 'Compute'),
  ('Cloud Storage', 'Storage'), ('BigQuery', 'Analytics'), ('Cloud SQL', 'Databases'), ('Vertex AI', 'AI and Machine Learning'),
  ('Cloud CDN', 'Networking'), ('Cloud Logging', 'Management and Governance'),
  ('Virtual Machines', 'Compute'), ('Azure Kubernetes Service', 'Compute'), ('Azure Functions', 'Compute'),
  ('Blob Storage', 'Storage'), ('Azure SQL Database', 'Databases'), ('Azure Cosmos DB', 'Databases'),
  ('Azure OpenAI', 'AI and Machine Learning'), ('Azure Monitor', 'Management and Governance'),
  ('OpenAI Chat Completions', 'AI and Machine Learning'), ('OpenAI Embeddings', 'AI and Machine Learning'),
  ('Anthropic Messages', 'AI and Machine Learning'), ('Claude API', 'AI and Machine Learning'),
  ('Snowflake Warehouse', 'Databases'), ('Snowflake Storage', 'Storage'),
  ('Datadog Infrastructure', 'Management and Governance'), ('Datadog Logs', 'Management and Governance'), ('Datadog APM', 'Management and Governance')
) AS t(service, service_category);
COMMENT ON VIEW focus_map_services IS 'FOCUS mapping: service name to ServiceCategory (case-insensitive); others take their provider''s default, else Other';
