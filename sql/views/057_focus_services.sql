-- FOCUS mapping, kept as data: a service name (as the API's provider_service gives it) → FOCUS
-- ServiceCategory and ServiceSubcategory (an allowed pair of focus_subcategories, chosen for the service's
-- primary purpose, so each ServiceName has one subcategory). Matched without regard to case; a service
-- not listed takes its provider's default category (focus_map_providers), else 'Other', and that
-- category's 'Other (…)' subcategory.
CREATE OR REPLACE VIEW focus_map_services AS
SELECT lower(service) AS service_key, service, service_category, service_subcategory FROM (VALUES
  ('Amazon EC2', 'Compute', 'Virtual Machines'),
  ('AWS Lambda', 'Compute', 'Serverless Compute'),
  ('Amazon ECS', 'Compute', 'Containers'),
  ('Amazon EKS', 'Compute', 'Containers'),
  ('Amazon S3', 'Storage', 'Object Storage'),
  ('Amazon EBS', 'Storage', 'Block Storage'),
  ('Amazon EFS', 'Storage', 'File Storage'),
  ('Amazon RDS', 'Databases', 'Relational Databases'),
  ('Amazon DynamoDB', 'Databases', 'NoSQL Databases'),
  ('Amazon Aurora', 'Databases', 'Relational Databases'),
  ('Amazon Redshift', 'Analytics', 'Analytics Platforms'),
  ('Amazon CloudFront', 'Networking', 'Content Delivery'),
  ('Amazon VPC', 'Networking', 'Network Infrastructure'),
  ('Amazon Route 53', 'Networking', 'Network Routing'),
  ('Amazon CloudWatch', 'Management and Governance', 'Observability'),
  ('Amazon Bedrock', 'AI and Machine Learning', 'Generative AI'),
  ('Amazon SageMaker', 'AI and Machine Learning', 'Machine Learning'),
  ('Compute Engine', 'Compute', 'Virtual Machines'),
  ('Google Kubernetes Engine', 'Compute', 'Containers'),
  ('Cloud Run', 'Compute', 'Serverless Compute'),
  ('Cloud Functions', 'Compute', 'Serverless Compute'),
  ('Cloud Storage', 'Storage', 'Object Storage'),
  ('BigQuery', 'Analytics', 'Analytics Platforms'),
  ('Cloud SQL', 'Databases', 'Relational Databases'),
  ('Vertex AI', 'AI and Machine Learning', 'AI Platforms'),
  ('Cloud CDN', 'Networking', 'Content Delivery'),
  ('Cloud Logging', 'Management and Governance', 'Observability'),
  ('Virtual Machines', 'Compute', 'Virtual Machines'),
  ('Azure Kubernetes Service', 'Compute', 'Containers'),
  ('Azure Functions', 'Compute', 'Serverless Compute'),
  ('Blob Storage', 'Storage', 'Object Storage'),
  ('Azure SQL Database', 'Databases', 'Relational Databases'),
  ('Azure Cosmos DB', 'Databases', 'NoSQL Databases'),
  ('Azure OpenAI', 'AI and Machine Learning', 'Generative AI'),
  ('Azure Monitor', 'Management and Governance', 'Observability'),
  ('OpenAI Chat Completions', 'AI and Machine Learning', 'Generative AI'),
  ('OpenAI Embeddings', 'AI and Machine Learning', 'Generative AI'),
  ('Anthropic Messages', 'AI and Machine Learning', 'Generative AI'),
  ('Claude API', 'AI and Machine Learning', 'Generative AI'),
  ('Snowflake Warehouse', 'Databases', 'Data Warehouses'),
  ('Snowflake Storage', 'Storage', 'Storage Platforms'),
  ('Datadog Infrastructure', 'Management and Governance', 'Observability'),
  ('Datadog Logs', 'Management and Governance', 'Observability'),
  ('Datadog APM', 'Management and Governance', 'Observability')
) AS t(service, service_category, service_subcategory);
COMMENT ON VIEW focus_map_services IS 'FOCUS mapping: service name to ServiceCategory and ServiceSubcategory (case-insensitive); others take their provider''s default category, else Other, and its Other (…) subcategory';
