/**
 * The Cost Data API emulator: a loopback HTTP server implementing every endpoint, rule and error of
 * the spec, with seeded data, a per-key sliding-window rate limit, and fault injection. Tests,
 * benchmarks and the demo run against it; users can test their own pipelines against it.
 */
import { randomBytes } from 'node:crypto';
import { keyFingerprint } from '../fingerprint.js';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import {
  ANOMALY_STATUSES,
  API_PLANS,
  API_PREFIX,
  ENDPOINT_SCOPES,
  GROUP_BYS,
  SEVERITIES,
  type Anomaly,
  type AnomalyStatus,
  type GroupBy,
  type IngestResult,
  type LineItem,
  type Scope,
} from '../api/types.js';
import { addDays, isCalendarDate, toDayNumber, utcDate } from '../dates.js';
import { CursorCodec, type CursorPayload } from './cursor.js';
import { CHANGE_ACTIONS, CONTROL_PREFIX, DataChanges, parseChange, type ChangeAction } from './changes.js';
import {
  DataChangeError,
  Dataset,
  type AnomalyBurst,
  type DayRestatement,
  type DayRestatementResult,
  type RestatementOptions,
} from './dataset.js';
import { FaultInjector, NO_FAULTS, type FaultKind, type FaultOptions } from './faults.js';
import {
  IngestRequestError,
  IngestTooLargeError,
  ingestFocus,
  serviceVerdict,
  type ChargePeriodDates,
  type DuplicateRows,
  type IngestVerdict,
  type InvalidRows,
  type RowErrorShape,
} from './ingest.js';
import { defaultKeys, type KeyConfig, type KeysConfig } from './keys.js';
import { SlidingWindowLimiter } from './rate-limit.js';
import { RequestLog, type LoggedRequest } from './request-log.js';
import { createRng, hashString, shuffleInPlace } from './rng.js';

export type AnomalyOrder = 'asc' | 'desc' | 'unordered';
export type LineItemOrder = 'date' | 'shuffled';
/**
 * `position`: signed cursors that name the next record's place, stable when data changes.
 * `offset`: cursors that are a count of records to skip in the data as it is at each request, as
 * some real APIs do: rows deleted or added before the offset shift what the next page returns.
 */
export type CursorMode = 'position' | 'offset';
/** How the last line-item page reports "no cursor" (the spec does not show it). */
export type LastPageCursor = 'null' | 'omit' | 'empty';
/**
 * How a request above `maxIngestRows` or `maxBodyBytes` is refused (the spec shows neither limit):
 * 400 VALIDATION_ERROR, or 413 with the code PAYLOAD_TOO_LARGE, as a proxy in front of a server may answer.
 */
export type TooLarge = 'validation-error' | 'payload-too-large';
export type { ChargePeriodDates, DuplicateRows, InvalidRows, RowErrorShape };

export interface EmulatorOptions {
  port: number;
  host: string;
  seed: number;
  /** Data span; default: the 120 days ending today (UTC, by `clock`). */
  startDate: string;
  endDate: string;
  rowsPerDay: number;
  anomaliesPerDay: number;
  anomalyBursts: AnomalyBurst[];
  anomalyOrder: AnomalyOrder;
  lineItemOrder: LineItemOrder;
  lastPageCursor: LastPageCursor;
  cursorMode: CursorMode;
  /** Restate before answering the Nth line-items request that carries a cursor (0: never). */
  restateAtPage: number;
  /** Requests per minute per key; 0 turns the limit off. */
  rateLimit: number;
  /** Send `Retry-After` on 429 (the spec does not name the header). */
  retryAfterHeader: boolean;
  keys: KeysConfig;
  /** The vendor word in `x_<vendor>_…` columns and in the `<vendor>.focus` format name. */
  vendor: string;
  maxIngestRows: number;
  maxBodyBytes: number;
  ingestTooLarge: TooLarge;
  /** What an invalid ingest row does to its request (see `InvalidRows`). */
  ingestInvalidRows: InvalidRows;
  /** What a row with an already-ingested line-item id does (see `DuplicateRows`). */
  ingestDuplicateRows: DuplicateRows;
  /** The shape of the elements of an ingest result's `errors`. */
  ingestRowErrorShape: RowErrorShape;
  /** What the charge period columns of an ingest row may hold. */
  ingestChargePeriodDates: ChargePeriodDates;
  /** Rows the server refuses or skips for reasons of its own (see `IngestVerdict`; from the command line, by service). */
  ingestVerdict?: IngestVerdict;
  /** Ingest rows whose ServiceName starts with one of these are refused (`--ingest-refuse-service`), when no `ingestVerdict` is given. */
  ingestRefuseServices?: readonly string[];
  /** Ingest rows whose ServiceName starts with one of these are skipped (`--ingest-skip-service`), when no `ingestVerdict` is given. */
  ingestSkipServices?: readonly string[];
  /** For `group_by=service`, also fill `provider_type`. */
  serviceRollupFillsProvider: boolean;
  /** Chance that a continued page repeats the last records of the previous one. */
  pageOverlapRate: number;
  restatement: RestatementOptions;
  faults: FaultOptions;
  /** Time source for expiry, anomaly statuses and the rate limit; real time by default. */
  clock: { now(): number };
  /** Waits out the injected latency (`faults.latencyMs`); real time by default, a recording one in tests. */
  sleep?: (ms: number) => Promise<void>;
  /** Called after each request is answered (the CLI's --log-requests). */
  onRequest?: (entry: LoggedRequest) => void;
  /** Awaited before an authorized request is answered: tests hold a client mid-run to look at its files. */
  beforeReply?: (request: { route: string; method: string }) => Promise<void> | void;
}

export interface Emulator {
  readonly url: string;
  readonly port: number;
  readonly options: EmulatorOptions;
  readonly requestLog: RequestLog;
  /** What the server did with each FOCUS ingest request it answered, by batch id (its answer, as sent). */
  readonly ingestResults: ReadonlyMap<string, IngestResult>;
  readonly faults: FaultInjector;
  /** The data of keys without a workspace. */
  readonly dataset: Dataset;
  /** The data of a workspace (created on first use). */
  datasetOf(workspace: string | undefined): Dataset;
  /** Late-arriving data: changes and deletes some line items of the last `restatement.days` days. */
  restate(): void;
  /** A day's generated line items are withdrawn (its rollups follow). */
  emptyDay(date: string): void;
  /**
   * Restates one day of any age (YYYY-MM-DD in the span): some line items change their amount, some
   * disappear, `addRows` late rows arrive (defaults: 0.1, 0.05, 0); rollups follow. Each call changes
   * the day again. Without `workspace`, every workspace's data; the counts are the default workspace's.
   */
  restateDay(date: string, change?: Partial<DayRestatement> & { workspace?: string }): DayRestatementResult;
  /**
   * Corrects one line item's usage date from `from` to `to`: the same id and amount, on the other day.
   * `id` picks it; without one, the first line item of `from` moves. Returns the id moved.
   */
  moveLineItem(from: string, to: string, options?: { id?: string; workspace?: string }): string;
  /** Sets an old alert's status, by id or as the oldest alert detected on `date`. Returns its id. */
  setAnomalyStatus(target: { id: string } | { date: string }, status: AnomalyStatus, options?: { workspace?: string }): string;
  close(): Promise<void>;
}

/** What callers pass: any option, and any part of the nested fault and restatement settings. */
export type EmulatorInput = Partial<Omit<EmulatorOptions, 'faults' | 'restatement'>> & {
  faults?: Partial<FaultOptions>;
  restatement?: Partial<RestatementOptions>;
};

export const DEFAULT_SPAN_DAYS = 120;

/** Fills in defaults; the span defaults to the 120 days ending today by the given clock. */
export function resolveEmulatorOptions(input: EmulatorInput = {}): EmulatorOptions {
  const clock = input.clock ?? { now: () => Date.now() };
  const endDate = input.endDate ?? utcDate(clock.now());
  return {
    port: 0,
    host: '127.0.0.1',
    seed: 1,
    startDate: input.startDate ?? addDays(endDate, -(DEFAULT_SPAN_DAYS - 1)),
    rowsPerDay: 200,
    anomaliesPerDay: 3,
    anomalyBursts: [],
    anomalyOrder: 'desc',
    lineItemOrder: 'date',
    lastPageCursor: 'null',
    cursorMode: 'position',
    restateAtPage: 0,
    rateLimit: 60,
    retryAfterHeader: true,
    keys: defaultKeys(),
    vendor: 'service',
    maxIngestRows: 5000,
    maxBodyBytes: 16 * 1024 * 1024,
    ingestTooLarge: 'validation-error',
    ingestInvalidRows: 'skip',
    ingestDuplicateRows: 'skip',
    ingestRowErrorShape: 'object',
    ingestChargePeriodDates: 'date-or-time',
    serviceRollupFillsProvider: false,
    pageOverlapRate: 0,
    ...input,
    endDate,
    restatement: { days: 3, changeRate: 0.1, deleteRate: 0.05, ...input.restatement },
    faults: { ...NO_FAULTS, ...input.faults },
    clock,
  };
}

interface Reply {
  status: number;
  data?: unknown;
  error?: { code: string; message: string };
  meta?: Record<string, unknown>;
  headers?: Record<string, string>;
  /** Leave `meta.next_cursor` out of the body (emulating servers that omit it). */
  omitNextCursor?: boolean;
}

const ok = (data: unknown, meta: Record<string, unknown> = {}, status = 200): Reply => ({ status, data, meta });
const fail = (status: number, code: string, message: string, headers?: Record<string, string>): Reply => ({
  status,
  error: { code, message },
  ...(headers ? { headers } : {}),
});
const invalid = (message: string) => fail(400, 'VALIDATION_ERROR', message);

class BadRequest extends Error {}

interface Route {
  name: string;
  method: 'GET' | 'POST';
  scope: Scope;
  match: (path: string) => Record<string, string> | null;
}

const exact = (p: string) => (path: string) => (path === p ? {} : null);
const ROUTES: Route[] = [
  { name: 'line-items', method: 'GET', scope: ENDPOINT_SCOPES.lineItems, match: exact(`${API_PREFIX}/line-items`) },
  { name: 'rollups', method: 'GET', scope: ENDPOINT_SCOPES.rollups, match: exact(`${API_PREFIX}/rollups/daily`) },
  { name: 'anomalies', method: 'GET', scope: ENDPOINT_SCOPES.anomalies, match: exact(`${API_PREFIX}/anomalies`) },
  { name: 'ingest-otel', method: 'POST', scope: ENDPOINT_SCOPES.ingest, match: exact(`${API_PREFIX}/ingest/otel`) },
  {
    name: 'ingest-focus',
    method: 'POST',
    scope: ENDPOINT_SCOPES.ingest,
    match: (path) => {
      const m = /^\/api\/v1\/public\/ingest\/focus\/([^/]+)$/.exec(path);
      return m ? { connectionId: decodeURIComponent(m[1]!) } : null;
    },
  },
];

export async function startEmulator(input: EmulatorInput = {}): Promise<Emulator> {
  const options = resolveEmulatorOptions(input);
  const dataset = new Dataset(options);
  // Each workspace (a key's `workspace`) has its own seeded data; keys without one share the first.
  const workspaces = new Map<string, Dataset>([['default', dataset]]);
  const datasetOf = (workspace: string | undefined): Dataset => {
    const name = workspace ?? 'default';
    let ds = workspaces.get(name);
    if (!ds) {
      ds = new Dataset({ ...options, seed: hashString(`${options.seed}:${name}`) });
      workspaces.set(name, ds);
      changes.replayOn(ds);
    }
    return ds;
  };
  const changes = new DataChanges({
    datasetOf,
    all: () => [...workspaces.values()],
    known: () => [...new Set(['default', ...options.keys.keys.flatMap((k) => (k.workspace ? [k.workspace] : [])), ...workspaces.keys()])],
  });
  const faults = new FaultInjector(options.faults, options.faults.seed ?? options.seed);
  const requestLog = new RequestLog();
  const ingestResults = new Map<string, IngestResult>();
  // Made once, and only when asked for: without one, an ingest row asks no verdict.
  const refuse = options.ingestRefuseServices ?? [];
  const skip = options.ingestSkipServices ?? [];
  const ingestVerdict = options.ingestVerdict ?? (refuse.length > 0 || skip.length > 0 ? serviceVerdict(refuse, skip) : undefined);
  const limiter = new SlidingWindowLimiter(options.rateLimit);
  // A fresh secret per server: cursors from another emulator instance are foreign.
  const cursors = new CursorCodec(`${options.seed}:${randomBytes(16).toString('hex')}`);
  const keysByValue = new Map(options.keys.keys.map((k) => [k.key, k]));
  const connections = new Map(options.keys.connections.map((c) => [c.id, c]));
  const rng = createRng(options.seed ^ 0x0e7a);
  let apiRequests = 0;
  let continuedPages = 0;
  let batches = 0;

  function authenticate(req: IncomingMessage): KeyConfig | Reply {
    const headerKey = req.headers['x-api-key'];
    const auth = req.headers.authorization;
    let key: string | undefined;
    if (typeof headerKey === 'string' && headerKey.trim() !== '') {
      key = headerKey.trim();
    } else if (typeof auth === 'string') {
      const m = /^Bearer\s+(\S+)\s*$/i.exec(auth);
      if (!m)
        return fail(401, 'UNAUTHORIZED', 'Malformed Authorization header: send "Authorization: Bearer <API_KEY>" or the header X-API-Key.');
      key = m[1]!;
    }
    if (!key) return fail(401, 'UNAUTHORIZED', 'No API key: send it in the X-API-Key header or as "Authorization: Bearer <API_KEY>".');
    const config = keysByValue.get(key);
    if (!config) return fail(401, 'UNAUTHORIZED', 'Unknown API key: check the key, or create one in the workspace settings under API.');
    if (config.revoked) return fail(401, 'UNAUTHORIZED', 'This API key was revoked: create a new key in the workspace settings under API.');
    if (config.expires_at && Date.parse(config.expires_at) <= options.clock.now()) {
      return fail(
        401,
        'UNAUTHORIZED',
        `This API key expired at ${config.expires_at}: create a new key in the workspace settings under API.`,
      );
    }
    return config;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://emulator.invalid');
    const path = url.pathname.replace(/\/+$/, '') || '/';
    let routeName = 'unknown';
    let workspace: string | undefined = undefined;
    const respond = (reply: Reply, fault: FaultKind | null = null) => {
      const entry: LoggedRequest = {
        method: req.method ?? '?',
        route: routeName,
        ...(url.search !== '' ? { query: url.search.slice(1) } : {}),
        status: fault === 'drop' ? 0 : reply.status,
        code: reply.error?.code ?? null,
        atMs: options.clock.now(),
        ...(workspace !== undefined ? { workspace } : {}),
      };
      requestLog.record(entry);
      options.onRequest?.(entry);
      send(res, reply, fault);
    };

    if (path === CONTROL_PREFIX || path.startsWith(`${CONTROL_PREFIX}/`)) {
      routeName = path.slice(1);
      return respond(await control(path, req));
    }

    const matches = ROUTES.map((r) => ({ route: r, params: r.match(path) })).filter((m) => m.params !== null);
    if (matches.length === 0) {
      await drain(req);
      return respond(
        fail(
          404,
          'NOT_FOUND',
          `No endpoint at ${path}. Endpoints live under ${API_PREFIX}/: line-items, rollups/daily, anomalies, ingest/focus/:connectionId, ingest/otel.`,
        ),
      );
    }
    const hit = matches.find((m) => m.route.method === req.method);
    if (!hit) {
      await drain(req);
      routeName = matches[0]!.route.name;
      const allow = matches.map((m) => m.route.method).join(', ');
      return respond({
        ...fail(405, 'METHOD_NOT_ALLOWED', `${req.method} is not allowed on ${path}; use ${allow}.`),
        headers: { Allow: allow },
      });
    }
    const { route } = hit;
    const params = hit.params!;
    routeName = route.name;

    let bodyText = '';
    if (route.method === 'POST') {
      const read = await readBody(req, options.maxBodyBytes);
      if (read === null) return respond(tooLarge(`Request body exceeds ${options.maxBodyBytes} bytes: send fewer rows per request.`));
      bodyText = read;
    }

    const key = authenticate(req);
    if (!('key' in key)) return respond(key);
    workspace = key.workspace ?? 'default';
    const rate = limiter.take(key.key, options.clock.now());
    if (!rate.allowed) return respond(rateLimited(rate.retryAfterMs));
    if (!API_PLANS.includes(key.plan)) {
      return respond(
        fail(
          403,
          'PLAN_RESTRICTED',
          `API access needs a Business plan or above; this workspace is on the ${key.plan} plan. Upgrade the workspace plan to use the API.`,
        ),
      );
    }
    if (!key.scopes.includes(route.scope)) {
      return respond(
        fail(
          403,
          'INVALID_SCOPE',
          `This key lacks the scope ${route.scope}, which ${req.method} ${path} requires. Create a key with that scope.`,
        ),
      );
    }

    await options.beforeReply?.({ route: route.name, method: route.method });
    apiRequests += 1;
    if (options.faults.restateEveryRequests > 0 && apiRequests % options.faults.restateEveryRequests === 0)
      datasetOf(key.workspace).restate();
    const decision = faults.decide(path, url.searchParams.has('cursor'));
    if (decision.delayMs > 0) await (options.sleep ?? ((ms: number) => delay(ms)))(decision.delayMs);
    if (decision.kind === 'error500')
      return respond(fail(500, 'INTERNAL_ERROR', 'Unexpected server error (injected). Retry with exponential backoff.'));
    if (decision.kind === 'rateLimit') return respond(rateLimited(1000));
    const wireFault = decision.kind === 'drop' || decision.kind === 'truncate' || decision.kind === 'malformed' ? decision.kind : null;

    let reply: Reply;
    try {
      reply = dispatch(route.name, url.searchParams, params, key, bodyText, req, decision.kind === 'expireCursor');
    } catch (error) {
      if (error instanceof BadRequest) reply = invalid(error.message);
      else reply = fail(500, 'INTERNAL_ERROR', `Unexpected server error: ${(error as Error).message}`);
    }
    respond(reply, wireFault);
  }

  /**
   * The control endpoints: a person (or `costsync emulator change`) changes old data while clients sync.
   * They are the tester's hand, not the API under test: no key, no rate limit, no injected faults (a
   * fault there would only make a test's setup flaky).
   */
  async function control(path: string, req: IncomingMessage): Promise<Reply> {
    const action = path.slice(CONTROL_PREFIX.length + 1);
    const paths = CHANGE_ACTIONS.map((a) => `${CONTROL_PREFIX}/${a}`).join(', ');
    if (!CHANGE_ACTIONS.includes(action as ChangeAction)) {
      await drain(req);
      return fail(404, 'NOT_FOUND', `No control endpoint at ${path}. POST a JSON object to one of ${paths}.`);
    }
    if (req.method !== 'POST') {
      await drain(req);
      return { ...fail(405, 'METHOD_NOT_ALLOWED', `${req.method} is not allowed on ${path}; use POST.`), headers: { Allow: 'POST' } };
    }
    const body = await readBody(req, options.maxBodyBytes);
    if (body === null) return invalid(`Request body exceeds ${options.maxBodyBytes} bytes: a change is a small JSON object.`);
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch (error) {
      return invalid(`The body is not valid JSON (${(error as Error).message}). Send a JSON object.`);
    }
    try {
      return ok(changes.apply(parseChange(action as ChangeAction, parsed), options.clock.now()));
    } catch (error) {
      if (error instanceof DataChangeError) return invalid(error.message);
      throw error;
    }
  }

  function tooLarge(message: string): Reply {
    return options.ingestTooLarge === 'payload-too-large' ? fail(413, 'PAYLOAD_TOO_LARGE', message) : invalid(message);
  }

  function rateLimited(retryAfterMs: number): Reply {
    const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
    return fail(
      429,
      'RATE_LIMITED',
      `Rate limit of ${options.rateLimit || 'the'} requests per minute exceeded for this key; retry after ${seconds} seconds.`,
      options.retryAfterHeader ? { 'Retry-After': String(seconds) } : undefined,
    );
  }

  function dispatch(
    name: string,
    q: URLSearchParams,
    params: Record<string, string>,
    key: KeyConfig,
    body: string,
    req: IncomingMessage,
    expireCursor: boolean,
  ): Reply {
    const ds = datasetOf(key.workspace);
    switch (name) {
      case 'line-items':
        return lineItems(q, key, expireCursor, ds);
      case 'rollups':
        return rollups(q, ds);
      case 'anomalies':
        return anomalies(q, ds);
      case 'ingest-focus':
        return ingest(params.connectionId!, key, body, req, ds);
      default:
        return otel(body, req);
    }
  }

  function lineItems(q: URLSearchParams, key: KeyConfig, expireCursor: boolean, ds: Dataset): Reply {
    const { startDay, endDay, start, end } = dateRange(q);
    const limit = intParam(q, 'limit', 50, 1, 1000);
    const cursorText = single(q, 'cursor');
    // Cursors index a workspace's data: a rotated key of the same workspace may go on with them.
    const keyFp = keyFingerprint(`workspace:${key.workspace ?? 'default'}`);
    if (cursorText !== undefined && options.restateAtPage > 0 && ++continuedPages === options.restateAtPage) ds.restate();
    if (options.cursorMode === 'offset') return lineItemsByOffset(start, end, startDay, endDay, limit, cursorText, ds);
    let day = startDay;
    let index = 0;
    if (cursorText !== undefined) {
      const check = cursors.decode(cursorText);
      if (!check.ok)
        return invalid(
          `Invalid cursor: ${check.reason}. Send meta.next_cursor from the previous page exactly, or start again without a cursor.`,
        );
      const c = check.payload;
      if (c.s !== start || c.e !== end || c.k !== keyFp) {
        return invalid(
          'Invalid cursor: it belongs to a different query (dates or workspace). Send it with the same start_date and end_date, or start again without a cursor.',
        );
      }
      const ttl = options.faults.cursorTtlMs;
      if (expireCursor || (ttl > 0 && options.clock.now() - c.t > ttl)) {
        return invalid('Invalid cursor: it has expired. Start the query again from the first page, without a cursor.');
      }
      day = c.d;
      index = c.i;
      if (options.pageOverlapRate > 0 && index >= 3 && rng() < options.pageOverlapRate) index -= 1 + Math.floor(rng() * 3);
    }

    const data: LineItem[] = [];
    // Step over days without rows quickly; ingested days may lie outside the generated span.
    const lastDataDay = Math.min(endDay, Math.max(ds.endDay, ...ds.ingestedDays()));
    while (day <= lastDataDay && data.length < limit) {
      const slots = ds.slots(day);
      while (index < slots && data.length < limit) {
        const item = ds.itemAt(day, index);
        index += 1;
        if (item) data.push(item.record);
      }
      if (index >= slots) {
        day += 1;
        index = 0;
      }
    }
    let hasMore = false;
    for (let d = day; d <= lastDataDay && !hasMore; d++) hasMore = ds.slots(d) > (d === day ? index : 0);
    if (options.lineItemOrder === 'shuffled') shuffleInPlace(data, createRng(hashString(`${day}:${index}:${data.length}`)));

    const payload: CursorPayload = { s: start, e: end, k: keyFp, d: day, i: index, t: options.clock.now() };
    const next = hasMore ? cursors.encode(payload) : options.lastPageCursor === 'empty' ? '' : null;
    const reply = ok(data, { next_cursor: next, has_more: hasMore });
    if (!hasMore && options.lastPageCursor === 'omit') reply.omitNextCursor = true;
    return reply;
  }

  /**
   * `--cursor-mode offset`: the cursor is base64 of {"offset": N} (bound to the dates): skip N live
   * records of the data as it is now. Walks from the first day on every page, which is fine for the
   * test sizes this mode is for.
   */
  function lineItemsByOffset(
    start: string,
    end: string,
    startDay: number,
    endDay: number,
    limit: number,
    cursorText: string | undefined,
    ds: Dataset,
  ): Reply {
    let offset = 0;
    if (cursorText !== undefined) {
      type OffsetCursor = { offset?: unknown; s?: unknown; e?: unknown };
      let parsed: OffsetCursor | null;
      try {
        parsed = JSON.parse(Buffer.from(cursorText, 'base64url').toString('utf8')) as OffsetCursor | null;
      } catch {
        parsed = null;
      }
      if (parsed === null || typeof parsed.offset !== 'number' || !Number.isInteger(parsed.offset) || parsed.offset < 0) {
        return invalid('Invalid cursor: send meta.next_cursor from the previous page exactly, or start again without a cursor.');
      }
      if (parsed.s !== start || parsed.e !== end)
        return invalid('Invalid cursor: it belongs to a different query (dates). Send it with the same start_date and end_date.');
      offset = parsed.offset;
    }
    const data: LineItem[] = [];
    let skipped = 0;
    let hasMore = false;
    const lastDataDay = Math.min(endDay, Math.max(ds.endDay, ...ds.ingestedDays()));
    scan: for (let day = startDay; day <= lastDataDay; day++) {
      const slots = ds.slots(day);
      for (let index = 0; index < slots; index++) {
        const item = ds.itemAt(day, index);
        if (!item) continue;
        if (skipped < offset) {
          skipped += 1;
        } else if (data.length < limit) {
          data.push(item.record);
        } else {
          hasMore = true;
          break scan;
        }
      }
    }
    const next = hasMore ? Buffer.from(JSON.stringify({ offset: offset + data.length, s: start, e: end })).toString('base64url') : null;
    return ok(data, { next_cursor: next, has_more: hasMore });
  }

  function rollups(q: URLSearchParams, ds: Dataset): Reply {
    const { startDay, endDay } = dateRange(q);
    const groupBy = single(q, 'group_by');
    if (groupBy === undefined) throw new BadRequest('group_by is required: one of provider, service, category.');
    if (!GROUP_BYS.includes(groupBy as GroupBy))
      throw new BadRequest(`group_by must be one of provider, service, category; got "${groupBy}".`);
    return ok(ds.rollups(startDay, endDay, groupBy as GroupBy));
  }

  function anomalies(q: URLSearchParams, ds: Dataset): Reply {
    const limit = intParam(q, 'limit', 10, 1, 100);
    const since = single(q, 'since');
    let sinceMs = -Infinity;
    if (since !== undefined) {
      const ms = parseTimestamp(since);
      if (ms === null) throw new BadRequest(`since must be an ISO 8601 timestamp such as 2025-01-31T00:00:00Z; got "${since}".`);
      sinceMs = ms;
    }
    const severity = enumParam(q, 'severity', SEVERITIES);
    const status = enumParam(q, 'status', ANOMALY_STATUSES);
    const provider = single(q, 'provider_type');
    if (provider === '') throw new BadRequest('provider_type must not be empty: leave it out to get every provider.');
    let list = ds
      .anomaliesAt(options.clock.now())
      .filter(
        ({ anomaly, detectedMs }) =>
          detectedMs > sinceMs &&
          (severity === undefined || anomaly.severity === severity) &&
          (status === undefined || anomaly.status === status) &&
          (provider === undefined || anomaly.provider_type === provider),
      );
    if (options.anomalyOrder === 'unordered') {
      list = shuffleInPlace(list, createRng(hashString(`${options.seed}:${q.toString()}`)));
    } else {
      const sign = options.anomalyOrder === 'asc' ? 1 : -1;
      list.sort((a, b) => sign * (a.detectedMs - b.detectedMs || (a.anomaly.id < b.anomaly.id ? -1 : 1)));
    }
    return ok(list.slice(0, limit).map((x): Anomaly => x.anomaly));
  }

  function jsonBody(body: string, req: IncomingMessage): unknown {
    const type = String(req.headers['content-type'] ?? '');
    if (!/^application\/json\b/i.test(type)) {
      throw new BadRequest(`Content-Type must be application/json; got "${type || 'none'}".`);
    }
    try {
      return JSON.parse(body);
    } catch (error) {
      throw new BadRequest(`The body is not valid JSON (${(error as Error).message}). Send a JSON object.`);
    }
  }

  function ingest(connectionId: string, key: KeyConfig, body: string, req: IncomingMessage, ds: Dataset): Reply {
    if (key.connection_id !== undefined && key.connection_id !== connectionId) {
      return fail(
        403,
        'FORBIDDEN',
        `This ingest key is bound to connection "${key.connection_id}" and cannot write to "${connectionId}". Use that connection's id, or a key for this connection.`,
      );
    }
    const connection = connections.get(connectionId);
    if (!connection) {
      // The spec has no not-found code; an unknown path parameter is an invalid value.
      return invalid(
        `Unknown connection id "${connectionId}": create the custom provider connection in the workspace's integration settings, and use its id.`,
      );
    }
    const parsed = jsonBody(body, req);
    batches += 1;
    try {
      const result = ingestFocus(parsed, {
        dataset: ds,
        connectionId,
        providerType: connection.provider_type,
        vendor: options.vendor,
        maxRows: options.maxIngestRows,
        batchId: `batch-${options.seed}-${batches}-${randomBytes(4).toString('hex')}`,
        rules: {
          invalidRows: options.ingestInvalidRows,
          duplicateRows: options.ingestDuplicateRows,
          rowErrorShape: options.ingestRowErrorShape,
          chargePeriodDates: options.ingestChargePeriodDates,
          verdict: ingestVerdict,
        },
      });
      ingestResults.set(result.batch_id, result);
      return ok(result, {}, 202);
    } catch (error) {
      if (error instanceof IngestTooLargeError) return tooLarge(error.message);
      if (error instanceof IngestRequestError) throw new BadRequest(error.message);
      throw error;
    }
  }

  function otel(body: string, req: IncomingMessage): Reply {
    const parsed = jsonBody(body, req);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      throw new BadRequest('The OTel body must be a JSON object.');
    }
    batches += 1;
    return ok({ accepted: true, batch_id: `otel-${options.seed}-${batches}`, received_bytes: Buffer.byteLength(body) }, {}, 202);
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) send(res, fail(500, 'INTERNAL_ERROR', `Unexpected server error: ${(error as Error).message}`), null);
    });
  });
  server.keepAliveTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const hostForUrl = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  return {
    url: `http://${hostForUrl}:${address.port}`,
    port: address.port,
    options,
    requestLog,
    ingestResults,
    faults,
    dataset,
    datasetOf,
    restate: () => {
      for (const ds of workspaces.values()) ds.restate();
    },
    emptyDay: (date: string) => {
      for (const ds of workspaces.values()) ds.emptyDay(toDayNumber(date));
    },
    restateDay: (date, { workspace, ...rates } = {}) => changes.restateDay(date, rates, workspace),
    moveLineItem: (from, to, { id, workspace } = {}) => changes.moveLineItem(from, to, id, workspace).id,
    setAnomalyStatus: (target, status, { workspace } = {}) => changes.setAnomalyStatus(target, status, options.clock.now(), workspace).id,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Writes the envelope, or misbehaves as the fault says. */
function send(res: ServerResponse, reply: Reply, fault: FaultKind | null): void {
  if (fault === 'drop') {
    res.socket?.destroy();
    return;
  }
  const envelope: Record<string, unknown> = { data: reply.data ?? null, error: reply.error ?? null, meta: reply.meta ?? {} };
  if (reply.omitNextCursor) delete (envelope.meta as Record<string, unknown>).next_cursor;
  let body = JSON.stringify(envelope);
  if (fault === 'malformed') body = `${body.slice(0, Math.floor(body.length / 2))}<<not json>>`;
  const bytes = Buffer.from(body);
  res.writeHead(reply.status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': String(bytes.length),
    ...reply.headers,
  });
  if (fault === 'truncate') {
    // Promise the whole body, send half, then cut the connection.
    res.write(bytes.subarray(0, Math.floor(bytes.length / 2)), () => res.socket?.destroy());
    return;
  }
  res.end(bytes);
}

function single(q: URLSearchParams, name: string): string | undefined {
  const all = q.getAll(name);
  if (all.length > 1) throw new BadRequest(`${name} was sent ${all.length} times; send it once.`);
  return all[0];
}

function dateRange(q: URLSearchParams) {
  const start = single(q, 'start_date');
  const end = single(q, 'end_date');
  for (const [name, value] of [
    ['start_date', start],
    ['end_date', end],
  ] as const) {
    if (value === undefined || value === '') throw new BadRequest(`${name} is required, as YYYY-MM-DD.`);
    if (!isCalendarDate(value)) throw new BadRequest(`${name} must be a real calendar date as YYYY-MM-DD; got "${value}".`);
  }
  if (start! > end!) throw new BadRequest(`start_date ${start} is after end_date ${end}; start_date must be on or before end_date.`);
  return { start: start!, end: end!, startDay: toDayNumber(start!), endDay: toDayNumber(end!) };
}

function intParam(q: URLSearchParams, name: string, fallback: number, min: number, max: number): number {
  const raw = single(q, name);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new BadRequest(`${name} must be an integer from ${min} to ${max}; got "${raw}".`);
  }
  return Number(raw);
}

function enumParam(q: URLSearchParams, name: string, values: readonly string[]): string | undefined {
  const raw = single(q, name);
  if (raw !== undefined && !values.includes(raw)) throw new BadRequest(`${name} must be one of ${values.join(', ')}; got "${raw}".`);
  return raw;
}

const ISO_TIMESTAMP_RE = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2}))?$/;

/** Epoch ms of an ISO 8601 timestamp with a zone (or a bare date, midnight UTC); null otherwise. */
export function parseTimestamp(text: string): number | null {
  if (!ISO_TIMESTAMP_RE.test(text) || !isCalendarDate(text.slice(0, 10))) return null;
  const ms = Date.parse(text.length === 10 ? `${text}T00:00:00Z` : text);
  return Number.isNaN(ms) ? null : ms;
}

async function drain(req: IncomingMessage): Promise<void> {
  for await (const _chunk of req) {
    /* discard */
  }
}

/** The body as text, or null when it exceeds `limit` bytes. */
async function readBody(req: IncomingMessage, limit: number): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  let tooLarge = false;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) tooLarge = true;
    else chunks.push(chunk);
  }
  return tooLarge ? null : Buffer.concat(chunks).toString('utf8');
}
