/** Wire types of the Cost Data Public API (the API document, api-spec.md). Fields the spec does not list are kept. */

export const API_PREFIX = '/api/v1/public';

/** What a sync reads from the API, one stream per resource: line items, daily rollups, anomaly alerts. */
export const STREAM_NAMES = ['line_items', 'rollups', 'anomalies'] as const;
export type StreamName = (typeof STREAM_NAMES)[number];

export const SEVERITIES = ['low', 'medium', 'high', 'critical'] as const;
export type Severity = (typeof SEVERITIES)[number];

export const ANOMALY_STATUSES = ['new', 'acknowledged', 'resolved', 'false_positive', 'dismissed'] as const;
export type AnomalyStatus = (typeof ANOMALY_STATUSES)[number];

export const GROUP_BYS = ['provider', 'service', 'category'] as const;
export type GroupBy = (typeof GROUP_BYS)[number];

export const SCOPES = ['line_items:read', 'rollups:read', 'anomalies:read', 'usage:write'] as const;
export type Scope = (typeof SCOPES)[number];

export const PLANS = ['trial', 'team', 'business', 'enterprise'] as const;
export type Plan = (typeof PLANS)[number];
/** Plans that include API access ("Business plan and above"). */
export const API_PLANS: readonly Plan[] = ['business', 'enterprise'];

export const INGEST_VERSIONS = ['1', '1.1', '1.2'] as const;
export type IngestVersion = (typeof INGEST_VERSIONS)[number];

export const CHARGE_CATEGORIES = ['Usage', 'Purchase', 'Tax', 'Credit', 'Adjustment'] as const;
export type ChargeCategory = (typeof CHARGE_CATEGORIES)[number];
/** Accepted aliases, matched without regard to letter case. */
export const CHARGE_CATEGORY_ALIASES: Readonly<Record<string, ChargeCategory>> = {
  discount: 'Credit',
  refund: 'Credit',
  fee: 'Usage',
};

export interface Envelope<T> {
  data: T | null;
  error: { code: string; message: string } | null;
  meta: Record<string, unknown>;
}

export interface LineItem {
  id: string;
  usage_date: string;
  provider_type: string;
  provider_service: string;
  net_amount_usd: number;
  currency_original: string;
  project_id: string;
  user_email: string;
  [extra: string]: unknown;
}

export interface RollupRow {
  date: string;
  cost_usd: number;
  provider_type: string | null;
  service: string | null;
  category: string | null;
  [extra: string]: unknown;
}

export interface Anomaly {
  id: string;
  provider_type: string;
  service: string;
  detected_date: string;
  actual_cost: number;
  expected_cost: number;
  deviation_percent: number;
  severity: string;
  alert_type: string;
  status: string;
  [extra: string]: unknown;
}

export interface LineItemPage {
  data: LineItem[];
  nextCursor: string | null;
  hasMore: boolean;
  meta: Record<string, unknown>;
}

export interface IngestResult {
  accepted: boolean;
  batch_id: string;
  row_count: number;
  cost_line_item_count: number;
  skipped: number;
  errors: unknown[];
  [extra: string]: unknown;
}

export interface IngestRequest {
  format?: string;
  version?: IngestVersion;
  rows: Record<string, unknown>[];
}

/** The scope each endpoint needs. */
export const ENDPOINT_SCOPES = {
  lineItems: 'line_items:read',
  rollups: 'rollups:read',
  anomalies: 'anomalies:read',
  ingest: 'usage:write',
} as const satisfies Record<string, Scope>;
export type Endpoint = keyof typeof ENDPOINT_SCOPES;

/** Which endpoint a request path is for; null for none of them. Pure. */
export function endpointOf(path: string): Endpoint | null {
  if (path.includes('/line-items')) return 'lineItems';
  if (path.includes('/rollups')) return 'rollups';
  if (path.includes('/anomalies')) return 'anomalies';
  if (path.includes('/ingest/')) return 'ingest';
  return null;
}
