/** Wire types of the Cost Data Public API (the API document, api-spec.md). Fields the spec does not list are kept. */
import type { ANOMALY_COLUMNS, LINE_ITEM_COLUMNS, ROLLUP_COLUMNS, WireRecord } from './fields.js';

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

/** A record of the API's, its fields as declared in `api/fields.ts`. */
export type LineItem = WireRecord<typeof LINE_ITEM_COLUMNS>;

/** A record of the API's, its fields as declared in `api/fields.ts`. */
export type RollupRow = WireRecord<typeof ROLLUP_COLUMNS>;

/** A record of the API's, its fields as declared in `api/fields.ts`. */
export type Anomaly = WireRecord<typeof ANOMALY_COLUMNS>;

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
