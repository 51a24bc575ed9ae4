/** Types of `server.mjs`, for the TypeScript tests. */
import type { EventEmitter } from 'node:events';

/** Table metadata as JSON, as the catalog holds it: it may carry fields costsync's own types leave out. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type MetadataJson = Record<string, any>;

export type CatalogServerAuth =
  | { kind: 'none' }
  | { kind: 'bearer'; token: string }
  | {
      kind: 'oauth';
      clients: { id: string; secret: string }[];
      /** Default 3600. */
      tokenTtlSeconds?: number;
      /** When set, a token request naming a scope must include this one. */
      scope?: string;
      /** Default `/v1/oauth/tokens`. */
      tokenPath?: string;
    }
  | { kind: 'sigv4'; service: 'glue' | 's3tables'; region: string; accessKeyId: string; secretAccessKey: string };

export type CatalogRoute = 'commit' | 'transaction' | 'load' | 'config' | 'token' | 'create';

/**
 * A fault for the next matching request. `before`: answer `status`, change nothing. `after`: apply the
 * change, then answer `status` (the real answer is still what an Idempotency-Key replays). `hang-after`:
 * apply, then never answer (until `close()`). A change the catalog refuses is answered as refused.
 */
export interface CatalogFault {
  route: CatalogRoute;
  /** Only requests about this table (any table of a transaction). */
  table?: string;
  status: number;
  when: 'before' | 'after' | 'hang-after';
  /** Default 1. */
  times?: number;
}

export interface CatalogServerOptions {
  /** Tables the create does not place go to `file://<root>/<namespace parts>/<table>`. */
  root: string;
  /** Default 0 (any free port). */
  port?: number;
  /** When set, `GET /v1/config` must name it (`?warehouse=`): absent → 400, another → 404. */
  warehouse?: string;
  /** Before `/v1` in every path (AWS's catalogs are under `/iceberg`); default none. */
  basePath?: string;
  /**
   * Returned as `overrides.prefix`; every other route is then `/v1/<prefix>/…` with the prefix exactly as
   * given (`ws/abc`, or an already encoded `arn%3Aaws%3A…`), not encoded again.
   */
  prefix?: string;
  /**
   * The config's `endpoints` (default: every route this server has). `'omit'` leaves the field out; a
   * client must then assume the document's default set, which has no HEAD routes but has transactions
   * (offered only with `transactions`). A route outside the list or set is refused with 406.
   */
  endpoints?: string[] | 'omit';
  /** Offers `POST /v1/{prefix}/transactions/commit`. */
  transactions?: boolean;
  /**
   * An ISO 8601 duration (`PT30M`): the config advertises it and mutations honour `Idempotency-Key`
   * (a UUIDv7, else 400; one reused for another request, 422).
   */
  idempotencyKeyLifetime?: string;
  defaults?: Record<string, string>;
  overrides?: Record<string, string>;
  /** Default `{ kind: 'none' }`. */
  auth?: CatalogServerAuth;
  /** An expired OAuth token's answer: 419 (default) or 401. */
  expiredStatus?: 401 | 419;
  /** A created table's field ids start at this + 1 (default 100), whatever the request's were. */
  fieldIdOffset?: number;
  /** Returned as `config` and `storage-credentials` when a request asks for vended credentials. */
  vendedCredentials?: Record<string, string>;
  /** Keeps the pointers (namespaces, tables' metadata locations) in this JSON file across restarts. */
  statePath?: string;
  /** Milliseconds since the epoch; default `Date.now`. */
  clock?: () => number;
}

export interface CatalogCommitEvent {
  table: string;
  /** The snapshots the commit added. */
  snapshotIds: number[];
  metadataLocation: string;
  /** Table commits applied so far, this one included. */
  count: number;
}

export interface CatalogRequestRecord {
  method: string;
  path: string;
  /** As sent, `authorization` and `x-amz-security-token` redacted. */
  headers: Record<string, string | string[] | undefined>;
  /** 0: left unanswered (a `hang-after` fault). */
  status: number;
}

export interface CatalogServer {
  /** `http://127.0.0.1:<port>` */
  url: string;
  port: number;
  /** Consumed in order, each by the first request it matches. */
  faults: CatalogFault[];
  /**
   * `'commit'` with a `CatalogCommitEvent` after each applied table commit (each table of a transaction),
   * before its answer is sent; `'request'` with the `CatalogRequestRecord` once a request is answered (or
   * left unanswered, status 0).
   */
  events: EventEmitter;
  requests: CatalogRequestRecord[];
  /** Table commits applied so far. */
  readonly commits: number;
  /** Every token issued so far is expired from now on. */
  expireTokens(): void;
  table(namespace: string[], name: string): { metadataLocation: string; metadata: MetadataJson } | null;
  close(): Promise<void>;
}

export declare function startCatalogServer(options: CatalogServerOptions): Promise<CatalogServer>;

/** An ISO 8601 duration in milliseconds. */
export declare function durationMs(text: string): number;
export declare function newTableMetadata(request: unknown, o: { location: string; firstFieldId: number; nowMs: number }): MetadataJson;
export declare function checkRequirements(metadata: unknown, requirements: unknown[]): void;
export declare function applyUpdates(base: unknown, updates: unknown[], nowMs: number): { metadata: MetadataJson; added: number[] };
