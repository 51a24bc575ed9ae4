/**
 * The tests' Iceberg REST catalog (test/catalog/server.mjs), spoken to with plain `fetch` as the OpenAPI
 * document describes it: prefixes, namespaces, fresh ids on create, requirements refused with nothing
 * applied, commits written to disk, injected faults, transactions, idempotency keys, OAuth2, SigV4 and
 * registration; and one table committed through it read back by icebird.
 */
import { DuckDBInstance } from '@duckdb/node-api';
import { SignatureV4 } from '@smithy/signature-v4';
import { createHash, createHmac, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { encodeManifest, encodeManifestList, type PartitionSpec } from '../../src/iceberg/avro.js';
import type { IcebergSchema } from '../../src/iceberg/schema.js';
import { startCatalogServer, type CatalogServer, type CatalogServerOptions } from '../catalog/server.mjs';
import { withTempDir } from '../support/helpers.js';
import { bareDataFile, readIceberg } from '../support/iceberg.js';

const servers: CatalogServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function withCatalog<T>(
  options: Omit<CatalogServerOptions, 'root'>,
  fn: (server: CatalogServer, root: string) => Promise<T>,
): Promise<T> {
  return withTempDir(async (root) => {
    const server = await startCatalogServer({ root, ...options });
    servers.push(server);
    return fn(server, root);
  });
}

interface Answer {
  status: number;
  body: any;
}

async function call(url: string, method: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const response = await fetch(url, {
    method,
    headers: { ...(body !== undefined && { 'content-type': 'application/json' }), ...headers },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? null : JSON.parse(text) };
}

/** What the client sends: ids from 1, a spec partitioned by `source` naming the client's id. */
const SCHEMA: IcebergSchema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'source', required: true, type: 'string' },
    { id: 2, name: 'usage_date', required: true, type: 'date' },
    { id: 3, name: 'cost', required: false, type: 'double' },
  ],
};
const SPEC: PartitionSpec = {
  'spec-id': 0,
  fields: [
    { name: 'source', transform: 'identity', 'source-id': 1, 'field-id': 1000 },
    { name: 'usage_date_month', transform: 'month', 'source-id': 2, 'field-id': 1001 },
  ],
};

async function setUp(base: string, table = 'line_items', namespace = ['costsync']): Promise<Answer> {
  const ns = await call(`${base}/namespaces`, 'POST', { namespace, properties: {} });
  expect([200, 409]).toContain(ns.status);
  return call(`${base}/namespaces/${namespace.join('%1F')}/tables`, 'POST', { name: table, schema: SCHEMA, 'partition-spec': SPEC });
}

let nextSnapshotId = 1;
function snapshot(metadata: any, parent: number | null) {
  const id = nextSnapshotId++;
  return {
    'snapshot-id': id,
    ...(parent !== null && { 'parent-snapshot-id': parent }),
    'sequence-number': metadata['last-sequence-number'] + 1,
    'timestamp-ms': Date.now(),
    'manifest-list': `${metadata.location}/metadata/snap-${id}.avro`,
    summary: { operation: 'append' },
    'schema-id': metadata['current-schema-id'],
  };
}

/** A commit appending one snapshot to main, asserting main is where `metadata` has it. */
function appendChange(metadata: any, snap = snapshot(metadata, metadata.refs.main?.['snapshot-id'] ?? null)) {
  return {
    requirements: [
      { type: 'assert-table-uuid', uuid: metadata['table-uuid'] },
      { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': metadata.refs.main?.['snapshot-id'] ?? null },
    ],
    updates: [
      { action: 'add-snapshot', snapshot: snap },
      { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': snap['snapshot-id'] },
    ],
  };
}

/** A UUIDv7 (RFC 9562): the time in milliseconds, then random bits. */
function uuidv7(): string {
  const hex = Date.now().toString(16).padStart(12, '0') + randomUUID().replace(/-/g, '').slice(12);
  const variant = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

const readJson = (location: string) => JSON.parse(readFileSync(fileURLToPath(location), 'utf8'));

type SourceData = string | ArrayBuffer | ArrayBufferView;
const bytes = (data: SourceData) =>
  typeof data === 'string'
    ? data
    : ArrayBuffer.isView(data)
      ? Buffer.from(data.buffer, data.byteOffset, data.byteLength)
      : Buffer.from(data);

/** SHA-256 and its HMAC for the signer, from node:crypto. */
class Sha256 {
  private readonly hash;
  constructor(secret?: SourceData) {
    this.hash = secret === undefined ? createHash('sha256') : createHmac('sha256', bytes(secret));
  }
  update(data: SourceData) {
    this.hash.update(bytes(data));
  }
  async digest() {
    return new Uint8Array(this.hash.digest());
  }
}

describe('the tests’ Iceberg REST catalog', () => {
  it('gives its prefix in the config and answers only under it; a warehouse must be the one it has', async () => {
    // As S3 Tables does: a base path, and a prefix the server already encoded, used as it is.
    const arn = encodeURIComponent('arn:aws:s3tables:eu-west-1:111122223333:bucket/costs');
    await withCatalog({ basePath: '/iceberg', prefix: arn }, async (server) => {
      expect((await call(`${server.url}/iceberg/v1/config`, 'GET')).body.overrides.prefix).toBe(arn);
      expect((await call(`${server.url}/iceberg/v1/${arn}/namespaces`, 'GET')).status).toBe(200);
      expect((await call(`${server.url}/iceberg/v1/${encodeURIComponent(arn)}/namespaces`, 'GET')).status).toBe(404);
      expect((await call(`${server.url}/v1/config`, 'GET')).status).toBe(404);
    });
    await withCatalog({ endpoints: ['GET /v1/{prefix}/namespaces'] }, async (server) => {
      expect((await call(`${server.url}/v1/config`, 'GET')).body.endpoints).toEqual(['GET /v1/{prefix}/namespaces']);
      expect((await call(`${server.url}/v1/namespaces`, 'POST', { namespace: ['a'] })).status).toBe(406);
    });
    await withCatalog({ prefix: 'ws/abc', warehouse: 'lake' }, async (server) => {
      expect((await call(`${server.url}/v1/ws%2Fabc/namespaces`, 'GET')).status).toBe(404);
      const config = await call(`${server.url}/v1/config?warehouse=lake`, 'GET');
      expect(config.status).toBe(200);
      expect(config.body.overrides.prefix).toBe('ws/abc');
      expect(config.body.endpoints).toContain('POST /v1/{prefix}/namespaces/{namespace}/tables/{table}');
      expect(config.body.endpoints).not.toContain('POST /v1/{prefix}/transactions/commit');
      expect((await call(`${server.url}/v1/config?warehouse=other`, 'GET')).body.error).toMatchObject({
        code: 404,
        type: 'NoSuchWarehouseException',
      });
      expect((await call(`${server.url}/v1/config`, 'GET')).status).toBe(400);
      const without = await call(`${server.url}/v1/namespaces`, 'GET');
      expect(without.status).toBe(404);
      expect(without.body.error).toMatchObject({ code: 404, type: expect.any(String), message: expect.any(String) });
      expect(await call(`${server.url}/v1/ws/abc/namespaces`, 'GET')).toEqual({ status: 200, body: { namespaces: [] } });
    });
    await withCatalog({ endpoints: 'omit', idempotencyKeyLifetime: 'PT30M', transactions: true }, async (server) => {
      const config = (await call(`${server.url}/v1/config`, 'GET')).body;
      expect(config).toEqual({ defaults: {}, overrides: {}, 'idempotency-key-lifetime': 'PT30M' });
      // The document's default set has no HEAD routes: a client must not assume them.
      await setUp(`${server.url}/v1`);
      expect((await fetch(`${server.url}/v1/namespaces/costsync/tables/line_items`, { method: 'HEAD' })).status).toBe(406);
      expect((await call(`${server.url}/v1/namespaces/costsync/tables/line_items`, 'GET')).status).toBe(200);
    });
  });

  it('creates, loads and checks namespaces, multi-level ones by the unit separator', async () => {
    await withCatalog({}, async (server) => {
      const base = `${server.url}/v1`;
      expect(await call(`${base}/namespaces`, 'POST', { namespace: ['a', 'b'], properties: { owner: 'x' } })).toEqual({
        status: 200,
        body: { namespace: ['a', 'b'], properties: { owner: 'x' } },
      });
      expect((await call(`${base}/namespaces`, 'POST', { namespace: ['a', 'b'] })).body.error).toMatchObject({
        code: 409,
        type: 'AlreadyExistsException',
      });
      expect((await call(`${base}/namespaces/a%1Fb`, 'GET')).body).toEqual({ namespace: ['a', 'b'], properties: { owner: 'x' } });
      expect((await fetch(`${base}/namespaces/a%1Fb`, { method: 'HEAD' })).status).toBe(204);
      expect((await fetch(`${base}/namespaces/a%1Fc`, { method: 'HEAD' })).status).toBe(404);
      expect((await call(`${base}/namespaces/a`, 'GET')).body.error.type).toBe('NoSuchNamespaceException');
      expect((await call(`${base}/namespaces?parent=a`, 'GET')).body).toEqual({ namespaces: [['a', 'b']] });
    });
  });

  it('gives a created table fresh field ids, partition field ids from 1000 and the spec’s source ids remapped; stage-create commits nothing', async () => {
    await withCatalog({}, async (server, root) => {
      const base = `${server.url}/v1`;
      const created = await setUp(base);
      expect(created.status).toBe(200);
      const { metadata } = created.body;
      expect(metadata.schemas[0].fields.map((f: any) => [f.id, f.name])).toEqual([
        [101, 'source'],
        [102, 'usage_date'],
        [103, 'cost'],
      ]);
      expect(metadata['last-column-id']).toBe(103);
      expect(metadata['partition-specs']).toEqual([
        {
          'spec-id': 0,
          fields: [
            { name: 'source', transform: 'identity', 'source-id': 101, 'field-id': 1000 },
            { name: 'usage_date_month', transform: 'month', 'source-id': 102, 'field-id': 1001 },
          ],
        },
      ]);
      expect(metadata['last-partition-id']).toBe(1001);
      expect(metadata.location).toBe(`file://${root}/costsync/line_items`);
      expect(created.body['metadata-location']).toMatch(
        new RegExp(`^file://${root}/costsync/line_items/metadata/00000-[0-9a-f-]{36}\\.metadata\\.json$`),
      );
      expect(readJson(created.body['metadata-location'])).toEqual(metadata);
      expect(created.body.config).toEqual({});
      expect((await call(`${base}/namespaces/costsync/tables`, 'POST', { name: 'line_items', schema: SCHEMA })).body.error.type).toBe(
        'AlreadyExistsException',
      );

      expect(
        (await call(`${base}/namespaces/costsync/tables`, 'POST', { name: 'line_items', schema: SCHEMA, 'stage-create': true })).status,
      ).toBe(409);
      const staged = await call(`${base}/namespaces/costsync/tables`, 'POST', { name: 'focus', schema: SCHEMA, 'stage-create': true });
      expect(staged.status).toBe(200);
      expect(staged.body['metadata-location']).toBeUndefined();
      expect(staged.body.metadata.schemas[0].fields[0].id).toBe(101);
      expect((await call(`${base}/namespaces/costsync/tables/focus`, 'GET')).body.error).toMatchObject({
        code: 404,
        type: 'NoSuchTableException',
      });
      expect((await call(`${base}/namespaces/costsync/tables`, 'GET')).body).toEqual({
        identifiers: [{ namespace: ['costsync'], name: 'line_items' }],
      });
    });
  });

  it('refuses a commit whose requirement fails with 409 and applies nothing; applies a valid one and writes its metadata file', async () => {
    await withCatalog({}, async (server) => {
      const base = `${server.url}/v1`;
      const { metadata, 'metadata-location': first } = (await setUp(base)).body;
      const table = `${base}/namespaces/costsync/tables/line_items`;
      const commits: any[] = [];
      server.events.on('commit', (e) => commits.push(e));

      const stale = appendChange(metadata);
      stale.requirements[1] = { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': 12345 };
      const refused = await call(table, 'POST', stale);
      expect(refused.status).toBe(409);
      expect(refused.body.error).toMatchObject({ code: 409, type: 'CommitFailedException' });
      expect(server.table(['costsync'], 'line_items')!.metadataLocation).toBe(first);
      expect(server.commits).toBe(0);
      for (const requirement of [
        { type: 'assert-current-schema-id', 'current-schema-id': 1 },
        { type: 'assert-last-assigned-field-id', 'last-assigned-field-id': 3 },
        { type: 'assert-last-assigned-partition-id', 'last-assigned-partition-id': 999 },
        { type: 'assert-default-spec-id', 'default-spec-id': 1 },
        { type: 'assert-default-sort-order-id', 'default-sort-order-id': 1 },
        { type: 'assert-table-uuid', uuid: randomUUID() },
        { type: 'assert-create' },
      ])
        expect((await call(table, 'POST', { requirements: [requirement], updates: [] })).status, requirement.type).toBe(409);
      expect((await call(table, 'POST', { requirements: [], updates: [{ action: 'set-location', location: '/x' }] })).status).toBe(400);

      const change = appendChange(metadata);
      const applied = await call(table, 'POST', change);
      expect(applied.status).toBe(200);
      const location: string = applied.body['metadata-location'];
      expect(location).toMatch(/\/metadata\/00001-[0-9a-f-]{36}\.metadata\.json$/);
      const onDisk = readJson(location);
      expect(onDisk).toEqual(applied.body.metadata);
      expect(onDisk['current-snapshot-id']).toBe(change.updates[0]!.snapshot!['snapshot-id']);
      expect(onDisk['last-sequence-number']).toBe(1);
      expect(onDisk['metadata-log']).toEqual([{ 'timestamp-ms': metadata['last-updated-ms'], 'metadata-file': first }]);
      expect(commits).toEqual([
        { table: 'line_items', snapshotIds: [change.updates[0]!.snapshot!['snapshot-id']], metadataLocation: location, count: 1 },
      ]);
      expect((await call(table, 'GET')).body['metadata-location']).toBe(location);

      // The same snapshot again: its sequence number is no longer above the table's, and its parent is not current.
      const again = await call(table, 'POST', { requirements: [], updates: change.updates });
      expect(again.body.error).toMatchObject({ code: 400, type: 'ValidationException' });
      // An id JavaScript cannot hold is refused, not rounded into another one.
      const huge = JSON.stringify(appendChange(onDisk)).replace(/"snapshot-id":\d+/g, '"snapshot-id":9223372036854775807');
      const refusedHuge = await fetch(table, { method: 'POST', body: huge });
      expect(refusedHuge.status).toBe(400);
      const orphan = snapshot(onDisk, null);
      expect((await call(table, 'POST', appendChange(onDisk, orphan))).body.error.message).toMatch(/parent/);

      // Two writers on the same base at once: one wins, the other is refused, one file more.
      const racing = await Promise.all([call(table, 'POST', appendChange(onDisk)), call(table, 'POST', appendChange(onDisk))]);
      expect(racing.map((r) => r.status).sort()).toEqual([200, 409]);
      expect(server.commits).toBe(2);
    });
  });

  it('adds a schema under the id it assigns, keeping last-column-id; set-current-schema -1 is the one added', async () => {
    await withCatalog({}, async (server) => {
      const base = `${server.url}/v1`;
      const { metadata } = (await setUp(base)).body;
      const table = `${base}/namespaces/costsync/tables/line_items`;
      const fields = [...metadata.schemas[0].fields, { id: 104, name: 'tags', required: false, type: 'string' }];
      const wrongId = {
        type: 'struct',
        'schema-id': 0,
        fields: [...metadata.schemas[0].fields, { id: 5, name: 'tags', required: false, type: 'string' }],
      };
      expect((await call(table, 'POST', { requirements: [], updates: [{ action: 'add-schema', schema: wrongId }] })).status).toBe(400);
      const stated = await call(table, 'POST', {
        requirements: [{ type: 'assert-current-schema-id', 'current-schema-id': 0 }],
        updates: [
          { action: 'add-schema', schema: { type: 'struct', 'schema-id': 7, fields } },
          { action: 'set-current-schema', 'schema-id': 7 },
        ],
      });
      expect(stated.body.error.message).toMatch(/unknown schema: 7/);
      const added = await call(table, 'POST', {
        requirements: [{ type: 'assert-current-schema-id', 'current-schema-id': 0 }],
        updates: [
          { action: 'add-schema', schema: { type: 'struct', 'schema-id': 7, fields } },
          { action: 'set-current-schema', 'schema-id': -1 },
          { action: 'set-properties', updates: { a: '1', b: '2' } },
          { action: 'remove-properties', removals: ['a'] },
        ],
      });
      expect(added.status).toBe(200);
      expect(added.body.metadata).toMatchObject({ 'current-schema-id': 1, 'last-column-id': 104, properties: { b: '2' } });
      expect(added.body.metadata.properties.a).toBeUndefined();
    });
  });

  it('a fault after the commit answers 500 with the commit applied; hang-after applies and never answers', async () => {
    await withCatalog({}, async (server) => {
      const base = `${server.url}/v1`;
      const { metadata } = (await setUp(base)).body;
      const table = `${base}/namespaces/costsync/tables/line_items`;
      server.faults.push({ route: 'commit', table: 'line_items', status: 500, when: 'after' });
      const change = appendChange(metadata);
      const answer = await call(table, 'POST', change);
      expect(answer.body.error).toMatchObject({ code: 500, type: 'CommitStateUnknownException' });
      const now = server.table(['costsync'], 'line_items')!.metadata;
      expect(now['current-snapshot-id']).toBe(change.updates[0]!.snapshot!['snapshot-id']);

      server.faults.push({ route: 'commit', status: 503, when: 'hang-after' });
      const committed = once(server.events, 'commit');
      const controller = new AbortController();
      const hung = fetch(table, { method: 'POST', body: JSON.stringify(appendChange(now)), signal: controller.signal }).catch(
        (e: Error) => e.name,
      );
      await committed;
      expect(server.commits).toBe(2);
      controller.abort();
      expect(await hung).toBe('AbortError');
      expect(server.faults).toEqual([]);
    });
  });

  it('a transaction applies every table’s change or none', async () => {
    await withCatalog({ transactions: true, prefix: 'p' }, async (server) => {
      const base = `${server.url}/v1/p`;
      const a = (await setUp(base, 'line_items')).body;
      const b = (await setUp(base, 'focus')).body;
      const id = (name: string) => ({ namespace: ['costsync'], name });
      const badB = appendChange(b.metadata);
      badB.requirements[0] = { type: 'assert-table-uuid', uuid: a.metadata['table-uuid'] };
      const refused = await call(`${base}/transactions/commit`, 'POST', {
        'table-changes': [
          { identifier: id('line_items'), ...appendChange(a.metadata) },
          { identifier: id('focus'), ...badB },
        ],
      });
      expect(refused.status).toBe(409);
      expect(server.table(['costsync'], 'line_items')!.metadataLocation).toBe(a['metadata-location']);
      expect(server.table(['costsync'], 'focus')!.metadataLocation).toBe(b['metadata-location']);

      const done = await call(`${base}/transactions/commit`, 'POST', {
        'table-changes': [
          { identifier: id('line_items'), ...appendChange(a.metadata) },
          { identifier: id('focus'), ...appendChange(b.metadata) },
        ],
      });
      expect(done).toEqual({ status: 204, body: null });
      expect(server.table(['costsync'], 'line_items')!.metadata['last-sequence-number']).toBe(1);
      expect(server.table(['costsync'], 'focus')!.metadata['last-sequence-number']).toBe(1);
      expect(server.commits).toBe(2);
    });
    // Not offered: refused as not advertised; with no endpoints in the config a client may assume it, and finds it missing.
    await withCatalog({}, async (server) => {
      expect((await call(`${server.url}/v1/transactions/commit`, 'POST', { 'table-changes': [] })).body.error).toMatchObject({
        code: 406,
        type: 'UnsupportedOperationException',
      });
    });
    await withCatalog({ endpoints: 'omit' }, async (server) => {
      expect((await call(`${server.url}/v1/transactions/commit`, 'POST', { 'table-changes': [] })).status).toBe(404);
    });
  });

  it('a commit retried with its Idempotency-Key gets the first answer again, applied once, even when the first answer was lost', async () => {
    await withCatalog({ idempotencyKeyLifetime: 'PT30M' }, async (server) => {
      const base = `${server.url}/v1`;
      const { metadata } = (await setUp(base)).body;
      const table = `${base}/namespaces/costsync/tables/line_items`;
      const key = uuidv7();
      expect((await call(table, 'POST', appendChange(metadata), { 'idempotency-key': randomUUID() })).status).toBe(400);
      const change = appendChange(metadata);
      server.faults.push({ route: 'commit', status: 504, when: 'after' });
      expect((await call(table, 'POST', change, { 'idempotency-key': key })).status).toBe(504);
      const retried = await call(table, 'POST', change, { 'idempotency-key': key });
      expect(retried.status).toBe(200);
      expect(retried.body['metadata-location']).toBe(server.table(['costsync'], 'line_items')!.metadataLocation);
      expect(server.commits).toBe(1);
      // Without the key, the same request is a second commit, refused by its requirement.
      expect((await call(table, 'POST', change)).status).toBe(409);
      expect((await call(table, 'POST', appendChange(metadata), { 'idempotency-key': key })).status).toBe(422);
    });
  });

  it('issues OAuth2 tokens for client credentials, refuses a wrong secret, and answers 419 once they expire', async () => {
    await withCatalog({ auth: { kind: 'oauth', clients: [{ id: 'me', secret: 's3cret' }], tokenTtlSeconds: 60 } }, async (server) => {
      const token = async (secret: string) => {
        const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: 'me', client_secret: secret, scope: 'catalog' });
        const response = await fetch(`${server.url}/v1/oauth/tokens`, { method: 'POST', body: form });
        return { status: response.status, body: (await response.json()) as any };
      };
      expect(await token('wrong')).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
      const issued = await token('s3cret');
      expect(issued.body).toEqual({
        access_token: expect.any(String),
        token_type: 'bearer',
        expires_in: 60,
        issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
        scope: 'catalog',
      });
      const bearer = { authorization: `Bearer ${issued.body.access_token}` };
      expect((await call(`${server.url}/v1/config`, 'GET')).status).toBe(401);
      expect((await call(`${server.url}/v1/config`, 'GET', undefined, bearer)).status).toBe(200);
      server.expireTokens();
      expect((await call(`${server.url}/v1/config`, 'GET', undefined, bearer)).body.error).toMatchObject({
        code: 419,
        type: 'AuthenticationTimeoutException',
      });
      expect(server.requests.every((r) => !JSON.stringify(r).includes(issued.body.access_token))).toBe(true);

      // The credentials in a Basic header instead, as OAuth2 recommends.
      const basic = await fetch(`${server.url}/v1/oauth/tokens`, {
        method: 'POST',
        headers: { authorization: `Basic ${Buffer.from('me:s3cret').toString('base64')}` },
        body: new URLSearchParams({ grant_type: 'client_credentials' }),
      });
      expect(basic.status).toBe(200);
    });
    await withCatalog(
      { auth: { kind: 'oauth', clients: [{ id: 'me', secret: 's' }], tokenPath: '/oauth2/token' }, expiredStatus: 401 },
      async (server) => {
        const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: 'me', client_secret: 's' });
        // Elsewhere the default path is just another route, which needs a token.
        expect((await fetch(`${server.url}/v1/oauth/tokens`, { method: 'POST', body: form })).status).toBe(401);
        const { access_token: token } = (await (await fetch(`${server.url}/oauth2/token`, { method: 'POST', body: form })).json()) as any;
        server.expireTokens();
        const expired = await call(`${server.url}/v1/config`, 'GET', undefined, { authorization: `Bearer ${token}` });
        expect(expired.body.error).toMatchObject({ code: 401, type: 'NotAuthorizedException' });
      },
    );
  });

  it('checks a SigV4 signature by signing the request again: a good one passes, one with another secret is a 403', async () => {
    const credentials = { accessKeyId: 'AKIDTEST', secretAccessKey: 'right-secret' };
    await withCatalog({ auth: { kind: 'sigv4', service: 'glue', region: 'eu-west-1', ...credentials } }, async (server) => {
      const signed = async (secretAccessKey: string, method: string, path: string, body?: string) => {
        const signer = new SignatureV4({
          service: 'glue',
          region: 'eu-west-1',
          credentials: { ...credentials, secretAccessKey },
          sha256: Sha256,
        });
        const [pathname, search] = path.split('?') as [string, string | undefined];
        const request = await signer.sign({
          method,
          protocol: 'http:',
          hostname: '127.0.0.1',
          port: server.port,
          path: pathname,
          query: Object.fromEntries(new URLSearchParams(search ?? '')),
          headers: { host: `127.0.0.1:${server.port}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
          ...(body !== undefined && { body }),
        });
        const { host: _host, ...headers } = request.headers;
        const response = await fetch(`${server.url}${path}`, { method, headers, ...(body !== undefined && { body }) });
        return response.status;
      };
      expect(await signed('right-secret', 'GET', '/v1/config?warehouse=x')).toBe(200);
      expect(await signed('right-secret', 'POST', '/v1/namespaces', JSON.stringify({ namespace: ['a b'] }))).toBe(200);
      expect(await signed('right-secret', 'GET', '/v1/namespaces/a%20b')).toBe(200);
      expect(await signed('wrong-secret', 'GET', '/v1/config')).toBe(403);
      expect((await call(`${server.url}/v1/config`, 'GET')).status).toBe(401);
    });
  });

  it('registers a table from a metadata file, adopting it as it is; the pointers survive a restart with statePath', async () => {
    await withTempDir(async (dir) => {
      const statePath = join(dir, 'state.json');
      const first = await startCatalogServer({ root: dir, statePath });
      servers.push(first);
      const { 'metadata-location': location } = (await setUp(`${first.url}/v1`)).body;
      const registered = await call(`${first.url}/v1/namespaces/costsync/register`, 'POST', {
        name: 'copy',
        'metadata-location': location,
      });
      expect(registered.status).toBe(200);
      expect(registered.body['metadata-location']).toBe(location);
      expect(registered.body.metadata).toEqual(readJson(location));
      expect(
        (await call(`${first.url}/v1/namespaces/costsync/register`, 'POST', { name: 'copy', 'metadata-location': location })).status,
      ).toBe(409);
      await first.close();
      const second = await startCatalogServer({ root: dir, statePath });
      servers.push(second);
      expect((await call(`${second.url}/v1/namespaces/costsync/tables/copy`, 'GET')).body['metadata-location']).toBe(location);
    });
  });

  it('vends credentials when asked to', async () => {
    await withCatalog({ vendedCredentials: { 's3.access-key-id': 'AK', 's3.secret-access-key': 'SK' } }, async (server) => {
      await setUp(`${server.url}/v1`);
      const table = `${server.url}/v1/namespaces/costsync/tables/line_items`;
      expect((await call(table, 'GET')).body.config).toEqual({});
      const vended = (await call(table, 'GET', undefined, { 'x-iceberg-access-delegation': 'vended-credentials' })).body;
      expect(vended.config).toEqual({ 's3.access-key-id': 'AK', 's3.secret-access-key': 'SK' });
      expect(vended['storage-credentials']).toEqual([{ prefix: vended.metadata.location, config: vended.config }]);
    });
  });

  it('a table created and committed through it reads back through icebird, by the ids the catalog assigned', async () => {
    await withCatalog({}, async (server) => {
      const base = `${server.url}/v1`;
      const { metadata } = (await setUp(base)).body;
      const schema: IcebergSchema = metadata.schemas[0];
      const spec: PartitionSpec = metadata['partition-specs'][0];
      const tableDir = fileURLToPath(metadata.location);
      mkdirSync(join(tableDir, 'data'), { recursive: true });
      const dataFile = join(tableDir, 'data', 'part-0.parquet');
      const ids = Object.fromEntries(schema.fields.map((f) => [f.name, f.id]));
      const instance = await DuckDBInstance.create(':memory:');
      const connection = await instance.connect();
      await connection.run(
        `COPY (SELECT 'acme' AS source, DATE '2025-06-02' AS usage_date, 1.5::DOUBLE AS cost UNION ALL SELECT 'acme', DATE '2025-06-03', 2.25)
         TO '${dataFile}' (FORMAT PARQUET, FIELD_IDS {source: ${ids.source}, usage_date: ${ids.usage_date}, cost: ${ids.cost}})`,
      );
      connection.closeSync();
      instance.closeSync();
      const snap = snapshot(metadata, null);
      const manifest = await encodeManifest(
        [
          {
            status: 1,
            snapshot_id: snap['snapshot-id'],
            sequence_number: 1,
            file_sequence_number: 1,
            data_file: bareDataFile(
              `${metadata.location}/data/part-0.parquet`,
              { source: 'acme', usage_date_month: 665 },
              2,
              statSync(dataFile).size,
            ),
          },
        ],
        schema,
        spec,
      );
      const manifestPath = join(tableDir, 'metadata', 'manifest-0.avro');
      writeFileSync(manifestPath, manifest);
      const list = await encodeManifestList(
        [
          {
            manifest_path: `${metadata.location}/metadata/manifest-0.avro`,
            manifest_length: manifest.length,
            partition_spec_id: 0,
            content: 0,
            sequence_number: 1,
            min_sequence_number: 1,
            added_snapshot_id: snap['snapshot-id'],
            added_files_count: 1,
            existing_files_count: 0,
            deleted_files_count: 0,
            added_rows_count: 2,
            existing_rows_count: 0,
            deleted_rows_count: 0,
            partitions: null,
            key_metadata: null,
          },
        ],
        { id: snap['snapshot-id'], parentId: null, sequenceNumber: 1 },
      );
      writeFileSync(fileURLToPath(snap['manifest-list']), list);
      const committed = await call(`${base}/namespaces/costsync/tables/line_items`, 'POST', appendChange(metadata, snap));
      expect(committed.status).toBe(200);
      expect(readdirSync(join(tableDir, 'metadata')).filter((f) => f.endsWith('.metadata.json'))).toHaveLength(2);
      const rows = await readIceberg(metadata.location, { metadataFileName: basename(committed.body['metadata-location']) });
      expect(
        rows.map((r) => ({
          ...r,
          usage_date: String(r.usage_date instanceof Date ? r.usage_date.toISOString() : r.usage_date).slice(0, 10),
        })),
      ).toEqual([
        { source: 'acme', usage_date: '2025-06-02', cost: 1.5 },
        { source: 'acme', usage_date: '2025-06-03', cost: 2.25 },
      ]);
    });
  });
});
