/**
 * The Iceberg REST catalog protocol's messages, as costsync sends and reads them (the names and shapes
 * of `open-api/rest-catalog-open-api.yaml` in apache/iceberg), and the seams between its parts: how a
 * request is authorised (`CatalogAuth`) and what the client answers a commit with (`CommitOutcome`).
 */
import type { PartitionSpec } from './avro.js';
import type { Snapshot, TableMetadata } from './metadata.js';
import type { IcebergSchema } from './schema.js';

/** `GET /v1/config`: the server's properties, and the endpoints it offers. */
export interface CatalogConfigResponse {
  defaults: Record<string, string>;
  overrides: Record<string, string>;
  /** `"GET /v1/{prefix}/namespaces"`, …; absent: the spec's default set. */
  endpoints?: string[];
  /** ISO 8601 duration (`PT30M`): the server honours `Idempotency-Key` on mutations for this long. */
  'idempotency-key-lifetime'?: string;
}

/** A table's metadata as a catalog holds it, with where its files may be read and written. */
export interface LoadTableResult {
  'metadata-location'?: string;
  metadata: TableMetadata;
  /** Table-scoped settings, vended credentials among them (`s3.access-key-id`, `s3.session-token`, …). */
  config?: Record<string, string>;
  'storage-credentials'?: { prefix: string; config: Record<string, string> }[];
}

export interface CreateTableRequest {
  name: string;
  /** Absent: the catalog assigns one. */
  location?: string;
  schema: IcebergSchema;
  'partition-spec'?: PartitionSpec;
  'write-order'?: { 'order-id': number; fields: unknown[] };
  'stage-create'?: boolean;
  properties?: Record<string, string>;
}

/** What a commit asserts of the table's current metadata; one failing is a 409. */
export type TableRequirement =
  | { type: 'assert-create' }
  | { type: 'assert-table-uuid'; uuid: string }
  | { type: 'assert-ref-snapshot-id'; ref: string; 'snapshot-id': number | null }
  | { type: 'assert-last-assigned-field-id'; 'last-assigned-field-id': number }
  | { type: 'assert-current-schema-id'; 'current-schema-id': number }
  | { type: 'assert-last-assigned-partition-id'; 'last-assigned-partition-id': number }
  | { type: 'assert-default-spec-id'; 'default-spec-id': number };

/** What a commit changes, applied in order. */
export type TableUpdate =
  | { action: 'add-snapshot'; snapshot: Snapshot }
  | { action: 'set-snapshot-ref'; 'ref-name': string; type: 'branch' | 'tag'; 'snapshot-id': number }
  | { action: 'remove-snapshots'; 'snapshot-ids': number[] }
  | { action: 'add-schema'; schema: IcebergSchema; 'last-column-id'?: number }
  /** -1: the schema added last in this commit. */
  | { action: 'set-current-schema'; 'schema-id': number }
  | { action: 'set-properties'; updates: Record<string, string> }
  | { action: 'remove-properties'; removals: string[] };

export interface TableChange {
  requirements: TableRequirement[];
  updates: TableUpdate[];
}

export interface TableIdentifier {
  namespace: string[];
  name: string;
}

/** `POST /v1/{prefix}/transactions/commit`'s body: several tables, all or none. */
export interface CommitTransactionRequest {
  'table-changes': (TableChange & { identifier: TableIdentifier })[];
}

/** The error body every non-2xx answer carries. */
export interface ErrorModel {
  error: { message: string; type: string; code: number; stack?: string[] };
}

/**
 * A commit's outcome. `unknown`: sent, and the answer (500, 502, 504, a timeout, a dropped connection)
 * does not say whether it was applied: the caller reloads and looks for it before anything else.
 */
export type CommitOutcome =
  | { kind: 'committed'; metadata: TableMetadata | null; metadataLocation: string | null }
  | { kind: 'conflict'; message: string }
  | { kind: 'unknown'; message: string };

/** What authorises a request to the catalog: a bearer token, OAuth2 client credentials, or AWS SigV4. */
export interface CatalogAuth {
  /** What a person may read about it (never a secret): `OAuth2 client credentials (client id X)`. */
  readonly description: string;
  /**
   * The headers to add to a request about to be sent: a token (fetched or refreshed first when due)
   * or a SigV4 signature of exactly this method, URL, headers and body.
   */
  headers(request: AuthRequest, signal?: AbortSignal): Promise<Record<string, string>>;
  /**
   * The catalog refused the credentials (401, or 419 for an expired token): true when a fresh token is
   * worth one more try (the cached one is dropped); false when nothing would change. `sent`: the headers
   * `headers()` gave the refused request, so a refusal of a token already replaced is told apart.
   */
  refused(status: number, sent?: Record<string, string>): boolean;
}

export interface AuthRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string | undefined;
}
