/**
 * The emulator's fixed world: providers, their services, and each service's category.
 *
 * `category` is derived from the service: every service belongs to exactly one category in this
 * catalog (compute, storage, database, networking, analytics, ai, observability). Rows ingested
 * through the FOCUS endpoint take the category of a catalog service with the same name, and
 * `other` when the name is not in the catalog.
 */

export interface ServiceDef {
  name: string;
  category: string;
  /** Typical cost of one line item in cents; amounts spread around it. */
  baseCents: number;
  /** Models billed under this service (AI providers only). */
  models?: readonly string[];
}

export interface ProviderDef {
  slug: string;
  weight: number;
  ai: boolean;
  currencies: readonly string[];
  services: readonly ServiceDef[];
}

export const PROVIDERS: readonly ProviderDef[] = [
  {
    slug: 'aws',
    weight: 0.3,
    ai: false,
    currencies: ['USD'],
    services: [
      { name: 'Amazon EC2', category: 'compute', baseCents: 420 },
      { name: 'AWS Lambda', category: 'compute', baseCents: 35 },
      { name: 'Amazon S3', category: 'storage', baseCents: 120 },
      { name: 'Amazon RDS', category: 'database', baseCents: 510 },
      { name: 'Amazon CloudFront', category: 'networking', baseCents: 90 },
    ],
  },
  {
    slug: 'gcp',
    weight: 0.18,
    ai: false,
    currencies: ['USD', 'EUR'],
    services: [
      { name: 'Compute Engine', category: 'compute', baseCents: 380 },
      { name: 'Cloud Storage', category: 'storage', baseCents: 80 },
      { name: 'BigQuery', category: 'analytics', baseCents: 640 },
    ],
  },
  {
    slug: 'azure',
    weight: 0.14,
    ai: false,
    currencies: ['USD', 'EUR', 'GBP'],
    services: [
      { name: 'Virtual Machines', category: 'compute', baseCents: 400 },
      { name: 'Blob Storage', category: 'storage', baseCents: 70 },
      { name: 'Azure SQL Database', category: 'database', baseCents: 450 },
    ],
  },
  {
    slug: 'openai',
    weight: 0.14,
    ai: true,
    currencies: ['USD'],
    services: [
      { name: 'OpenAI Chat Completions', category: 'ai', baseCents: 260, models: ['gpt-4o', 'gpt-4o-mini', 'o3'] },
      { name: 'OpenAI Embeddings', category: 'ai', baseCents: 25, models: ['text-embedding-3-large'] },
    ],
  },
  {
    slug: 'anthropic',
    weight: 0.12,
    ai: true,
    currencies: ['USD'],
    services: [
      { name: 'Anthropic Messages', category: 'ai', baseCents: 310, models: ['claude-sonnet-4', 'claude-haiku-4', 'claude-opus-4'] },
    ],
  },
  {
    slug: 'snowflake',
    weight: 0.07,
    ai: false,
    currencies: ['USD'],
    services: [
      { name: 'Snowflake Warehouse', category: 'analytics', baseCents: 720 },
      { name: 'Snowflake Storage', category: 'storage', baseCents: 60 },
    ],
  },
  {
    slug: 'datadog',
    weight: 0.05,
    ai: false,
    currencies: ['USD'],
    services: [
      { name: 'Datadog Infrastructure', category: 'observability', baseCents: 150 },
      { name: 'Datadog Logs', category: 'observability', baseCents: 110 },
    ],
  },
];

export const PROJECTS: readonly string[] = [
  'proj-checkout',
  'proj-search',
  'proj-payments',
  'proj-ml-platform',
  'proj-data-lake',
  'proj-mobile-api',
  'proj-web',
  'proj-internal-tools',
  'proj-support-bot',
  'proj-analytics',
  'proj-identity',
  'proj-edge',
];

export const USER_COUNT = 40;
export function userEmail(n: number): string {
  return `user${String(n + 1).padStart(2, '0')}@example.com`;
}

export const ALERT_TYPES: readonly string[] = ['spend_spike', 'spend_drop', 'new_service', 'budget_threshold', 'forecast_overrun'];

/** A flat list of (provider, service) with cumulative weights, for fast picking per row. */
export interface FlatService {
  provider: ProviderDef;
  service: ServiceDef;
}

export const FLAT_SERVICES: readonly FlatService[] = PROVIDERS.flatMap((provider) =>
  provider.services.map((service) => ({ provider, service })),
);

export const FLAT_CUMULATIVE: readonly number[] = (() => {
  let acc = 0;
  const out: number[] = [];
  for (const { provider } of FLAT_SERVICES) {
    acc += provider.weight / provider.services.length;
    out.push(acc);
  }
  return out.map((v) => v / acc);
})();

const CATEGORY_BY_SERVICE = new Map(FLAT_SERVICES.map(({ service }) => [service.name, service.category]));

/** The category of a service name: its catalog category, or `other`. */
export function categoryOf(serviceName: string): string {
  return CATEGORY_BY_SERVICE.get(serviceName) ?? 'other';
}
