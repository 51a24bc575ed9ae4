import { MockAgent } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { CostsyncError, describeError } from '../../src/errors.js';
import {
  CATALOG_RETRY,
  DEFAULT_ENDPOINTS,
  RestCatalog,
  newIdempotencyKey,
  parseCatalogUrl,
  type RestCatalogOptions,
} from '../../src/iceberg/rest-client.js';
import type { AuthRequest, CatalogAuth, TableChange } from '../../src/iceberg/rest-types.js';
import { fakeClock } from '../support/helpers.js';

const ORIGIN = 'https://catalog.test';
const TOKEN = 'tok-0123456789abcdef';
const VENDED_SECRET = 'vended-SECRET-key-9f8e7d6c5b4a';

interface Seen {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string | undefined;
}
interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

/** A bearer token that a refusal replaces with a new one (when `renew`). */
function fakeAuth(renew = true) {
  let generation = 1;
  const requests: AuthRequest[] = [];
  const refusals: number[] = [];
  const auth: CatalogAuth = {
    description: 'bearer token (COSTSYNC_CATALOG_TOKEN)',
    headers: async (request) => {
      requests.push(request);
      return { authorization: `Bearer ${TOKEN}-${generation}` };
    },
    refused: (status) => {
      refusals.push(status);
      if (renew) generation += 1;
      return renew;
    },
  };
  return { auth, requests, refusals };
}

const agents: MockAgent[] = [];
afterEach(async () => {
  await Promise.all(agents.splice(0).map((a) => a.close()));
});

/**
 * A catalog made of one handler: every request is recorded and answered by `handle` (the config
 * request by `config` unless `handle` answers it). `first` adds interceptors tried before it (errors, delays).
 */
function mockCatalog(
  o: {
    config?: Record<string, unknown>;
    handle?: (req: Seen, n: number) => Reply | undefined;
    first?: (pool: ReturnType<MockAgent['get']>) => void;
  } = {},
) {
  const agent = new MockAgent();
  agent.disableNetConnect();
  agents.push(agent);
  const seen: Seen[] = [];
  const pool = agent.get(ORIGIN);
  o.first?.(pool);
  pool
    .intercept({ path: () => true, method: () => true })
    .reply((opts) => {
      const req: Seen = {
        method: opts.method,
        path: opts.path,
        headers: { ...(opts.headers as Record<string, string>) },
        body: typeof opts.body === 'string' ? opts.body : undefined,
      };
      seen.push(req);
      const reply =
        o.handle?.(req, seen.filter((s) => !s.path.startsWith('/v1/config')).length) ??
        (req.path.startsWith('/v1/config') || req.path.startsWith('/iceberg/v1/config')
          ? { status: 200, body: o.config ?? { defaults: {}, overrides: {} } }
          : { status: 500, body: { error: { type: 'Unexpected', message: `no handler for ${req.method} ${req.path}`, code: 500 } } });
      return {
        statusCode: reply.status,
        data: reply.body === undefined ? '' : typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body),
        responseOptions: { headers: { 'content-type': 'application/json', ...reply.headers } },
      };
    })
    .persist();
  return { agent, seen, calls: () => seen.filter((s) => !s.path.includes('/v1/config')) };
}

function options(agent: MockAgent, extra: Partial<RestCatalogOptions> = {}) {
  const warnings: string[] = [];
  const clock = fakeClock();
  const { auth, requests, refusals } = fakeAuth();
  const o: RestCatalogOptions = { url: ORIGIN, auth, clock, dispatcher: agent, warn: (m) => warnings.push(m), ...extra };
  return { o, warnings, clock, requests, refusals };
}

const change: TableChange = {
  requirements: [{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': 1 }],
  updates: [{ action: 'set-properties', updates: { 'costsync.x': '1' } }],
};

const metadata = { 'format-version': 2, 'table-uuid': '7a1c0c1e-0000-4000-8000-000000000001', location: 's3://b/t' };
const IDEMPOTENT = { defaults: {}, overrides: {}, 'idempotency-key-lifetime': 'PT30M' };

async function codeOf(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(CostsyncError);
  return (error as CostsyncError).code;
}

async function errorOf(promise: Promise<unknown>): Promise<CostsyncError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(CostsyncError);
  return error as CostsyncError;
}

describe('RestCatalog.connect', () => {
  it('merges defaults and overrides (overrides win), and puts the prefix and warehouse in paths', async () => {
    const { agent, seen } = mockCatalog({
      handle: (req) =>
        req.path.startsWith('/iceberg/v1/config')
          ? {
              status: 200,
              body: { defaults: { clients: '4', prefix: 'ignored', 'write.x': 'd' }, overrides: { prefix: 'my cat', 'write.x': 'o' } },
            }
          : req.path.includes('/tables/')
            ? { status: 404, body: { error: { type: 'NoSuchTableException', message: 'no', code: 404 } } }
            : undefined,
    });
    const { o } = options(agent, { url: `${ORIGIN}/iceberg/`, warehouse: 'wh 1' });
    const catalog = await RestCatalog.connect(o);
    expect(seen[0]!.path).toBe('/iceberg/v1/config?warehouse=wh%201');
    expect(catalog.properties).toEqual({ clients: '4', prefix: 'my cat', 'write.x': 'o' });
    expect(catalog.prefix).toBe('my cat');
    expect(catalog.idempotency).toBe(false);
    expect(catalog.describe()).toBe(`${ORIGIN}/iceberg (warehouse wh 1, prefix my cat)`);
    expect(await catalog.loadTable(['costsync'], 'line_items')).toBeNull();
    expect(seen[1]!.path).toBe('/iceberg/v1/my%20cat/namespaces/costsync/tables/line_items');
  });

  it('keeps a prefix the server sent encoded as it is, and its slashes as separators', async () => {
    const { agent, seen } = mockCatalog({
      config: { defaults: {}, overrides: { prefix: 'catalogs/arn%3Aaws%3As3tables%3Aus-east-1%3A1%3Abucket%2Fb' } },
      handle: (req) => (req.path.includes('/namespaces/') ? { status: 204 } : undefined),
    });
    const catalog = await RestCatalog.connect(options(agent).o);
    expect(await catalog.namespaceExists(['costsync'])).toBe(true);
    expect(seen[1]!.path).toBe('/v1/catalogs/arn%3Aaws%3As3tables%3Aus-east-1%3A1%3Abucket%2Fb/namespaces/costsync');
  });

  it("assumes the spec's default endpoints when the config lists none, and only those listed when it does", async () => {
    const bare = await RestCatalog.connect(options(mockCatalog().agent).o);
    expect(DEFAULT_ENDPOINTS).toHaveLength(14);
    expect(bare.supports('POST /v1/{prefix}/transactions/commit')).toBe(true);
    expect(bare.supports('POST /v1/{prefix}/namespaces/{namespace}/register')).toBe(true);
    expect(bare.supports('HEAD /v1/{prefix}/namespaces/{namespace}')).toBe(false);
    const listed = await RestCatalog.connect(
      options(
        mockCatalog({ config: { defaults: {}, overrides: {}, endpoints: ['GET /v1/{prefix}/namespaces/{namespace}/tables/{table}'] } })
          .agent,
      ).o,
    );
    expect(listed.supports('GET /v1/{prefix}/namespaces/{namespace}/tables/{table}')).toBe(true);
    expect(listed.supports('POST /v1/{prefix}/transactions/commit')).toBe(false);
    expect(listed.prefix).toBeNull();
  });

  it('says CS_ERR_CATALOG_UNREACHABLE when nothing accepts connections at --catalog, at once', async () => {
    const { agent } = mockCatalog({
      first: (pool) =>
        pool
          .intercept({ path: '/v1/config', method: 'GET' })
          .replyWithError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })),
    });
    const { o, clock } = options(agent);
    const error = await errorOf(RestCatalog.connect(o));
    expect(error.code).toBe('CS_ERR_CATALOG_UNREACHABLE');
    expect(error.message).toContain(ORIGIN);
    expect(clock.sleeps).toEqual([]);
  });

  it('refuses a plain-http catalog URL that is not loopback, or one with credentials', () => {
    expect(() => parseCatalogUrl('http://catalog.example.com')).toThrow(/https/);
    expect(() => parseCatalogUrl('https://user:pw@catalog.example.com')).toThrow(/credentials/);
    expect(parseCatalogUrl('http://127.0.0.1:8181/')).toBe('http://127.0.0.1:8181');
    expect(parseCatalogUrl('https://glue.us-east-1.amazonaws.com/iceberg/')).toBe('https://glue.us-east-1.amazonaws.com/iceberg');
  });

  it('points at the base URL when GET /v1/config is not found', async () => {
    const { agent } = mockCatalog({
      handle: (req) => (req.path.startsWith('/v1/config') ? { status: 404, body: '<html>nope</html>' } : undefined),
    });
    const error = await errorOf(RestCatalog.connect(options(agent).o));
    expect(error.code).toBe('CS_ERR_CATALOG');
    expect(error.message).toContain('HTTP 404');
    expect(error.message).not.toContain('nope');
    expect(error.hint).toContain('the part before /v1/config');
  });
});

describe('paths', () => {
  it('joins a multi-level namespace with the unit separator (%1F), each level encoded', async () => {
    const { agent, seen } = mockCatalog({ handle: (req) => (req.path.includes('/namespaces/') ? { status: 404 } : undefined) });
    const catalog = await RestCatalog.connect(options(agent).o);
    expect(await catalog.namespaceExists(['costs', 'team a/b'])).toBe(false);
    // HEAD is not among the default endpoints: GET is used.
    expect(seen[1]!.method).toBe('GET');
    expect(seen[1]!.path).toBe('/v1/namespaces/costs%1Fteam%20a%2Fb');
  });

  it("uses the config's namespace-separator when it names one, and HEAD when it is offered", async () => {
    const { agent, seen } = mockCatalog({
      config: {
        defaults: {},
        overrides: { 'namespace-separator': '%2E' },
        endpoints: ['HEAD /v1/{prefix}/namespaces/{namespace}', 'GET /v1/{prefix}/namespaces/{namespace}'],
      },
      handle: (req) => (req.path.includes('/namespaces/') ? { status: 204 } : undefined),
    });
    const catalog = await RestCatalog.connect(options(agent).o);
    expect(await catalog.namespaceExists(['costs', 'prod'])).toBe(true);
    expect(seen[1]!.method).toBe('HEAD');
    expect(seen[1]!.path).toBe('/v1/namespaces/costs.prod');
    expect(await codeOf(catalog.namespaceExists(['costs.x']))).toBe('CS_ERR_CONFIG');
  });
});

describe('reads and creates', () => {
  it('loads a table with vended credentials asked for, and null on 404', async () => {
    const { agent, seen } = mockCatalog({
      handle: (req, n) =>
        n === 1
          ? {
              status: 200,
              body: { 'metadata-location': 's3://b/t/metadata/v1.json', metadata, config: { 's3.secret-access-key': VENDED_SECRET } },
            }
          : n === 2
            ? { status: 404, body: { error: { type: 'NoSuchTableException', message: 'The given table does not exist', code: 404 } } }
            : undefined,
    });
    const catalog = await RestCatalog.connect(options(agent).o);
    const loaded = await catalog.loadTable(['costsync'], 'focus');
    expect(loaded?.['metadata-location']).toBe('s3://b/t/metadata/v1.json');
    expect(seen[1]!.headers['x-iceberg-access-delegation']).toBe('vended-credentials');
    expect(seen[1]!.headers.accept).toBe('application/json');
    expect(seen[1]!.headers['user-agent']).toMatch(/^costsync\//);
    expect(seen[1]!.headers['content-type']).toBeUndefined();
    expect(await catalog.loadTable(['costsync'], 'gone')).toBeNull();
  });

  it('creates: 409 is "exists" for a table and fine for a namespace (a racing runner made it)', async () => {
    const exists = { status: 409, body: { error: { type: 'AlreadyExistsException', message: 'exists', code: 409 } } };
    const { agent, seen } = mockCatalog({ handle: (req) => (req.method === 'POST' ? exists : undefined) });
    const catalog = await RestCatalog.connect(options(agent).o);
    await catalog.createNamespace(['costsync']);
    expect(JSON.parse(seen[1]!.body!)).toEqual({ namespace: ['costsync'], properties: {} });
    expect(seen[1]!.headers['content-type']).toBe('application/json');
    expect(await catalog.createTable(['costsync'], { name: 'focus', schema: { type: 'struct', 'schema-id': 0, fields: [] } })).toBe(
      'exists',
    );
    expect(await catalog.registerTable(['costsync'], 'focus', 's3://b/focus/metadata/v3.metadata.json')).toBe('exists');
    expect(JSON.parse(seen[3]!.body!)).toEqual({ name: 'focus', 'metadata-location': 's3://b/focus/metadata/v3.metadata.json' });
    expect(seen[3]!.path).toBe('/v1/namespaces/costsync/register');
  });

  it('retries a read on 503, waiting what Retry-After asks, then names the answer once attempts run out', async () => {
    const unavailable = {
      status: 503,
      body: { error: { type: 'SlowDownException', message: 'Slow down', code: 503 } },
      headers: { 'retry-after': '3' },
    };
    const { agent, calls } = mockCatalog({ handle: (req) => (req.path.includes('/tables/') ? unavailable : undefined) });
    const { o, clock, warnings } = options(agent);
    const catalog = await RestCatalog.connect(o);
    const error = await errorOf(catalog.loadTable(['costsync'], 'focus'));
    expect(error.code).toBe('CS_ERR_CATALOG');
    expect(error.message).toContain('SlowDownException: Slow down (HTTP 503)');
    expect(error.message).toContain('load table costsync.focus');
    expect(calls()).toHaveLength(CATALOG_RETRY.attempts);
    expect(clock.sleeps).toHaveLength(CATALOG_RETRY.attempts - 1);
    for (const ms of clock.sleeps) expect(ms).toBeGreaterThanOrEqual(3000);
    expect(warnings).toHaveLength(CATALOG_RETRY.attempts - 1);
  });

  it('retries a create after a 500; one that had landed answers 409 the next time: "exists"', async () => {
    const { agent, calls } = mockCatalog({
      handle: (req, n) =>
        req.method !== 'POST'
          ? undefined
          : n === 1
            ? { status: 500, body: { error: { type: 'InternalServerError', message: 'oops', code: 500 } } }
            : { status: 409, body: { error: { type: 'AlreadyExistsException', message: 'exists', code: 409 } } },
    });
    const catalog = await RestCatalog.connect(options(agent).o);
    expect(await catalog.createTable(['costsync'], { name: 'focus', schema: { type: 'struct', 'schema-id': 0, fields: [] } })).toBe(
      'exists',
    );
    expect(calls()).toHaveLength(2);
  });

  it('retries a read after a dropped connection once the catalog has answered', async () => {
    const { agent, calls } = mockCatalog({
      first: (pool) =>
        pool
          .intercept({ path: '/v1/namespaces/costsync/tables/focus', method: 'GET' })
          .replyWithError(Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' })),
      handle: (req) => (req.path.includes('/tables/') ? { status: 200, body: { metadata } } : undefined),
    });
    const { o, clock } = options(agent);
    const catalog = await RestCatalog.connect(o);
    expect((await catalog.loadTable(['costsync'], 'focus'))?.metadata['table-uuid']).toBe(metadata['table-uuid']);
    expect(calls()).toHaveLength(1); // the dropped attempt never reached the recording handler
    expect(clock.sleeps).toHaveLength(1);
  });
});

describe('commits', () => {
  it('200 is committed with the new metadata; the body holds the identifier, requirements and updates', async () => {
    const { agent, seen } = mockCatalog({
      handle: (req) =>
        req.method === 'POST' ? { status: 200, body: { 'metadata-location': 's3://b/t/metadata/v2.json', metadata } } : undefined,
    });
    const catalog = await RestCatalog.connect(options(agent).o);
    const outcome = await catalog.commitTable(['costsync'], 'focus', change, 'key-1');
    expect(outcome).toEqual({ kind: 'committed', metadata, metadataLocation: 's3://b/t/metadata/v2.json' });
    expect(JSON.parse(seen[1]!.body!)).toEqual({ identifier: { namespace: ['costsync'], name: 'focus' }, ...change });
    expect(seen[1]!.path).toBe('/v1/namespaces/costsync/tables/focus');
    // The server did not advertise idempotency-key-lifetime: no key is sent.
    expect(seen[1]!.headers['idempotency-key']).toBeUndefined();
  });

  it('409 is a conflict', async () => {
    const { agent } = mockCatalog({
      handle: (req) =>
        req.method === 'POST'
          ? { status: 409, body: { error: { type: 'CommitFailedException', message: 'Requirement failed: ref main changed', code: 409 } } }
          : undefined,
    });
    const catalog = await RestCatalog.connect(options(agent).o);
    const outcome = await catalog.commitTable(['costsync'], 'focus', change);
    expect(outcome.kind).toBe('conflict');
    expect(outcome.kind === 'conflict' && outcome.message).toContain('CommitFailedException: Requirement failed: ref main changed');
  });

  it('503 then 200 is committed, the same Idempotency-Key sent both times', async () => {
    const { agent, calls } = mockCatalog({
      config: IDEMPOTENT,
      handle: (req, n) =>
        req.method !== 'POST'
          ? undefined
          : n === 1
            ? { status: 503, body: { error: { type: 'SlowDownException', message: 'Slow down', code: 503 } } }
            : { status: 200, body: { 'metadata-location': 's3://b/t/metadata/v2.json', metadata } },
    });
    const { o, clock } = options(agent);
    const catalog = await RestCatalog.connect(o);
    expect(catalog.idempotency).toBe(true);
    const key = newIdempotencyKey(clock.now());
    const outcome = await catalog.commitTable(['costsync'], 'focus', change, key);
    expect(outcome.kind).toBe('committed');
    expect(calls().map((c) => c.headers['idempotency-key'])).toEqual([key, key]);
    expect(clock.sleeps).toHaveLength(1);
  });

  it('a 503 without an idempotency key or Retry-After is unknown, not resent; a 409 after a resent 503 is unknown too', async () => {
    const slow = { status: 503, body: { error: { type: 'SlowDownException', message: 'Slow down', code: 503 } } };
    const { agent, calls } = mockCatalog({ handle: (req) => (req.method === 'POST' ? slow : undefined) });
    const catalog = await RestCatalog.connect(options(agent).o);
    expect((await catalog.commitTable(['costsync'], 'focus', change)).kind).toBe('unknown');
    expect(calls()).toHaveLength(1);

    const then409 = mockCatalog({
      handle: (req, n) =>
        req.method !== 'POST'
          ? undefined
          : n === 1
            ? { ...slow, headers: { 'retry-after': '1' } }
            : { status: 409, body: { error: { type: 'CommitFailedException', message: 'ref changed', code: 409 } } },
    });
    const again = await RestCatalog.connect(options(then409.agent).o);
    expect((await again.commitTable(['costsync'], 'focus', change)).kind).toBe('unknown');
    expect(then409.calls()).toHaveLength(2);
  });

  it('429 on a commit was not applied: it is sent again, key or not', async () => {
    const { agent, calls } = mockCatalog({
      handle: (req, n) =>
        req.method !== 'POST'
          ? undefined
          : n === 1
            ? {
                status: 429,
                body: { error: { type: 'TooManyRequests', message: 'slow down', code: 429 } },
                headers: { 'retry-after': '2' },
              }
            : { status: 204 },
    });
    const { o, clock } = options(agent);
    const catalog = await RestCatalog.connect(o);
    expect((await catalog.commitTable(['costsync'], 'focus', change)).kind).toBe('committed');
    expect(calls()).toHaveLength(2);
    expect(clock.sleeps[0]).toBeGreaterThanOrEqual(2000);
  });

  it.each([500, 502, 504])('%i is unknown and the commit is not sent again', async (status) => {
    const { agent, calls } = mockCatalog({
      config: IDEMPOTENT,
      handle: (req) =>
        req.method === 'POST'
          ? { status, body: { error: { type: 'CommitStateUnknownException', message: 'Gateway timed out during commit', code: status } } }
          : undefined,
    });
    const { o, clock } = options(agent);
    const catalog = await RestCatalog.connect(o);
    const outcome = await catalog.commitTable(['costsync'], 'focus', change, newIdempotencyKey(clock.now()));
    expect(outcome.kind).toBe('unknown');
    expect(outcome.kind === 'unknown' && outcome.message).toContain(
      `CommitStateUnknownException: Gateway timed out during commit (HTTP ${status})`,
    );
    expect(calls()).toHaveLength(1);
    expect(clock.sleeps).toEqual([]);
  });

  it('a timeout after the request was sent is unknown, and not sent again', async () => {
    let sent = 0;
    // The deadline passes once the server has the request (an event, not a race): its answer never comes before.
    const deadline = new AbortController();
    const { agent } = mockCatalog({
      first: (pool) =>
        pool
          .intercept({ path: '/v1/namespaces/costsync/tables/focus', method: 'POST' })
          .reply(() => {
            sent += 1;
            deadline.abort();
            return { statusCode: 200, data: JSON.stringify({ 'metadata-location': 's3://x', metadata }) };
          })
          .delay(600_000)
          .persist(),
    });
    const { o } = options(agent, { requestTimeoutMs: 25, deadline: () => deadline.signal });
    const catalog = await RestCatalog.connect(o);
    const outcome = await catalog.commitTable(['costsync'], 'focus', change);
    expect(outcome.kind).toBe('unknown');
    expect(outcome.kind === 'unknown' && outcome.message).toContain('no complete answer within 25 ms');
    expect(sent).toBe(1);
  });

  it('a connection refused before sending is retried; a connection dropped after sending is unknown', async () => {
    const refusedOnce = mockCatalog({
      first: (pool) =>
        pool
          .intercept({ path: '/v1/namespaces/costsync/tables/focus', method: 'POST' })
          .replyWithError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })),
      handle: (req) => (req.method === 'POST' ? { status: 200, body: { 'metadata-location': 's3://x', metadata } } : undefined),
    });
    const first = options(refusedOnce.agent);
    const catalog = await RestCatalog.connect(first.o);
    expect((await catalog.commitTable(['costsync'], 'focus', change)).kind).toBe('committed');
    expect(first.clock.sleeps).toHaveLength(1);

    const dropped = mockCatalog({
      first: (pool) =>
        pool
          .intercept({ path: '/v1/namespaces/costsync/tables/focus', method: 'POST' })
          .replyWithError(Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' })),
      handle: (req) => (req.method === 'POST' ? { status: 200, body: { 'metadata-location': 's3://x', metadata } } : undefined),
    });
    const second = options(dropped.agent);
    const again = await RestCatalog.connect(second.o);
    const outcome = await again.commitTable(['costsync'], 'focus', change);
    expect(outcome.kind).toBe('unknown');
    expect(outcome.kind === 'unknown' && outcome.message).toContain(
      'the connection failed: other side closed (UND_ERR_SOCKET) after the request was sent',
    );
    expect(dropped.calls()).toHaveLength(0);
    expect(second.clock.sleeps).toEqual([]);
  });

  it('404 on a commit says the table or namespace is gone (CS_ERR_CATALOG)', async () => {
    const { agent } = mockCatalog({
      handle: (req) =>
        req.method === 'POST'
          ? { status: 404, body: { error: { type: 'NoSuchTableException', message: 'Table does not exist: costsync.focus', code: 404 } } }
          : undefined,
    });
    const catalog = await RestCatalog.connect(options(agent).o);
    const error = await errorOf(catalog.commitTable(['costsync'], 'focus', change));
    expect(error.code).toBe('CS_ERR_CATALOG');
    expect(error.message).toContain('NoSuchTableException: Table does not exist: costsync.focus (HTTP 404)');
    expect(error.hint).toMatch(/gone/);
  });

  it('commits a transaction (204: committed, no metadata)', async () => {
    const { agent, seen } = mockCatalog({ handle: (req) => (req.method === 'POST' ? { status: 204 } : undefined) });
    const catalog = await RestCatalog.connect(options(agent).o);
    const outcome = await catalog.commitTransaction([
      { namespace: ['costsync'], name: 'focus', change },
      { namespace: ['costsync'], name: 'sync_runs', change },
    ]);
    expect(outcome).toEqual({ kind: 'committed', metadata: null, metadataLocation: null });
    expect(seen[1]!.path).toBe('/v1/transactions/commit');
    expect(JSON.parse(seen[1]!.body!)['table-changes'].map((c: { identifier: { name: string } }) => c.identifier.name)).toEqual([
      'focus',
      'sync_runs',
    ]);
  });

  it('an unoffered endpoint is CS_ERR_CATALOG_UNSUPPORTED, named, and nothing is sent', async () => {
    const { agent, calls } = mockCatalog({
      config: { defaults: {}, overrides: {}, endpoints: ['POST /v1/{prefix}/namespaces/{namespace}/tables/{table}'] },
    });
    const catalog = await RestCatalog.connect(options(agent).o);
    const error = await errorOf(catalog.commitTransaction([{ namespace: ['costsync'], name: 'focus', change }]));
    expect(error.code).toBe('CS_ERR_CATALOG_UNSUPPORTED');
    expect(error.message).toContain('POST /v1/{prefix}/transactions/commit');
    expect(await codeOf(catalog.registerTable(['costsync'], 'focus', 's3://x'))).toBe('CS_ERR_CATALOG_UNSUPPORTED');
    expect(await codeOf(catalog.createNamespace(['costsync']))).toBe('CS_ERR_CATALOG_UNSUPPORTED');
    expect(calls()).toHaveLength(0);
  });
});

describe('auth', () => {
  it('401: the auth drops its token, and the request is sent once more with fresh headers, signed as sent', async () => {
    const { agent, calls } = mockCatalog({
      handle: (req, n) =>
        req.method !== 'POST'
          ? undefined
          : n === 1
            ? { status: 401, body: { error: { type: 'NotAuthorizedException', message: 'Token expired', code: 401 } } }
            : { status: 200, body: { 'metadata-location': 's3://x', metadata } },
    });
    const { o, refusals, requests } = options(agent);
    const catalog = await RestCatalog.connect(o);
    expect((await catalog.commitTable(['costsync'], 'focus', change)).kind).toBe('committed');
    expect(refusals).toEqual([401]);
    expect(calls().map((c) => c.headers.authorization)).toEqual([`Bearer ${TOKEN}-1`, `Bearer ${TOKEN}-2`]);
    // What the auth signs is exactly what goes out: the final URL and body.
    const signed = requests.at(-1)!;
    expect(signed.url).toBe(`${ORIGIN}/v1/namespaces/costsync/tables/focus`);
    expect(signed.body).toBe(calls()[1]!.body);
    expect(signed.headers['content-type']).toBe('application/json');
  });

  it('401 again after fresh credentials, or when the auth cannot renew, is CS_ERR_CATALOG_AUTH', async () => {
    const refused = {
      status: 419,
      body: { error: { type: 'AuthenticationTimeoutException', message: 'Credentials have timed out', code: 419 } },
    };
    const { agent, calls } = mockCatalog({ handle: (req) => (req.path.includes('/tables/') ? refused : undefined) });
    const { o, refusals } = options(agent);
    const catalog = await RestCatalog.connect(o);
    const error = await errorOf(catalog.loadTable(['costsync'], 'focus'));
    expect(error.code).toBe('CS_ERR_CATALOG_AUTH');
    expect(error.message).toContain('refused the credentials (bearer token (COSTSYNC_CATALOG_TOKEN)), fresh ones too');
    expect(refusals).toEqual([419]);
    expect(calls()).toHaveLength(2);

    const fixed = fakeAuth(false);
    const once = mockCatalog({ handle: (req) => (req.path.includes('/tables/') ? refused : undefined) });
    const catalog2 = await RestCatalog.connect({ ...options(once.agent).o, auth: fixed.auth });
    expect(await codeOf(catalog2.loadTable(['costsync'], 'focus'))).toBe('CS_ERR_CATALOG_AUTH');
    expect(once.calls()).toHaveLength(1);
  });

  it('403 is CS_ERR_CATALOG_AUTH naming the action the principal may not do', async () => {
    const { agent } = mockCatalog({
      handle: (req) =>
        req.method === 'POST'
          ? { status: 403, body: { error: { type: 'ForbiddenException', message: 'Not authorized to make this request', code: 403 } } }
          : undefined,
    });
    const catalog = await RestCatalog.connect(options(agent).o);
    const error = await errorOf(
      catalog.createTable(['costsync'], { name: 'focus', schema: { type: 'struct', 'schema-id': 0, fields: [] } }),
    );
    expect(error.code).toBe('CS_ERR_CATALOG_AUTH');
    expect(error.message).toContain('lacks the privilege to create table costsync.focus');
    expect(error.hint).toContain('create table costsync.focus');
  });
});

describe('the run stopping', () => {
  it('sends nothing once the signal is aborted (CS_ERR_ABORTED)', async () => {
    const { agent, calls } = mockCatalog();
    const stop = new AbortController();
    const catalog = await RestCatalog.connect(options(agent, { signal: stop.signal }).o);
    stop.abort();
    expect(await codeOf(catalog.loadTable(['costsync'], 'focus'))).toBe('CS_ERR_ABORTED');
    expect(await codeOf(catalog.commitTable(['costsync'], 'focus', change))).toBe('CS_ERR_ABORTED');
    expect(calls()).toHaveLength(0);
  });

  it('ends a wait between attempts, and sends no further attempt', async () => {
    const stop = new AbortController();
    const { agent, calls } = mockCatalog({ handle: (req) => (req.path.includes('/tables/') ? { status: 503 } : undefined) });
    const clock = { now: () => 0, sleep: async () => stop.abort() };
    const catalog = await RestCatalog.connect(options(agent, { signal: stop.signal, clock }).o);
    expect(await codeOf(catalog.loadTable(['costsync'], 'focus'))).toBe('CS_ERR_ABORTED');
    expect(calls()).toHaveLength(1);
  });
});

describe('secrets', () => {
  it('no message repeats a vended credential or the token, even when the server echoes them', async () => {
    const { agent } = mockCatalog({
      handle: (req, n) =>
        req.path.includes('/tables/focus') && req.method === 'GET'
          ? {
              status: 200,
              body: {
                metadata,
                config: { 's3.secret-access-key': VENDED_SECRET },
                'storage-credentials': [{ prefix: 's3://b', config: { 's3.session-token': `${VENDED_SECRET}-session` } }],
              },
            }
          : req.path.includes('/tables/bad')
            ? { status: 200, body: { metadata: { broken: true }, config: { token: 'planted-token-abcdef123456' } } }
            : n > 0
              ? {
                  status: 400,
                  body: {
                    error: { type: 'BadRequestException', message: `bad key ${VENDED_SECRET}, header Bearer ${TOKEN}-1`, code: 400 },
                  },
                }
              : undefined,
    });
    const { o, warnings } = options(agent);
    const catalog = await RestCatalog.connect(o);
    await catalog.loadTable(['costsync'], 'focus');
    const echoed = await errorOf(catalog.commitTable(['costsync'], 'focus', change));
    const malformed = await errorOf(catalog.loadTable(['costsync'], 'bad'));
    for (const text of [describeError(echoed), describeError(malformed), ...warnings]) {
      expect(text).not.toContain(VENDED_SECRET);
      expect(text).not.toContain(TOKEN);
      expect(text).not.toContain('planted-token');
    }
    expect(echoed.message).toContain('[REDACTED]');
    expect(malformed.message).toContain('no table metadata');
  });
});

describe('newIdempotencyKey', () => {
  it('is a UUIDv7 whose first 48 bits are the time', () => {
    const key = newIdempotencyKey(Date.parse('2026-01-01T00:00:00Z'), new Uint8Array(10).fill(0xff));
    expect(key).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(parseInt(key.replace(/-/g, '').slice(0, 12), 16)).toBe(Date.parse('2026-01-01T00:00:00Z'));
    expect(newIdempotencyKey(0)).not.toBe(newIdempotencyKey(0));
  });
});
