/**
 * The HTTP client of an Iceberg REST catalog (`open-api/rest-catalog-open-api.yaml` in apache/iceberg):
 * one method per call costsync makes, each reading every answer the way the spec describes it. Reads and
 * creates are retried while the catalog or the network falters; a commit is sent again only when the
 * answer says it was not applied, and otherwise comes back `unknown`, for the caller to settle by
 * reloading the table.
 */
import { randomBytes } from 'node:crypto';
import type { Dispatcher } from 'undici';
import { undici } from '../cjs-libraries.js';
import { retryAfterMs, type Clock } from '../api/resilience.js';
import { ConfigError, CostsyncError, redact, type CostsyncErrorOptions, type ErrorCode } from '../errors.js';
import type {
  CatalogAuth,
  CatalogConfigResponse,
  CommitOutcome,
  CommitTransactionRequest,
  CreateTableRequest,
  ErrorModel,
  LoadTableResult,
  TableChange,
} from './rest-types.js';

export interface RestCatalogOptions {
  /** `--catalog`: the catalog's base URL, to which `/v1/…` is appended. */
  url: string;
  /** `--catalog-warehouse`. */
  warehouse?: string | undefined;
  auth: CatalogAuth;
  /** For the waits between attempts. */
  clock: Clock;
  /** The run's stop: no new request once aborted, and a wait between attempts ends (CS_ERR_ABORTED). */
  signal?: AbortSignal;
  /** The longest a whole request may take, body included. */
  requestTimeoutMs?: number;
  /** A request's deadline, aborted once it has taken `ms` (AbortSignal.timeout by default; a test's may end on an event). */
  deadline?: (ms: number) => AbortSignal;
  /** undici's, for tests (MockAgent); else the client's own agent. */
  dispatcher?: Dispatcher;
  warn(message: string): void;
}

/** The endpoints a catalog offers when its configuration lists none (the spec's `CatalogConfig` description). */
export const DEFAULT_ENDPOINTS: readonly string[] = [
  'GET /v1/{prefix}/namespaces',
  'POST /v1/{prefix}/namespaces',
  'GET /v1/{prefix}/namespaces/{namespace}',
  'DELETE /v1/{prefix}/namespaces/{namespace}',
  'POST /v1/{prefix}/namespaces/{namespace}/properties',
  'GET /v1/{prefix}/namespaces/{namespace}/tables',
  'POST /v1/{prefix}/namespaces/{namespace}/tables',
  'GET /v1/{prefix}/namespaces/{namespace}/tables/{table}',
  'POST /v1/{prefix}/namespaces/{namespace}/tables/{table}',
  'DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}',
  'POST /v1/{prefix}/namespaces/{namespace}/register',
  'POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics',
  'POST /v1/{prefix}/tables/rename',
  'POST /v1/{prefix}/transactions/commit',
];

/** The endpoints costsync calls, as a catalog's configuration names them. */
export const CATALOG_ENDPOINTS = {
  namespaceExists: 'HEAD /v1/{prefix}/namespaces/{namespace}',
  loadNamespace: 'GET /v1/{prefix}/namespaces/{namespace}',
  createNamespace: 'POST /v1/{prefix}/namespaces',
  loadTable: 'GET /v1/{prefix}/namespaces/{namespace}/tables/{table}',
  createTable: 'POST /v1/{prefix}/namespaces/{namespace}/tables',
  registerTable: 'POST /v1/{prefix}/namespaces/{namespace}/register',
  commitTable: 'POST /v1/{prefix}/namespaces/{namespace}/tables/{table}',
  commitTransaction: 'POST /v1/{prefix}/transactions/commit',
} as const;

/** Attempts of one request, and the jittered exponential waits between them. */
export const CATALOG_RETRY = { attempts: 5, baseMs: 250, maxMs: 8_000, maxRetryAfterMs: 120_000 } as const;

export const DEFAULT_CATALOG_TIMEOUT_MS = 30_000;

/** Far above any table's metadata; a hostile or broken server cannot exhaust memory. */
const MAX_RESPONSE_BYTES = 64 * 1024 * 1024;

const USER_AGENT = 'costsync/0.1';

/** The separator of a multi-level namespace in a path when the configuration names none: 0x1F. */
const UNIT_SEPARATOR = '\u001f';

export interface CatalogErrorOptions extends CostsyncErrorOptions {
  status?: number | undefined;
  /** The `error.type` of the catalog's answer (`NoSuchTableException`, …). */
  errorType?: string | undefined;
}

/** Anything that went wrong talking to the catalog, with its answer's status and error type when it gave one. */
export class CatalogError extends CostsyncError {
  readonly status: number | undefined;
  readonly errorType: string | undefined;

  constructor(code: ErrorCode, message: string, options: CatalogErrorOptions = {}) {
    super(code, message, options);
    this.name = 'CatalogError';
    this.status = options.status;
    this.errorType = options.errorType;
  }
}

/**
 * A UUIDv7 (RFC 9562), the form the spec asks of an `Idempotency-Key`: one per logical commit, kept
 * across its resends.
 */
export function newIdempotencyKey(nowMs: number, random: Uint8Array = randomBytes(10)): string {
  const bytes = new Uint8Array(16);
  let ms = BigInt(Math.max(0, Math.floor(nowMs)));
  for (let i = 5; i >= 0; i--) {
    bytes[i] = Number(ms & 0xffn);
    ms >>= 8n;
  }
  bytes.set(random.subarray(0, 10), 6);
  bytes[6] = 0x70 | (bytes[6]! & 0x0f);
  bytes[8] = 0x80 | (bytes[8]! & 0x3f);
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

type Kind = 'read' | 'create' | 'commit';

interface Call {
  method: 'GET' | 'HEAD' | 'POST';
  /** After the base URL, query included. */
  path: string;
  body?: string;
  headers?: Record<string, string>;
  /** What costsync was doing, for messages: `load table costsync.line_items`. */
  action: string;
  kind: Kind;
}

interface Answer {
  status: number;
  retryAfter: string | undefined;
  text: string;
  /** The auth headers the request went with (so a refusal is of that token, not a newer one). */
  sentAuth?: Record<string, string>;
}

interface Unsettled {
  kind: 'unknown';
  message: string;
}

/** Errnos of a connection that was never made: nothing was sent. */
const NOT_CONNECTED: Record<string, string> = {
  ENOTFOUND: 'the host name does not resolve (DNS)',
  EAI_AGAIN: 'the host name could not be resolved (DNS did not answer)',
  ECONNREFUSED: 'nothing accepts connections at that host and port',
  EHOSTUNREACH: 'the host cannot be reached',
  ENETUNREACH: 'the network cannot be reached',
};

/**
 * A request that got no answer; `sent` when it may have reached the server. Settled inside the client
 * (a retry, or `unreachable`); its code is the one it becomes when it escapes.
 */
class NoAnswer extends CostsyncError {
  constructor(
    readonly detail: string,
    readonly sent: boolean,
    readonly errno: string | undefined,
    cause: unknown,
  ) {
    super('CS_ERR_CATALOG_UNREACHABLE', detail, { cause });
    this.name = 'NoAnswer';
  }
}

/** The errno or undici code of a transport failure, looking through undici's wrappers. */
function codeOf(error: unknown): string | undefined {
  let found: string | undefined;
  const visit = (e: unknown, depth: number) => {
    if (found !== undefined || depth > 4 || typeof e !== 'object' || e === null) return;
    const { code, cause, errors } = e as { code?: unknown; cause?: unknown; errors?: unknown };
    if (typeof code === 'string' && (code in NOT_CONNECTED || code === 'UND_ERR_CONNECT_TIMEOUT')) found = code;
    if (Array.isArray(errors)) for (const inner of errors) visit(inner, depth + 1);
    visit(cause, depth + 1);
  };
  visit(error, 0);
  if (found !== undefined) return found;
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** A value of a path segment: decoded first when it already is, so a server's encoded prefix is not encoded twice. */
function encodeSegment(value: string): string {
  let plain = value;
  try {
    plain = decodeURIComponent(value);
  } catch {
    // A lone `%` is text, not an escape.
  }
  return encodeURIComponent(plain);
}

function stringMap(value: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return out;
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (typeof v === 'string') out[k] = v;
    else if (typeof v === 'number' || typeof v === 'boolean') out[k] = String(v);
  }
  return out;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The `error` of an ErrorModel body, or null; only its type and message are ever read. */
function errorOf(text: string): { type: string; message: string } | null {
  const body = parseJson(text) as Partial<ErrorModel> | undefined;
  const error = body?.error;
  if (typeof error !== 'object' || error === null) return null;
  const type = typeof error.type === 'string' ? error.type : '';
  const message = typeof error.message === 'string' ? error.message : '';
  return type === '' && message === '' ? null : { type, message };
}

/**
 * The hint for a refused `GET /v1/config`. An Iceberg error answer once a warehouse was asked for means the
 * catalog is at --catalog and the warehouse is what it refused; a 404 without one means nothing at --catalog
 * speaks Iceberg REST. Pure.
 */
export function configFailureHint(status: number, errorType: string | undefined, warehouse: string | undefined): string | undefined {
  const answered = errorType !== undefined && errorType !== '';
  if ((warehouse !== undefined && answered && [400, 403, 404].includes(status)) || (answered && /warehouse/i.test(errorType)))
    return warehouse === undefined
      ? 'Pass --catalog-warehouse: this catalog serves several warehouses and must be told which.'
      : `Check --catalog-warehouse: the catalog at --catalog answered, but refused the warehouse "${warehouse}" (not one it knows, or not one these credentials may use).`;
  if (status === 404) return 'Check --catalog: it is the base URL of an Iceberg REST catalog, the part before /v1/config.';
  if (status === 400) return 'Pass --catalog-warehouse: the catalog may need to be told which warehouse to use.';
  return undefined;
}

async function readLimited(body: Dispatcher.ResponseData['body']): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > MAX_RESPONSE_BYTES) {
      body.destroy();
      return null;
    }
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Header names whose values are credentials (a bearer token, a SigV4 signature or session token). */
const SECRET_HEADER = /authorization|token|secret|signature|credential|api-key/i;
/** Keys of a table's `config` whose values are credentials (`s3.secret-access-key`, `token`, …). */
const SECRET_PROPERTY = /secret|token|key|credential|password|signature|sas/i;

/** Sends requests to one catalog, reads their answers, and words their failures. */
class CatalogHttp {
  readonly base: string;
  prefix: string | null = null;
  private answered = false;
  private readonly secrets = new Set<string>();
  private readonly dispatcher: Dispatcher;
  private readonly ownsDispatcher: boolean;
  private readonly timeoutMs: number;

  constructor(private readonly o: RestCatalogOptions) {
    this.base = parseCatalogUrl(o.url);
    this.timeoutMs = o.requestTimeoutMs ?? DEFAULT_CATALOG_TIMEOUT_MS;
    this.ownsDispatcher = o.dispatcher === undefined;
    this.dispatcher = o.dispatcher ?? new (undici().Agent)({ connect: { timeout: 10_000 }, keepAliveTimeout: 10_000 });
  }

  describe(): string {
    const parts = [
      ...(this.o.warehouse ? [`warehouse ${this.o.warehouse}`] : []),
      ...(this.prefix !== null ? [`prefix ${this.prefix}`] : []),
    ];
    return parts.length === 0 ? this.base : `${this.base} (${parts.join(', ')})`;
  }

  /** Values never to be repeated in a message: credentials seen in requests' headers and tables' configs. */
  remember(values: Iterable<[string, string]>, pattern: RegExp): void {
    for (const [name, value] of values) {
      if (!pattern.test(name) || value.length < 8) continue;
      this.secrets.add(value);
      // A header's value names its scheme and fields around the secret (`Bearer …`, `Signature=…`).
      for (const word of value.split(/[\s,=/]+/)) if (word.length >= 12) this.secrets.add(word);
    }
  }

  scrub(text: string): string {
    return redact(
      text,
      [...this.secrets].sort((a, b) => b.length - a.length),
    );
  }

  warn(message: string): void {
    this.o.warn(this.scrub(message));
  }

  error(code: ErrorCode, message: string, options: CatalogErrorOptions = {}): CatalogError {
    return new CatalogError(code, this.scrub(message), { ...options, hint: options.hint && this.scrub(options.hint) });
  }

  aborted(call: Pick<Call, 'action'>, cause?: unknown): CatalogError {
    return this.error('CS_ERR_ABORTED', `Iceberg catalog ${this.describe()}: did not ${call.action}: the run is stopping.`, { cause });
  }

  /** `error.type: error.message (HTTP s)` of an answer: never its body, which may hold credentials. */
  explain(answer: Answer): string {
    const error = errorOf(answer.text);
    if (error === null) return `HTTP ${answer.status}`;
    const said = [error.type, error.message.length > 300 ? `${error.message.slice(0, 300)}…` : error.message].filter((s) => s !== '');
    return `${said.join(': ')} (HTTP ${answer.status})`;
  }

  failed(call: Call, answer: Answer, hint?: string): CatalogError {
    return this.error('CS_ERR_CATALOG', `Iceberg catalog ${this.describe()}: could not ${call.action}: ${this.explain(answer)}.`, {
      status: answer.status,
      errorType: errorOf(answer.text)?.type,
      hint,
    });
  }

  /** The JSON body of a successful answer; never quoted in the error, which may hold credentials. */
  json(call: Call, answer: Answer): Record<string, unknown> {
    const body = parseJson(answer.text);
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw this.error(
        'CS_ERR_CATALOG',
        `Iceberg catalog ${this.describe()}: could not ${call.action}: the answer (HTTP ${answer.status}) is not the JSON object the Iceberg REST spec describes.`,
        { status: answer.status, hint: 'Check that --catalog is the base URL of an Iceberg REST catalog (the part before /v1/).' },
      );
    }
    return body as Record<string, unknown>;
  }

  private checkStop(call: Call): void {
    if (this.o.signal?.aborted) throw this.aborted(call);
  }

  /** One request and its whole answer. */
  private async sendOnce(call: Call): Promise<Answer> {
    const url = `${this.base}${call.path}`;
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': USER_AGENT, ...call.headers };
    if (call.body !== undefined) headers['content-type'] = 'application/json';
    const stop = this.o.signal;
    let auth: Record<string, string>;
    try {
      auth = await this.o.auth.headers({ method: call.method, url, headers: { ...headers }, body: call.body }, stop);
    } catch (error) {
      if (stop?.aborted) throw this.aborted(call, error);
      throw error;
    }
    this.remember(Object.entries(auth), SECRET_HEADER);
    const deadline = (this.o.deadline ?? AbortSignal.timeout)(this.timeoutMs);
    // A commit in flight is let finish (within its deadline): cut, it could neither be known applied nor not.
    const signal = call.kind === 'commit' || stop === undefined ? deadline : AbortSignal.any([deadline, stop]);
    try {
      const response = await undici().request(url, {
        method: call.method,
        headers: { ...headers, ...auth },
        ...(call.body !== undefined && { body: call.body }),
        signal,
        dispatcher: this.dispatcher,
      });
      this.answered = true;
      const text = await readLimited(response.body);
      if (text === null) {
        throw this.error(
          'CS_ERR_CATALOG',
          `Iceberg catalog ${this.describe()}: could not ${call.action}: the answer is larger than ${MAX_RESPONSE_BYTES} bytes.`,
          { status: response.statusCode },
        );
      }
      const header = response.headers['retry-after'];
      return { status: response.statusCode, retryAfter: Array.isArray(header) ? header[0] : header, text, sentAuth: auth };
    } catch (error) {
      if (error instanceof CatalogError) throw error;
      if (call.kind !== 'commit' && stop?.aborted) throw this.aborted(call, error);
      if (deadline.aborted) {
        throw new NoAnswer(`no complete answer within ${this.timeoutMs} ms`, true, undefined, error);
      }
      const code = codeOf(error);
      const notConnected = code !== undefined && (code in NOT_CONNECTED || code === 'UND_ERR_CONNECT_TIMEOUT');
      const said = (error as { message?: unknown } | null)?.message;
      const detail =
        code !== undefined && code in NOT_CONNECTED
          ? `${NOT_CONNECTED[code]} (${code})`
          : `the connection failed${typeof said === 'string' && said !== '' ? `: ${said}` : ''}${code !== undefined ? ` (${code})` : ''}`;
      throw new NoAnswer(detail, !notConnected, code, error);
    }
  }

  /** Waits before attempt `attempt + 1`: jittered exponential, and at least what `Retry-After` asks (bounded). */
  private async backoff(call: Call, attempt: number, why: string, retryAfter?: string): Promise<void> {
    const exp = Math.min(CATALOG_RETRY.maxMs, CATALOG_RETRY.baseMs * 2 ** (attempt - 1));
    let ms = Math.round(exp / 2 + (Math.random() * exp) / 2);
    const asked = retryAfter === undefined ? null : retryAfterMs(retryAfter, '', this.o.clock.now());
    if (asked !== null) ms = Math.max(ms, Math.min(asked, CATALOG_RETRY.maxRetryAfterMs));
    this.warn(
      `Iceberg catalog ${this.describe()}: ${call.action}: ${why}; trying again in ${(ms / 1000).toFixed(1)} s (attempt ${attempt + 1} of ${CATALOG_RETRY.attempts}).`,
    );
    await this.o.clock.sleep(ms, this.o.signal);
    this.checkStop(call);
  }

  private refusedCredentials(call: Call, answer: Answer, again: boolean): CatalogError {
    return this.error(
      'CS_ERR_CATALOG_AUTH',
      `Iceberg catalog ${this.describe()} refused the credentials (${this.o.auth.description})${again ? ', fresh ones too,' : ''} to ${call.action}: ${this.explain(answer)}.`,
      {
        status: answer.status,
        errorType: errorOf(answer.text)?.type,
        hint: 'Check COSTSYNC_CATALOG_TOKEN (an expired or revoked token needs a new one), COSTSYNC_CATALOG_CREDENTIAL and --catalog-oauth-scope, or the AWS credentials with --catalog-sigv4.',
      },
    );
  }

  private forbidden(call: Call, answer: Answer): CatalogError {
    return this.error(
      'CS_ERR_CATALOG_AUTH',
      `Iceberg catalog ${this.describe()}: the principal (${this.o.auth.description}) lacks the privilege to ${call.action}: ${this.explain(answer)}.`,
      {
        status: 403,
        errorType: errorOf(answer.text)?.type,
        hint: `Grant the principal the privilege to ${call.action} in the catalog (for AWS Glue or S3 Tables, its IAM or Lake Formation permissions), or use credentials that have it.`,
      },
    );
  }

  /**
   * Sends `call` until an answer not worth another attempt, and returns it. Reads and creates are sent
   * again after 429, 5xx and transport failures (a create that did land answers 409 the next time);
   * those still failing end in CS_ERR_CATALOG. A commit is sent again only when it was not applied
   * (429, a 503 the spec allows resending, a connection never made); an answer that leaves it open is
   * `unknown`. 401/419 are retried once with fresh credentials when the auth says so; 403 is the end.
   */
  async perform(call: Call): Promise<Answer | Unsettled> {
    const commit = call.kind === 'commit';
    const idempotent = commit && call.headers?.['idempotency-key'] !== undefined;
    let refreshed = false;
    // A 503 on a commit "could have been partially processed": a 409 after it may be this commit's own.
    let mayHaveApplied = false;
    for (let attempt = 1; ; attempt++) {
      this.checkStop(call);
      let answer: Answer;
      try {
        answer = await this.sendOnce(call);
      } catch (error) {
        if (!(error instanceof NoAnswer)) throw error;
        if (!this.answered && error.errno !== undefined && error.errno in NOT_CONNECTED) throw this.unreachable(error);
        if (commit && error.sent) {
          return {
            kind: 'unknown',
            message: this.scrub(`Iceberg catalog ${this.describe()}: ${call.action}: ${error.detail} after the request was sent`),
          };
        }
        if (attempt >= CATALOG_RETRY.attempts) {
          if (mayHaveApplied)
            return {
              kind: 'unknown',
              message: this.scrub(`Iceberg catalog ${this.describe()}: ${call.action}: ${error.detail}, after a 503`),
            };
          throw this.error(
            'CS_ERR_CATALOG',
            `Iceberg catalog ${this.describe()}: could not ${call.action}: ${error.detail}, at each of ${attempt} attempts.`,
            { cause: error.cause, hint: 'Check the network and --catalog; run again later (progress is kept).' },
          );
        }
        await this.backoff(call, attempt, error.detail);
        continue;
      }
      const status = answer.status;
      if (status === 401 || status === 419) {
        if (!refreshed && this.o.auth.refused(status, answer.sentAuth)) {
          refreshed = true;
          attempt -= 1;
          continue;
        }
        throw this.refusedCredentials(call, answer, refreshed);
      }
      if (status === 403) throw this.forbidden(call, answer);
      if (commit) {
        if (status === 409 && mayHaveApplied) {
          return {
            kind: 'unknown',
            message: this.scrub(
              `Iceberg catalog ${this.describe()}: ${call.action}: ${this.explain(answer)} after a 503 that may have applied it`,
            ),
          };
        }
        if (status === 429 || status === 503) {
          if (status === 503) mayHaveApplied = true;
          // The spec: a 503'd request that is not idempotent is resent only when the server sends Retry-After.
          const resendable = status === 429 || idempotent || answer.retryAfter !== undefined;
          if (resendable && attempt < CATALOG_RETRY.attempts) {
            await this.backoff(call, attempt, this.explain(answer), answer.retryAfter);
            continue;
          }
          if (mayHaveApplied)
            return { kind: 'unknown', message: this.scrub(`Iceberg catalog ${this.describe()}: ${call.action}: ${this.explain(answer)}`) };
          throw this.failed(call, answer, 'The catalog kept refusing the commit for load; run again later (progress is kept).');
        }
        // 501 is a definite no; every other 5xx leaves the commit's state unknown (the spec's CommitStateUnknown).
        if (status >= 500 && status !== 501) {
          return { kind: 'unknown', message: this.scrub(`Iceberg catalog ${this.describe()}: ${call.action}: ${this.explain(answer)}`) };
        }
        return answer;
      }
      if (status === 429 || (status >= 500 && status !== 501)) {
        if (attempt >= CATALOG_RETRY.attempts) {
          throw this.failed(call, answer, `The catalog still failed after ${attempt} attempts; run again later (progress is kept).`);
        }
        await this.backoff(call, attempt, this.explain(answer), answer.retryAfter);
        continue;
      }
      return answer;
    }
  }

  /** For reads and creates, which never come back unsettled. */
  async settled(call: Call): Promise<Answer> {
    const answer = await this.perform(call);
    if ('kind' in answer)
      throw this.error('CS_ERR_INTERNAL', `Iceberg catalog: ${call.action} came back unsettled, which only a commit may.`);
    return answer;
  }

  private unreachable(failure: NoAnswer): CatalogError {
    return this.error('CS_ERR_CATALOG_UNREACHABLE', `Cannot reach the Iceberg catalog at ${this.base}: ${failure.detail}.`, {
      cause: failure.cause,
      hint: `Check --catalog: ${this.base} is what costsync was given.`,
    });
  }

  async close(): Promise<void> {
    if (this.ownsDispatcher) await this.dispatcher.close();
  }
}

/**
 * Checks and normalizes `--catalog`: https, or http on a loopback address only (a token is sent with
 * every request); no credentials, query or fragment. Returns it without a trailing slash.
 */
export function parseCatalogUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigError(
      `The catalog URL "${text}" is not a URL.`,
      'Pass --catalog https://host/path, the base URL of an Iceberg REST catalog.',
    );
  }
  const loopback = url.hostname === 'localhost' || url.hostname === '[::1]' || /^127(\.\d{1,3}){3}$/.test(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) {
    throw new ConfigError(
      `The catalog URL "${url.origin}" must use https (plain http is allowed only for loopback addresses such as 127.0.0.1).`,
      'Use https://, or reach a local catalog on 127.0.0.1.',
    );
  }
  if (url.username || url.password || url.search || url.hash) {
    throw new ConfigError(
      'The catalog URL must not carry credentials, a query or a fragment.',
      'Pass credentials with COSTSYNC_CATALOG_TOKEN or COSTSYNC_CATALOG_CREDENTIAL, and the warehouse with --catalog-warehouse.',
    );
  }
  const path = url.pathname.replace(/\/+$/, '');
  return `${url.origin}${path}`;
}

function tableName(ns: readonly string[], name: string): string {
  return [...ns, name].join('.');
}

/** What a LoadTableResult must hold for costsync to use it. */
function isLoadTableResult(body: Record<string, unknown>): boolean {
  const metadata = body.metadata as Record<string, unknown> | undefined;
  return typeof metadata === 'object' && metadata !== null && typeof metadata['table-uuid'] === 'string';
}

/** An Iceberg REST catalog, connected: its configuration read, its prefix and endpoints known. */
export class RestCatalog {
  readonly properties: Readonly<Record<string, string>>;
  readonly prefix: string | null;
  /** The server advertised `idempotency-key-lifetime`: it honours `Idempotency-Key` on mutations. */
  readonly idempotency: boolean;
  private readonly endpoints: ReadonlySet<string>;
  /** The namespace separator as it goes in a path, and as it reads in a part. */
  private readonly separator: { encoded: string; plain: string };

  private constructor(
    private readonly http: CatalogHttp,
    config: CatalogConfigResponse,
  ) {
    this.properties = Object.freeze({ ...stringMap(config.defaults), ...stringMap(config.overrides) });
    const prefix = (this.properties.prefix ?? '').replace(/^\/+|\/+$/g, '');
    this.prefix = prefix === '' ? null : prefix;
    http.prefix = this.prefix;
    const listed = Array.isArray(config.endpoints) ? config.endpoints.filter((e): e is string => typeof e === 'string') : null;
    this.endpoints = new Set((listed ?? DEFAULT_ENDPOINTS).map((e) => e.trim().replace(/\s+/g, ' ')));
    const lifetime = config['idempotency-key-lifetime'];
    this.idempotency = typeof lifetime === 'string' && lifetime.trim() !== '';
    const advertised = this.properties['namespace-separator'];
    const encoded = advertised === undefined || advertised === '' ? encodeURIComponent(UNIT_SEPARATOR) : encodeSegment(advertised);
    this.separator = { encoded, plain: decodeURIComponent(encoded) };
  }

  /** Reads the catalog's configuration (`GET /v1/config`): the first request, which says whether anything answers at `--catalog`. */
  static async connect(o: RestCatalogOptions): Promise<RestCatalog> {
    const http = new CatalogHttp(o);
    try {
      const query = o.warehouse ? `?warehouse=${encodeURIComponent(o.warehouse)}` : '';
      const call: Call = { method: 'GET', path: `/v1/config${query}`, action: 'read its configuration (GET /v1/config)', kind: 'read' };
      const answer = await http.settled(call);
      if (answer.status !== 200) {
        throw http.failed(call, answer, configFailureHint(answer.status, errorOf(answer.text)?.type, o.warehouse));
      }
      const body = http.json(call, answer);
      return new RestCatalog(http, body as unknown as CatalogConfigResponse);
    } catch (error) {
      await http.close();
      throw error;
    }
  }

  /** True when the catalog offers `endpoint` (`'POST /v1/{prefix}/transactions/commit'`). */
  supports(endpoint: string): boolean {
    return this.endpoints.has(endpoint.trim().replace(/\s+/g, ' '));
  }

  /** `<url> (warehouse W, prefix P)`, for messages: never a secret. */
  describe(): string {
    return this.http.describe();
  }

  /** Closes the client's own connections (none to close with an injected dispatcher). */
  close(): Promise<void> {
    return this.http.close();
  }

  async namespaceExists(ns: string[]): Promise<boolean> {
    const action = `look up namespace ${ns.join('.')}`;
    const method = this.supports(CATALOG_ENDPOINTS.namespaceExists) ? 'HEAD' : 'GET';
    if (method === 'GET') this.require(CATALOG_ENDPOINTS.loadNamespace, action);
    const call: Call = { method, path: this.path('namespaces', this.namespace(ns)), action, kind: 'read' };
    const answer = await this.http.settled(call);
    if (answer.status === 200 || answer.status === 204) return true;
    if (answer.status === 404) return false;
    throw this.http.failed(call, answer);
  }

  /** Creates a namespace; one that exists already (a runner racing this one made it) is as good. */
  async createNamespace(ns: string[]): Promise<void> {
    const action = `create namespace ${ns.join('.')}`;
    this.require(CATALOG_ENDPOINTS.createNamespace, action);
    const call: Call = {
      method: 'POST',
      path: this.path('namespaces'),
      body: JSON.stringify({ namespace: ns, properties: {} }),
      action,
      kind: 'create',
    };
    const answer = await this.http.settled(call);
    if ((answer.status >= 200 && answer.status < 300) || answer.status === 409) return;
    throw this.http.failed(call, answer);
  }

  /** A table's metadata and where to read and write its files (vended credentials asked for); null when there is no such table. */
  async loadTable(ns: string[], name: string): Promise<LoadTableResult | null> {
    const action = `load table ${tableName(ns, name)}`;
    this.require(CATALOG_ENDPOINTS.loadTable, action);
    const call: Call = {
      method: 'GET',
      path: this.path('namespaces', this.namespace(ns), 'tables', encodeURIComponent(name)),
      headers: { 'x-iceberg-access-delegation': 'vended-credentials' },
      action,
      kind: 'read',
    };
    const answer = await this.http.settled(call);
    if (answer.status === 404) return null;
    if (answer.status !== 200) throw this.http.failed(call, answer);
    return this.tableResult(call, answer);
  }

  /** Creates a table; `'exists'` when it is there already (another runner created it): load it. */
  async createTable(ns: string[], req: CreateTableRequest): Promise<LoadTableResult | 'exists'> {
    const action = `create table ${tableName(ns, req.name)}`;
    this.require(CATALOG_ENDPOINTS.createTable, action);
    const call: Call = {
      method: 'POST',
      path: this.path('namespaces', this.namespace(ns), 'tables'),
      body: JSON.stringify(req),
      headers: { 'x-iceberg-access-delegation': 'vended-credentials' },
      action,
      kind: 'create',
    };
    return this.created(call, ns);
  }

  /** Registers a table whose metadata file is already written; `'exists'` when the name is taken. */
  async registerTable(ns: string[], name: string, metadataLocation: string): Promise<LoadTableResult | 'exists'> {
    const action = `register table ${tableName(ns, name)}`;
    this.require(CATALOG_ENDPOINTS.registerTable, action);
    const call: Call = {
      method: 'POST',
      path: this.path('namespaces', this.namespace(ns), 'register'),
      body: JSON.stringify({ name, 'metadata-location': metadataLocation }),
      headers: { 'x-iceberg-access-delegation': 'vended-credentials' },
      action,
      kind: 'create',
    };
    return this.created(call, ns);
  }

  /** Commits one table's change (`POST …/tables/{table}`). */
  async commitTable(ns: string[], name: string, change: TableChange, idempotencyKey?: string): Promise<CommitOutcome> {
    const action = `commit to table ${tableName(ns, name)}`;
    this.require(CATALOG_ENDPOINTS.commitTable, action);
    const call: Call = {
      method: 'POST',
      path: this.path('namespaces', this.namespace(ns), 'tables', encodeURIComponent(name)),
      body: JSON.stringify({ identifier: { namespace: ns, name }, requirements: change.requirements, updates: change.updates }),
      headers: this.idempotencyHeader(idempotencyKey),
      action,
      kind: 'commit',
    };
    const answer = await this.http.perform(call);
    if ('kind' in answer) return answer;
    if (answer.status === 204) return { kind: 'committed', metadata: null, metadataLocation: null };
    if (answer.status >= 200 && answer.status < 300) {
      // Applied whatever the body holds: one that cannot be read leaves the caller to reload.
      const body = parseJson(answer.text) as Record<string, unknown> | undefined;
      const metadata = typeof body?.metadata === 'object' && body.metadata !== null ? (body.metadata as LoadTableResult['metadata']) : null;
      const location = typeof body?.['metadata-location'] === 'string' ? body['metadata-location'] : null;
      return { kind: 'committed', metadata, metadataLocation: location };
    }
    return this.refusedCommit(call, answer, 'the table or its namespace is gone (dropped or renamed since it was loaded)');
  }

  /** Commits several tables' changes, all or none (`POST /v1/{prefix}/transactions/commit`); the server answers 204, so no metadata comes back. */
  async commitTransaction(
    changes: { namespace: string[]; name: string; change: TableChange }[],
    idempotencyKey?: string,
  ): Promise<CommitOutcome> {
    const action = `commit a transaction over ${changes.map((c) => tableName(c.namespace, c.name)).join(', ')}`;
    this.require(CATALOG_ENDPOINTS.commitTransaction, action);
    const body: CommitTransactionRequest = {
      'table-changes': changes.map((c) => ({
        identifier: { namespace: c.namespace, name: c.name },
        requirements: c.change.requirements,
        updates: c.change.updates,
      })),
    };
    const call: Call = {
      method: 'POST',
      path: this.path('transactions', 'commit'),
      body: JSON.stringify(body),
      headers: this.idempotencyHeader(idempotencyKey),
      action,
      kind: 'commit',
    };
    const answer = await this.http.perform(call);
    if ('kind' in answer) return answer;
    if (answer.status >= 200 && answer.status < 300) return { kind: 'committed', metadata: null, metadataLocation: null };
    return this.refusedCommit(call, answer, 'one of the tables or its namespace is gone (dropped or renamed since it was loaded)');
  }

  private refusedCommit(call: Call, answer: Answer, gone: string): CommitOutcome {
    if (answer.status === 409) return { kind: 'conflict', message: this.http.scrub(`${call.action}: ${this.http.explain(answer)}`) };
    if (answer.status === 404)
      throw this.http.failed(call, answer, `${gone[0]!.toUpperCase()}${gone.slice(1)}; run again to create it anew.`);
    throw this.http.failed(
      call,
      answer,
      answer.status === 400
        ? 'The catalog refused the change itself; this is likely a bug in costsync: please report it with this message.'
        : undefined,
    );
  }

  private async created(call: Call, ns: string[]): Promise<LoadTableResult | 'exists'> {
    const answer = await this.http.settled(call);
    if (answer.status === 409) return 'exists';
    if (answer.status === 404) {
      throw this.http.failed(
        call,
        answer,
        `The namespace ${ns.join('.')} does not exist: create it first (costsync does on its first run).`,
      );
    }
    if (answer.status !== 200) throw this.http.failed(call, answer);
    return this.tableResult(call, answer);
  }

  private tableResult(call: Call, answer: Answer): LoadTableResult {
    const body = this.http.json(call, answer);
    // Vended credentials are remembered first, so that no later message can repeat them.
    this.http.remember(Object.entries(stringMap(body.config)), SECRET_PROPERTY);
    const vended = Array.isArray(body['storage-credentials']) ? (body['storage-credentials'] as { config?: unknown }[]) : [];
    for (const credential of vended) this.http.remember(Object.entries(stringMap(credential?.config)), SECRET_PROPERTY);
    if (!isLoadTableResult(body)) {
      throw this.http.error(
        'CS_ERR_CATALOG',
        `Iceberg catalog ${this.describe()}: could not ${call.action}: the answer holds no table metadata (no metadata.table-uuid).`,
        { status: answer.status },
      );
    }
    return body as unknown as LoadTableResult;
  }

  private idempotencyHeader(key: string | undefined): Record<string, string> {
    return this.idempotency && key !== undefined && key !== '' ? { 'idempotency-key': key } : {};
  }

  private require(endpoint: string, action: string): void {
    if (this.supports(endpoint)) return;
    throw this.http.error(
      'CS_ERR_CATALOG_UNSUPPORTED',
      `Iceberg catalog ${this.describe()} does not offer ${endpoint}, which costsync needs to ${action} (its configuration lists the endpoints it offers).`,
      { hint: 'Use a catalog that offers it, or a newer version of this one.' },
    );
  }

  /** `/v1/{prefix}/<segments>`; each segment is already encoded. */
  private path(...segments: string[]): string {
    const prefix = this.prefix === null ? [] : this.prefix.split('/').map(encodeSegment);
    return `/${['v1', ...prefix, ...segments].join('/')}`;
  }

  /** A namespace as one path segment: its parts encoded and joined by the separator (0x1F, `%1F`, unless the config names one). */
  private namespace(ns: string[]): string {
    if (ns.length === 0)
      throw new ConfigError('The catalog namespace is empty.', 'Pass --catalog-namespace NAME (dotted for several levels).');
    for (const part of ns) {
      if (part === '' || part.includes(this.separator.plain)) {
        throw new ConfigError(
          `The catalog namespace ${JSON.stringify(ns.join('.'))} has a level that is empty or holds the catalog's namespace separator.`,
          'Pass --catalog-namespace with non-empty levels joined by dots.',
        );
      }
    }
    return ns.map((part) => encodeURIComponent(part)).join(this.separator.encoded);
  }
}
