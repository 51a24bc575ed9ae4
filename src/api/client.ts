/**
 * The Cost Data API client: one typed method per endpoint over an undici pool. Every request goes
 * through its source's limiter and the retry policy; errors come back as ApiError with a
 * stable code, the HTTP status, the API code, the request path and a hint.
 */
import pRetry from 'p-retry';
import type { Dispatcher } from 'undici';
import { undici } from '../cjs-libraries.js';
import {
  API_ERROR_CODES,
  ApiError,
  ClientErrorCode,
  CODE_FOR_API_ERROR,
  ConfigError,
  ExitCode,
  redact,
  type ApiErrorCode,
} from '../errors.js';
import {
  DEFAULT_RETRY_POLICY,
  DROPPED_MESSAGE,
  createRequestLimiter,
  isRateLimited,
  isTransient,
  retryAfterMs,
  systemClock,
  type Clock,
  type RequestLimiter,
  type RetryPolicy,
} from './resilience.js';
import {
  API_PREFIX,
  ENDPOINT_SCOPES,
  endpointOf,
  type Anomaly,
  type Envelope,
  type GroupBy,
  type IngestRequest,
  type IngestResult,
  type LineItemPage,
  type RollupRow,
} from './types.js';
import { parseEnvelope, toAnomalies, toIngestResult, toLineItemPage, toRollups } from './validate.js';

export interface Timeouts {
  connectMs: number;
  headersMs: number;
  /** Longest silence between two chunks of a body. */
  bodyMs: number;
  /** Longest a whole request may take, body included: a server that trickles a byte now and then never trips bodyMs. */
  totalMs: number;
}

export const DEFAULT_TIMEOUTS: Timeouts = { connectMs: 10_000, headersMs: 60_000, bodyMs: 60_000, totalMs: 180_000 };

/** The largest response costsync reads: a 1000-row page is well under 1 MB. */
export const DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024;

/** What the client reports as it works: for logs, progress and run summaries. */
export type ClientEvent =
  | { type: 'request'; method: string; path: string }
  | { type: 'response'; method: string; path: string; statusCode: number; ms: number }
  /**
   * Sent once a request failed and before it is sent again: `attempt` is the number of the request about
   * to be sent (the first request is attempt 1), `retriesLeft` how many more may follow it.
   */
  | { type: 'retry'; method: string; path: string; attempt: number; code: string; message: string; retriesLeft: number }
  | { type: 'rate_limited'; method: string; path: string; holdMs: number };

/** The log line for a retry, the same for every command. */
export function retryLine(event: Extract<ClientEvent, { type: 'retry' }>): string {
  const left = event.retriesLeft > 0 ? `, ${event.retriesLeft} more attempt(s) before giving up` : ', the last attempt';
  return `retrying ${event.method} ${event.path} (attempt ${event.attempt}${left}): ${event.message}`;
}

/** The error of a request the run's stop cut short or kept from being sent. */
const aborted = (method: string, where: string, cause?: unknown) =>
  new ApiError(ClientErrorCode.ABORTED, `${method} ${where} was not completed: the run is stopping`, { path: where, cause });

export interface RetryContext {
  method: string;
  /** The path without its query, for events and errors. */
  where: string;
  policy: RetryPolicy;
  stop: AbortSignal | undefined;
  stats: ClientStats;
  emit: (event: ClientEvent) => void;
  /** Holds every request of the limiter for a 429's wait. */
  holdFor: (ms: number) => void;
}

/**
 * Runs `attempt` (one request each call) under the retry policy. Every count says the same thing: attempt
 * N is the Nth request sent, in the `retry` event, its log line and CS_ERR_RETRIES_EXHAUSTED; a failure
 * that is not followed by another request emits no `retry` event and is not counted as a retry.
 */
export async function withRetries<T>(attempt: () => Promise<T>, ctx: RetryContext): Promise<T> {
  const { method, where, policy, stop, stats, emit } = ctx;
  let rateLimitedCount = 0;
  let sent = 0;
  try {
    return await pRetry(
      () => {
        sent += 1;
        return attempt();
      },
      {
        ...(stop !== undefined && { signal: stop }),
        retries: policy.retries,
        factor: policy.factor,
        minTimeout: policy.minTimeoutMs,
        maxTimeout: policy.maxTimeoutMs,
        randomize: true,
        // p-retry calls this after every failure, the last included, with the retries left before
        // this one is consumed: another request follows only while some are left.
        onFailedAttempt: ({ error, attemptNumber, retriesLeft }) => {
          if (isRateLimited(error)) {
            rateLimitedCount += 1;
            stats.rateLimited += 1;
            const holdMs = error.retryAfterMs ?? 1000;
            emit({ type: 'rate_limited', method, path: where, holdMs });
            ctx.holdFor(holdMs);
          } else if (isTransient(error) && retriesLeft > 0 && !stop?.aborted) {
            stats.retries += 1;
            emit({
              type: 'retry',
              method,
              path: where,
              attempt: attemptNumber + 1,
              code: (error as ApiError).code,
              message: error.message,
              retriesLeft: retriesLeft - 1,
            });
          }
        },
        shouldConsumeRetry: ({ error }) => !isRateLimited(error),
        shouldRetry: ({ error }) => (isRateLimited(error) ? rateLimitedCount <= policy.maxRateLimitRetries : isTransient(error)),
      },
    );
  } catch (error) {
    // A stop during a retry's wait ends the wait with the signal's reason.
    if (stop?.aborted && !(error instanceof ApiError && error.code === ClientErrorCode.ABORTED)) throw aborted(method, where, error);
    if (error instanceof ApiError && (isTransient(error) || isRateLimited(error)) && sent > 1) {
      throw new ApiError(ClientErrorCode.RETRIES_EXHAUSTED, `${method} ${where} still failing after ${sent} attempts: ${error.message}`, {
        path: where,
        statusCode: error.statusCode,
        apiCode: error.apiCode,
        cause: error,
        hint: 'The server or network kept failing; run again later (progress is kept).',
      });
    }
    throw error;
  }
}

export interface ClientStats {
  requests: number;
  retries: number;
  rateLimited: number;
}

export interface ApiClientOptions {
  baseUrl: string;
  apiKey: string;
  /**
   * The run's stop: once aborted, a request in flight is cut (its page is fetched again next run), a
   * retry's wait ends, and nothing new is sent; each ends with CS_ERR_ABORTED.
   */
  signal?: AbortSignal;
  /** Where the key came from, for the hint of a refused key (`source "eu"'s "api-key-file" /etc/eu.key`); the default names both ways. */
  keyFrom?: string;
  /** How the key is sent; the API accepts both. */
  authHeader?: 'x-api-key' | 'bearer';
  /** The source's limiter (one a source, shared by its streams); one is made from `requestsPerMinute` when absent. */
  limiter?: RequestLimiter;
  requestsPerMinute?: number;
  retry?: Partial<RetryPolicy>;
  timeouts?: Partial<Timeouts>;
  /** Bodies above this size are refused, so a hostile server cannot exhaust memory. */
  maxResponseBytes?: number;
  connections?: number;
  clock?: Clock;
  onEvent?: (event: ClientEvent) => void;
}

/**
 * Waits, once the source's limiter lets a request go, until the caller may take in its response (see
 * sync/page-slots.ts), and resolves to the function that gives the room back. The client gives it
 * back itself when the attempt fails; after a success it is the caller's, who gives it back once
 * the response is dealt with.
 */
export type Admit = () => Promise<() => void>;

export interface LineItemsQuery {
  startDate: string;
  endDate: string;
  limit?: number;
  cursor?: string | null;
  admit?: Admit;
}

export interface AnomaliesQuery {
  since?: string;
  limit?: number;
  provider_type?: string;
  severity?: string;
  status?: string;
}

export interface ApiClient {
  readonly baseUrl: string;
  readonly stats: ClientStats;
  lineItems(query: LineItemsQuery): Promise<LineItemPage>;
  rollups(query: { startDate: string; endDate: string; groupBy: GroupBy }): Promise<RollupRow[]>;
  anomalies(query?: AnomaliesQuery): Promise<Anomaly[]>;
  /** `body` as an object, or as JSON text already serialized. */
  ingestFocus(connectionId: string, body: IngestRequest | string): Promise<IngestResult>;
  ingestOtel(body: unknown): Promise<unknown>;
  close(): Promise<void>;
}

const LOOPBACK_HOSTS = new Set(['localhost', '[::1]', '::1']);

/** True for localhost, 127.0.0.0/8 and ::1. */
export function isLoopbackHost(hostname: string): boolean {
  return LOOPBACK_HOSTS.has(hostname) || /^127(\.\d{1,3}){3}$/.test(hostname);
}

/**
 * Checks and normalizes a base URL: https, or http on a loopback address only; no credentials,
 * query or fragment. Returns the origin and a path prefix without a trailing slash.
 */
export function parseBaseUrl(baseUrl: string): { origin: string; prefix: string } {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new ConfigError(`The base URL "${baseUrl}" is not a URL.`, 'Pass --base-url https://host (or set COSTSYNC_BASE_URL).');
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopbackHost(url.hostname))) {
    throw new ConfigError(
      `The base URL "${url.origin}" must use https (plain http is allowed only for loopback addresses such as 127.0.0.1).`,
      'Use https://, or run the emulator on 127.0.0.1 for local tests.',
    );
  }
  if (url.username || url.password || url.search || url.hash) {
    throw new ConfigError(
      'The base URL must not carry credentials, a query or a fragment.',
      'Pass the key with COSTSYNC_API_KEY or --api-key-file, not in the URL.',
    );
  }
  const prefix = url.pathname.replace(/\/+$/, '');
  const doubled = /\/api\/v1(\/public)?$/.exec(prefix);
  if (doubled !== null) {
    const kept = prefix.slice(0, doubled.index);
    throw new ConfigError(
      `The base URL "${url.origin}${prefix}" ends in ${doubled[0]}, which costsync adds to every request itself (it would ask for ${prefix}${API_PREFIX}/…).`,
      `Drop ${doubled[0]}: --base-url ${url.origin}${kept}`,
    );
  }
  return { origin: url.origin, prefix };
}

/** Failures that mean nothing answers at that host and port (a mistyped host, a closed port): a setting to fix, not a fault to wait out. */
export const UNREACHABLE_CODES: Record<string, string> = {
  ENOTFOUND: 'the host name does not resolve (DNS)',
  EAI_AGAIN: 'the host name could not be resolved (DNS did not answer)',
  ECONNREFUSED: 'nothing accepts connections at that host and port',
  EHOSTUNREACH: 'the host cannot be reached',
  ENETUNREACH: 'the network cannot be reached',
  // An https URL on a port that speaks plain http: the TLS handshake gets an HTTP answer.
  ERR_SSL_WRONG_VERSION_NUMBER: 'the server there does not speak TLS (an https URL on a plain http port?)',
  ERR_SSL_PACKET_LENGTH_TOO_LONG: 'the server there does not speak TLS (an https URL on a plain http port?)',
};

/** The errno code of a transport failure, looking through undici's wrappers. */
export function errnoOf(error: unknown): string | undefined {
  for (let e = error as { code?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 4; e = e.cause as typeof e, depth++) {
    if (typeof e.code === 'string' && e.code in UNREACHABLE_CODES) return e.code;
    if (Array.isArray((e as { errors?: unknown[] }).errors)) {
      for (const inner of (e as { errors: unknown[] }).errors) {
        const c = (inner as { code?: unknown }).code;
        if (typeof c === 'string' && c in UNREACHABLE_CODES) return c;
      }
    }
  }
  return undefined;
}

export function hintFor(
  apiCode: ApiErrorCode,
  method: string,
  path: string,
  scope: string | undefined,
  keyFrom?: string,
): string | undefined {
  switch (apiCode) {
    case 'UNAUTHORIZED':
      return `Check the key in ${keyFrom ?? 'COSTSYNC_API_KEY or --api-key-file'}; a revoked or expired key needs a new one (workspace settings, API, Create key).`;
    case 'PLAN_RESTRICTED':
      return 'API access needs a Business plan or above: upgrade the workspace plan, or use a key from a workspace on such a plan.';
    case 'INVALID_SCOPE':
      return `${method} ${path} needs a key with the scope ${scope ?? 'for this endpoint'}: create a key with that scope.`;
    case 'FORBIDDEN':
      return path.includes('/ingest/focus/')
        ? 'This ingest key is bound to another connection: use the connection id the key was created with, or a key for this connection.'
        : 'The key is valid but not allowed to do this.';
    case 'VALIDATION_ERROR':
      return 'The server refused a parameter; the message names it.';
    default:
      return undefined;
  }
}

function scopeFor(path: string): string | undefined {
  const endpoint = endpointOf(path);
  return endpoint === null ? undefined : ENDPOINT_SCOPES[endpoint];
}

/** Turns an error envelope (or a bare HTTP failure) into an ApiError. */
function apiErrorFrom(
  statusCode: number,
  envelope: Envelope<unknown> | null,
  method: string,
  path: string,
  retryAfter: string | undefined,
  nowMs: number,
  keyFrom?: string,
): ApiError {
  const apiCode = envelope?.error?.code;
  const message = envelope?.error?.message ?? `HTTP ${statusCode}`;
  const known = API_ERROR_CODES.includes(apiCode as ApiErrorCode) ? (apiCode as ApiErrorCode) : undefined;
  const code = known ? CODE_FOR_API_ERROR[known] : statusCode >= 500 ? 'CS_ERR_SERVER' : ClientErrorCode.HTTP;
  const authLike = known === 'UNAUTHORIZED' || known === 'FORBIDDEN' || known === 'INVALID_SCOPE' || known === 'PLAN_RESTRICTED';
  return new ApiError(code, `${method} ${path} failed: ${apiCode ?? 'HTTP'} (${statusCode}): ${message}`, {
    statusCode,
    apiCode,
    path,
    exitCode: authLike ? ExitCode.AUTH : ExitCode.FAILED,
    hint: known ? hintFor(known, method, path, scopeFor(path), keyFrom) : undefined,
    retryAfterMs: statusCode === 429 ? (retryAfterMs(retryAfter, message, nowMs) ?? 1000) : undefined,
  });
}

/** Classifies an undici/network failure. */
function transportError(error: unknown, method: string, path: string, secrets: string[], deadline?: AbortSignal): ApiError {
  const e = error as { code?: string; message?: string };
  const undiciErrors = undici().errors;
  const timeout =
    error instanceof undiciErrors.HeadersTimeoutError ||
    error instanceof undiciErrors.BodyTimeoutError ||
    error instanceof undiciErrors.ConnectTimeoutError ||
    deadline?.aborted === true;
  const detail =
    deadline?.aborted === true
      ? 'no complete response within the request deadline (a server sending its body too slowly)'
      : redact(`${e.code ?? ''} ${e.message ?? String(error)}`.trim(), secrets);
  return new ApiError(timeout ? ClientErrorCode.TIMEOUT : ClientErrorCode.NETWORK, `${method} ${path} failed: ${detail}`, {
    path,
    cause: error,
    hint: timeout
      ? 'The server was too slow; costsync retries, and the timeouts can be raised.'
      : 'Check the network and --base-url; costsync retries network failures.',
  });
}

export function createApiClient(options: ApiClientOptions): ApiClient {
  const { origin, prefix } = parseBaseUrl(options.baseUrl);
  if (!options.apiKey || /\s/.test(options.apiKey)) {
    throw new ConfigError(
      'The API key is empty or contains whitespace.',
      'Set COSTSYNC_API_KEY, or put the key alone in the file given to --api-key-file.',
    );
  }
  const secrets = [options.apiKey];
  const clock = options.clock ?? systemClock;
  const policy: RetryPolicy = { ...DEFAULT_RETRY_POLICY, ...options.retry };
  const timeouts: Timeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts };
  const maxBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const limiter = options.limiter ?? createRequestLimiter({ requestsPerMinute: options.requestsPerMinute ?? 60, clock });
  const ownsLimiter = options.limiter === undefined;
  const pool = new (undici().Pool)(origin, {
    connections: options.connections ?? 8,
    keepAliveTimeout: 30_000,
    connect: { timeout: timeouts.connectMs },
    headersTimeout: timeouts.headersMs,
    bodyTimeout: timeouts.bodyMs,
  });
  const stats: ClientStats = { requests: 0, retries: 0, rateLimited: 0 };
  const emit = (event: ClientEvent) => options.onEvent?.(event);
  // Until the first response, a host that does not resolve or refuses connections is a mistyped
  // --base-url: said at once (exit 2). After one, the same failure is a network fault, retried.
  let answered = false;
  let unreachable: ApiError | null = null;
  // A key the API does not know (401) fails every request of this client: the first refusal ends the rest.
  let keyRefused: ApiError | null = null;

  const stop = options.signal;

  /** Sends a request and waits for its status and headers; the body is read by `receive`, outside the limiter. */
  async function send(method: 'GET' | 'POST', path: string, body: string | undefined): Promise<Sent> {
    if (unreachable !== null) throw unreachable;
    if (keyRefused !== null) throw keyRefused;
    if (stop?.aborted) throw aborted(method, path.split('?')[0]!);
    const started = clock.now();
    // Errors and events name the path without its query (cursors are long and say nothing).
    const where = path.split('?')[0]!;
    stats.requests += 1;
    emit({ type: 'request', method, path: where });
    const deadline = AbortSignal.timeout(timeouts.totalMs);
    let response;
    try {
      response = await pool.request({
        method,
        path,
        signal: stop === undefined ? deadline : AbortSignal.any([deadline, stop]),
        headers: {
          ...(options.authHeader === 'bearer' ? { authorization: `Bearer ${options.apiKey}` } : { 'x-api-key': options.apiKey }),
          accept: 'application/json',
          'user-agent': 'costsync/0.1',
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        ...(body !== undefined ? { body } : {}),
      });
    } catch (error) {
      if (stop?.aborted) throw aborted(method, where, error);
      const errno = answered ? undefined : errnoOf(error);
      if (errno !== undefined) {
        // Every other request would fail the same way: they are dropped rather than each waiting its turn to fail.
        limiter.dropWaiting();
        throw (unreachable ??= new ApiError(
          ClientErrorCode.UNREACHABLE,
          `Cannot reach the API at ${origin}: ${UNREACHABLE_CODES[errno]} (${errno}).`,
          {
            path: where,
            cause: error,
            exitCode: ExitCode.USAGE,
            hint: errno.startsWith('ERR_SSL_')
              ? `Check the scheme and port of --base-url: ${origin} was given; a plain http server takes http:// (on a loopback address only), an https one its TLS port.`
              : `Check --base-url (or COSTSYNC_BASE_URL / "base-url" in the config file): ${origin} is what costsync was given.`,
          },
        ));
      }
      throw transportError(error, method, where, secrets, deadline);
    }
    answered = true;
    return { method, where, started, deadline, response };
  }

  /** A sent request's body as text, with its status and `Retry-After` (judged by `judge`). */
  async function receive({ method, where, started, deadline, response }: Sent): Promise<RawResponse> {
    let text = '';
    try {
      text = await readLimited(response.body, maxBytes);
    } catch (error) {
      if (error instanceof ApiError) throw error;
      if (stop?.aborted) throw aborted(method, where, error);
      throw transportError(error, method, where, secrets, deadline);
    }
    if (text === TOO_LARGE) {
      throw new ApiError(ClientErrorCode.RESPONSE_TOO_LARGE, `${method} ${where}: the response is larger than ${maxBytes} bytes`, {
        path: where,
        statusCode: response.statusCode,
        hint: 'A page this large is not one the API sends; check --base-url.',
      });
    }
    const statusCode = response.statusCode;
    emit({ type: 'response', method, path: where, statusCode, ms: clock.now() - started });
    const header = response.headers['retry-after'];
    return { method, where, statusCode, retryAfter: Array.isArray(header) ? header[0] : header, text };
  }

  /** A response's envelope, or the error its status or body says. */
  function judge({ method, where, statusCode, retryAfter, text }: RawResponse): Envelope<unknown> {
    let envelope: Envelope<unknown> | null = null;
    try {
      envelope = parseEnvelope(text, where, statusCode);
    } catch (error) {
      // A failed status with a non-JSON body (a proxy's HTML page, say) is judged by its status.
      if (statusCode < 200 || statusCode >= 300)
        throw apiErrorFrom(statusCode, null, method, where, retryAfter, clock.now(), options.keyFrom);
      throw error;
    }
    if (statusCode < 200 || statusCode >= 300 || envelope.error !== null) {
      if (statusCode >= 200 && statusCode < 300) {
        throw new ApiError(
          ClientErrorCode.MALFORMED_RESPONSE,
          `${method} ${where}: status ${statusCode} with an error in the envelope (${envelope.error!.code}: ${envelope.error!.message})`,
          {
            path: where,
            statusCode,
            apiCode: envelope.error!.code,
          },
        );
      }
      throw apiErrorFrom(statusCode, envelope, method, where, retryAfter, clock.now(), options.keyFrom);
    }
    return envelope;
  }

  async function call<T>(
    method: 'GET' | 'POST',
    path: string,
    body: string | undefined,
    convert: (e: Envelope<unknown>, text: string) => T,
    admit?: Admit,
  ): Promise<T> {
    const where = path.split('?')[0]!;
    return withRetries(
      async () => {
        let release: (() => void) | undefined;
        try {
          const sent = await limiter.schedule(async () => {
            release = await admit?.();
            return send(method, path, body);
          });
          // The body is read once the limiter has handed the response over (a turn of the event loop
          // later, a long one with many sources), then parsed
          // and handed to the caller in the turn its last bytes came: no parsed page waits through
          // the hand-over while other pages are parsed.
          const raw = await receive(sent);
          return convert(judge(raw), raw.text);
        } catch (error) {
          release?.();
          if (error instanceof ApiError && error.code === 'CS_ERR_UNAUTHORIZED' && keyRefused === null) {
            // The requests waiting their turn are dropped, not each sent to be refused in turn.
            keyRefused = error;
            limiter.dropWaiting();
          }
          if ((error as Error | undefined)?.message === DROPPED_MESSAGE) {
            if (unreachable !== null) throw unreachable;
            if (keyRefused !== null) throw keyRefused;
            throw aborted(method, where, error);
          }
          throw error;
        }
      },
      { method, where, policy, stop, stats, emit, holdFor: (ms) => limiter.holdFor(ms) },
    );
  }

  const get = <T>(
    endpoint: string,
    params: Record<string, string | number | undefined | null>,
    convert: (e: Envelope<unknown>, path: string, text: string) => T,
    admit?: Admit,
  ) => {
    const search = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null) search.set(k, String(v));
    const query = search.toString();
    const path = `${prefix}${API_PREFIX}${endpoint}${query ? `?${query}` : ''}`;
    return call('GET', path, undefined, (e, text) => convert(e, `${prefix}${API_PREFIX}${endpoint}`, text), admit);
  };
  const post = <T>(endpoint: string, body: unknown, convert: (e: Envelope<unknown>, path: string) => T) => {
    const path = `${prefix}${API_PREFIX}${endpoint}`;
    // A body already serialized (push builds its rows as JSON text) is sent as it is.
    return call('POST', path, typeof body === 'string' ? body : JSON.stringify(body), (e) => convert(e, path));
  };

  return {
    baseUrl: `${origin}${prefix}`,
    stats,
    lineItems: (q) =>
      get('/line-items', { start_date: q.startDate, end_date: q.endDate, limit: q.limit, cursor: q.cursor }, toLineItemPage, q.admit),
    rollups: (q) => get('/rollups/daily', { start_date: q.startDate, end_date: q.endDate, group_by: q.groupBy }, toRollups),
    anomalies: (q = {}) => get('/anomalies', { ...q }, toAnomalies),
    ingestFocus: (connectionId, body) => post(`/ingest/focus/${encodeURIComponent(connectionId)}`, body, toIngestResult),
    ingestOtel: (body) => post('/ingest/otel', body, (e) => e.data),
    async close() {
      if (ownsLimiter) await limiter.stop();
      await pool.close();
    },
  };
}

const TOO_LARGE = '\u0000too-large';

/** Reads a body as text, stopping (and discarding the rest) past `limit` bytes. */
interface Sent {
  method: 'GET' | 'POST';
  /** The path without its query. */
  where: string;
  started: number;
  deadline: AbortSignal;
  response: Dispatcher.ResponseData;
}

interface RawResponse {
  method: 'GET' | 'POST';
  /** The path without its query. */
  where: string;
  statusCode: number;
  retryAfter: string | undefined;
  text: string;
}

async function readLimited(body: AsyncIterable<Buffer> & { destroy(): void }, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > limit) {
      body.destroy();
      return TOO_LARGE;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
