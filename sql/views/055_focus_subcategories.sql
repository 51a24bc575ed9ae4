-- FOCUS 1.2, kept as data: every allowed ServiceSubcategory with its one parent ServiceCategory (the
-- specification's ServiceSubcategory column, "Allowed values"). The mapping of services
-- (focus_map_services) takes its values from here only, and verify --focus checks the pairs against it.
CREATE OR REPLACE VIEW focus_subcategories AS
SELECT * FROM (VALUES
  ('AI and Machine Learning', 'AI Platforms'), ('AI and Machine Learning', 'Bots'), ('AI and Machine Learning', 'Generative AI'),
  ('AI and Machine Learning', 'Machine Learning'), ('AI and Machine Learning', 'Natural Language Processing'), ('AI and Machine Learning', 'Other (AI and Machine Learning)'),
  ('Analytics', 'Analytics Platforms'), ('Analytics', 'Business Intelligence'), ('Analytics', 'Data Processing'), ('Analytics', 'Search'),
  ('Analytics', 'Streaming Analytics'), ('Analytics', 'Other (Analytics)'),
  ('Business Applications', 'Productivity and Collaboration'), ('Business Applications', 'Other (Business Applications)'),
  ('Compute', 'Containers'), ('Compute', 'End User Computing'), ('Compute', 'Quantum Compute'), ('Compute', 'Serverless Compute'),
  ('Compute', 'Virtual Machines'), ('Compute', 'Other (Compute)'),
  ('Databases', 'Caching'), ('Databases', 'Data Warehouses'), ('Databases', 'Ledger Databases'), ('Databases', 'NoSQL Databases'),
  ('Databases', 'Relational Databases'), ('Databases', 'Time Series Databases'), ('Databases', 'Other (Databases)'),
  ('Developer Tools', 'Developer Platforms'), ('Developer Tools', 'Continuous Integration and Deployment'), ('Developer Tools', 'Development Environments'),
  ('Developer Tools', 'Source Code Management'), ('Developer Tools', 'Quality Assurance'), ('Developer Tools', 'Other (Developer Tools)'),
  ('Identity', 'Identity and Access Management'), ('Identity', 'Other (Identity)'),
  ('Integration', 'API Management'), ('Integration', 'Messaging'), ('Integration', 'Workflow Orchestration'), ('Integration', 'Other (Integration)'),
  ('Internet of Things', 'IoT Analytics'), ('Internet of Things', 'IoT Platforms'), ('Internet of Things', 'Other (Internet of Things)'),
  ('Management and Governance', 'Architecture'), ('Management and Governance', 'Compliance'), ('Management and Governance', 'Cost Management'),
  ('Management and Governance', 'Data Governance'), ('Management and Governance', 'Disaster Recovery'), ('Management and Governance', 'Endpoint Management'),
  ('Management and Governance', 'Observability'), ('Management and Governance', 'Support'), ('Management and Governance', 'Other (Management and Governance)'),
  ('Media', 'Content Creation'), ('Media', 'Gaming'), ('Media', 'Media Streaming'), ('Media', 'Mixed Reality'), ('Media', 'Other (Media)'),
  ('Migration', 'Data Migration'), ('Migration', 'Resource Migration'), ('Migration', 'Other (Migration)'),
  ('Mobile', 'Other (Mobile)'),
  ('Multicloud', 'Multicloud Integration'), ('Multicloud', 'Other (Multicloud)'),
  ('Networking', 'Application Networking'), ('Networking', 'Content Delivery'), ('Networking', 'Network Connectivity'), ('Networking', 'Network Infrastructure'),
  ('Networking', 'Network Routing'), ('Networking', 'Network Security'), ('Networking', 'Other (Networking)'),
  ('Security', 'Secret Management'), ('Security', 'Security Posture Management'), ('Security', 'Threat Detection and Response'), ('Security', 'Other (Security)'),
  ('Storage', 'Backup Storage'), ('Storage', 'Block Storage'), ('Storage', 'File Storage'), ('Storage', 'Object Storage'), ('Storage', 'Storage Platforms'),
  ('Storage', 'Other (Storage)'),
  ('Web', 'Application Platforms'), ('Web', 'Other (Web)'),
  ('Other', 'Other (Other)')
) AS t(service_category, service_subcategory);
COMMENT ON VIEW focus_subcategories IS 'FOCUS 1.2: the allowed ServiceSubcategory values, each with its one parent ServiceCategory';
