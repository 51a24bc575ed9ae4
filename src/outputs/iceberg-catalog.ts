/**
 * Iceberg tables committed through a REST catalog (`--catalog`): the catalog holds each table's current
 * metadata and swaps it atomically; costsync writes the data files, manifests and manifest lists under
 * the table's `location` (a directory or a bucket, with the credentials the catalog vends where it does).
 * A table missing from the catalog is created (the catalog's field ids are used from then on), or, when
 * `--out` holds a directory table of that name, registered as it is (the upgrade path).
 */
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import type { IcebergCatalog, LoadedTable, NewTable, TableCommit } from '../iceberg/catalog.js';
import type { CommitOutcome, CreateTableRequest, LoadTableResult, TableChange } from '../iceberg/rest-types.js';
import { loadTable } from '../iceberg/table.js';
import { metadataKey } from '../iceberg/metadata.js';
import { ConfigError, CostsyncError, InternalError } from '../errors.js';
import { ICEBERG_TABLES } from '../storage/tables.js';
import { bucketTarget, directoryTarget, outputTarget, type OutputTarget } from './target.js';
import type { Dispatcher } from 'undici';
import type { Clock } from '../api/resilience.js';
import type { Logger } from '../log.js';
import type { CatalogSettings } from '../config.js';
import type { RestCatalog as RestCatalogClient } from '../iceberg/rest-client.js';
import { awsSettingsOf, isS3Url, parseS3Url } from './s3-url.js';
import type { Bucket } from './s3.js';

/** What this needs of the REST client (`iceberg/rest-client.ts`). */
export interface CatalogClient {
  supports(endpoint: string): boolean;
  namespaceExists(ns: string[]): Promise<boolean>;
  createNamespace(ns: string[]): Promise<void>;
  loadTable(ns: string[], name: string): Promise<LoadTableResult | null>;
  createTable(ns: string[], req: CreateTableRequest): Promise<LoadTableResult | 'exists'>;
  registerTable(ns: string[], name: string, metadataLocation: string): Promise<LoadTableResult | 'exists'>;
  commitTable(ns: string[], name: string, change: TableChange, idempotencyKey?: string): Promise<CommitOutcome>;
  commitTransaction(changes: { namespace: string[]; name: string; change: TableChange }[], idempotencyKey?: string): Promise<CommitOutcome>;
  describe(): string;
}

export interface RestTablesOptions {
  client: CatalogClient;
  namespace: string[];
  /** `--out`: where tables costsync creates go (`<out>/<table>`), and where directory tables to adopt are; null: the catalog places them. */
  out: OutputTarget | null;
  /** Where files bound for a bucket wait (in the state directory). */
  scratchRoot: string;
  /** The tables costsync writes: with `--out`, each one the catalog has is checked to be where `--out` says, at once. */
  tables?: readonly string[];
  /** A new idempotency key, one per commit (its resends reuse it). */
  newKey: () => string;
  /** A bucket with the credentials a catalog vended (a table's `config`); null: the default chain's. */
  vendedBucket?: (name: string, config: Record<string, string>) => Promise<Bucket | null>;
}

/** Beside a directory table a catalog adopted: which catalog holds it now. */
export function catalogMarkerKey(table: string): string {
  return `${table}/metadata/costsync-catalog.json`;
}

/**
 * Refuses to commit directory versions of a table a catalog adopted (`register`): the catalog's commits
 * are not versions a directory reader or writer sees, so a run without `--catalog` would fork the table.
 */
export async function refuseAdoptedTables(out: OutputTarget, tables: readonly string[]): Promise<void> {
  for (const table of tables) {
    const marker = await out.getText(catalogMarkerKey(table));
    if (marker === null) continue;
    const { catalog } = JSON.parse(marker) as { catalog: string };
    throw new ConfigError(
      `The Iceberg table at ${out.location(table)} is committed through a REST catalog (${catalog}) since it was registered there.`,
      'Pass the same --catalog (and --catalog-warehouse, --catalog-namespace) as the run that registered it.',
    );
  }
}

/** The transaction endpoint, as the config's `endpoints` name it. */
const TRANSACTIONS = 'POST /v1/{prefix}/transactions/commit';

/**
 * A target whose keys are `<table>/…` over `inner`, which is rooted at the table's location: the keys
 * the Iceberg code uses for directory tables (relative to the lake) then work for a table anywhere.
 */
export function tableTarget(inner: OutputTarget, table: string): OutputTarget {
  const strip = (key: string) => {
    if (!key.startsWith(`${table}/`)) throw new InternalError(`The key ${key} is not under the table ${table}.`);
    return key.slice(table.length + 1);
  };
  return {
    url: inner.url,
    remote: inner.remote,
    scratch: (name) => inner.scratch(name),
    putFile: (key, file, signal) => inner.putFile(strip(key), file, signal),
    putText: (key, text) => inner.putText(strip(key), text),
    remove: (key) => inner.remove(strip(key)),
    list: async (prefix) => (await inner.list(strip(prefix))).map((k) => `${table}/${k}`),
    removeLeftovers: (owned) => inner.removeLeftovers((k) => owned(`${table}/${k}`)),
    check: (probe) => inner.check(probe),
    location: (key) => {
      // The table itself (`<table>`, `<table>/`) is the inner root, which targets spell with or without a slash.
      if (key === table || key === `${table}/`) return inner.location('').replace(/\/?$/, key === table ? '' : '/');
      return inner.location(strip(key));
    },
    getText: (key) => inner.getText(strip(key)),
    getBytes: (key) => inner.getBytes(strip(key)),
    putBytes: (key, bytes) => inner.putBytes(strip(key), bytes),
    createText: (key, text) => inner.createText(strip(key), text),
  };
}

/** A store for a table that does not exist yet: it holds nothing, and nothing is written to it. */
function emptyStore(table: string): OutputTarget {
  const refuse = (): never => {
    throw new InternalError(`The Iceberg table ${table} was written to before it was created.`);
  };
  return {
    url: '',
    remote: false,
    scratch: refuse,
    putFile: refuse,
    putText: refuse,
    remove: async () => undefined,
    list: async () => [],
    removeLeftovers: async () => 0,
    check: async () => undefined,
    location: refuse,
    getText: async () => null,
    getBytes: async () => null,
    putBytes: refuse,
    createText: refuse,
  };
}

/**
 * The directory table `table` under `--out`, if any. A bucket this machine has no credentials, region or
 * access of its own for (the catalog vends them per table) holds none costsync wrote from here.
 */
async function directoryTableAt(out: OutputTarget, table: string) {
  try {
    return await loadTable(out, table);
  } catch (error) {
    if (error instanceof CostsyncError && ['CS_ERR_S3_CREDENTIALS', 'CS_ERR_S3_REGION', 'CS_ERR_S3_ACCESS_DENIED'].includes(error.code))
      return null;
    throw error;
  }
}

/** The tables of one namespace of a REST catalog, as an `IcebergCatalog`. */
export async function restTables(o: RestTablesOptions): Promise<IcebergCatalog> {
  const { client, namespace: ns } = o;
  if (!(await client.namespaceExists(ns))) await client.createNamespace(ns);
  const qualified = (table: string) => [...ns, table].join('.');
  const where = `${client.describe()}, namespace ${ns.join('.')}`;
  const stores = new Map<string, OutputTarget>();

  /** The store at a table's location (kept per location and credentials: a client per bucket). */
  const storeOf = async (table: string, result: LoadTableResult): Promise<OutputTarget> => {
    const location = result.metadata.location.replace(/\/+$/, '');
    const vended = vendedConfig(result, location);
    const cacheKey = `${location}\n${JSON.stringify(vended ?? {})}`;
    const known = stores.get(cacheKey);
    if (known !== undefined) return known;
    let inner: OutputTarget;
    if (location.startsWith('file:')) {
      inner = directoryTarget(fileURLToPath(location));
    } else if (isS3Url(location)) {
      const { bucket } = parseS3Url(location, 'the table location');
      const opened = vended !== null && o.vendedBucket !== undefined ? await o.vendedBucket(bucket, vended) : null;
      inner = bucketTarget(location, join(o.scratchRoot, table), opened ?? undefined);
    } else {
      throw new ConfigError(
        `The catalog places the table ${qualified(table)} at ${location}, which costsync cannot write (it writes file:// and s3:// locations).`,
        'Create the namespace with an s3:// (or file://) location, or give --out an s3:// prefix or a directory for the tables costsync creates.',
      );
    }
    const store = tableTarget(inner, table);
    stores.set(cacheKey, store);
    return store;
  };

  const loaded = async (table: string, result: LoadTableResult | null): Promise<LoadedTable> =>
    result === null
      ? { version: 0, metadata: null, metadataLocation: null, store: emptyStore(table) }
      : {
          version: 0,
          metadata: result.metadata,
          metadataLocation: result['metadata-location'] ?? null,
          store: await storeOf(table, result),
        };

  const load = async (table: string) => loaded(table, await client.loadTable(ns, table));

  /** `--out`'s place for `table`, and an error when the catalog's table is elsewhere. */
  const expectedLocation = (table: string) => (o.out === null ? null : o.out.location(table).replace(/\/+$/, ''));
  const checkLocation = (table: string, result: LoadTableResult) => {
    const expected = expectedLocation(table);
    const actual = result.metadata.location.replace(/\/+$/, '');
    if (expected !== null && actual !== expected) {
      throw new ConfigError(
        `The table ${qualified(table)} in the catalog is at ${actual}, not at ${expected} under --out.`,
        'Leave --out out (the catalog knows where its tables are), or point it where the tables are.',
      );
    }
  };

  const ensure = async (table: string, init: () => NewTable): Promise<LoadedTable> => {
    let result = await client.loadTable(ns, table);
    if (result === null) {
      // A directory table of this name under --out (an earlier costsync's) is adopted as it is.
      const existing = o.out === null ? null : await directoryTableAt(o.out, table);
      if (existing !== null && existing.version > 0) {
        const registered = await client.registerTable(ns, table, o.out!.location(`${table}/${metadataKey(existing.version)}`));
        result = registered === 'exists' ? await client.loadTable(ns, table) : registered;
        // From now on the catalog holds the table: a run without --catalog must not commit a directory version beside it.
        await o.out!.putText(catalogMarkerKey(table), `${JSON.stringify({ catalog: where, table: qualified(table) })}\n`);
      } else {
        const { schema, spec, properties } = init();
        const location = expectedLocation(table);
        const created = await client.createTable(ns, {
          name: table,
          ...(location !== null && { location }),
          schema,
          'partition-spec': spec,
          'write-order': { 'order-id': 0, fields: [] },
          properties,
          'stage-create': false,
        });
        result = created === 'exists' ? await client.loadTable(ns, table) : created;
      }
      if (result === null) throw new InternalError(`The table ${qualified(table)} was created, but the catalog does not load it.`);
    }
    checkLocation(table, result);
    return loaded(table, result);
  };

  // Refused before the run fetches anything, rather than at its first commit.
  if (o.out !== null) {
    for (const table of o.tables ?? []) {
      const result = await client.loadTable(ns, table);
      if (result !== null) checkLocation(table, result);
    }
  }
  const transactions = client.supports(TRANSACTIONS);
  return {
    kind: 'rest',
    where,
    name: (table) => `${qualified(table)} in ${client.describe()}`,
    transactions,
    load,
    ensure,
    async commit({ table, change }: TableCommit): Promise<CommitOutcome> {
      return client.commitTable(ns, table, change, o.newKey());
    },
    async commitAll(commits: readonly TableCommit[]): Promise<CommitOutcome> {
      if (!transactions) throw new InternalError('A multi-table commit to a catalog that offers no transactions.');
      return client.commitTransaction(
        commits.map((c) => ({ namespace: ns, name: c.table, change: c.change })),
        o.newKey(),
      );
    },
  };
}

/**
 * The storage settings a catalog vended for a table (S3 keys among them): the `storage-credentials`
 * entry with the longest prefix of `location`, else the load's `config` when it holds a key. Pure.
 */
export function vendedConfig(result: LoadTableResult, location: string): Record<string, string> | null {
  // Only an entry with S3 keys lends them (another may be for another store, or name a role this client cannot assume).
  const entries = (result['storage-credentials'] ?? []).filter(
    (c) => location.startsWith(c.prefix.replace(/\/+$/, '')) && c.config['s3.access-key-id'] !== undefined,
  );
  const best = entries.sort((a, b) => b.prefix.length - a.prefix.length)[0];
  if (best !== undefined) return best.config;
  const config = result.config ?? {};
  return config['s3.access-key-id'] !== undefined ? config : null;
}

export interface OpenCatalogOptions {
  env: NodeJS.ProcessEnv;
  /** Where buckets' endpoint, region and keys (and SigV4's keys) come from: the command's environment; process.env by default. */
  awsEnv?: NodeJS.ProcessEnv | undefined;
  clock: Clock;
  signal?: AbortSignal | undefined;
  logger: Pick<Logger, 'warn' | 'addSecret'>;
  /** `--out` ('' : none). */
  out: string;
  /** Where files bound for a bucket wait. */
  scratchRoot: string;
  /** For tests: undici's dispatcher. */
  dispatcher?: Dispatcher;
}

/** How requests to the catalog `settings` names are authorised (the environment's credentials). */
async function authOf(settings: CatalogSettings, o: OpenCatalogOptions) {
  const { catalogAuth } = await import('../iceberg/rest-auth.js');
  const keys = awsSettingsOf(o.awsEnv ?? process.env).credentials;
  return catalogAuth({
    ...(keys !== undefined && { credentials: async () => keys }),
    catalogUrl: settings.url,
    env: o.env,
    oauthUri: settings.oauthUri,
    oauthScope: settings.oauthScope,
    sigv4: settings.sigv4,
    sigv4Region: settings.sigv4Region,
    clock: o.clock,
    warn: (m) => o.logger.warn(m),
    addSecret: (s) => o.logger.addSecret(s),
  });
}

/**
 * Connects to the catalog `settings` name (its config first, with the credentials the environment
 * gives) and returns its namespace's tables, with `close` for the client's connections.
 */
export async function openRestTables(
  settings: CatalogSettings,
  o: OpenCatalogOptions,
): Promise<IcebergCatalog & { close(): Promise<void> }> {
  const { RestCatalog, newIdempotencyKey } = await import('../iceberg/rest-client.js');
  const auth = await authOf(settings, o);
  const client = await RestCatalog.connect({
    url: settings.url,
    warehouse: settings.warehouse,
    auth,
    clock: o.clock,
    ...(o.signal !== undefined && { signal: o.signal }),
    ...(o.dispatcher !== undefined && { dispatcher: o.dispatcher }),
    warn: (m) => o.logger.warn(m),
  });
  try {
    const tables = await restTables({
      client,
      namespace: settings.namespace,
      out: o.out === '' ? null : outputTarget(o.out, o.scratchRoot, o.awsEnv),
      scratchRoot: o.scratchRoot,
      tables: Object.keys(ICEBERG_TABLES),
      newKey: () => newIdempotencyKey(o.clock.now()),
      vendedBucket: async (name, config) => (await import('./s3.js')).openVendedBucket(name, config, o.awsEnv),
    });
    return { ...tables, close: () => client.close() };
  } catch (error) {
    await client.close();
    throw error;
  }
}

/** One step of `costsync check`'s probe of a catalog. */
export interface CatalogProbe {
  step: string;
  ok: boolean;
  result: string;
  /** The error of a failed step (its code decides the exit). */
  error?: unknown;
}

/**
 * `costsync check` with `--catalog`: the config (and so the credentials), the namespace, a staged
 * create of a probe table (the catalog's write permission; a staged create commits nothing), and a
 * probe file written and removed where that table would live (the storage's).
 */
export async function probeCatalog(
  settings: CatalogSettings,
  o: OpenCatalogOptions & { describeError(e: unknown): string },
): Promise<CatalogProbe[]> {
  const probes: CatalogProbe[] = [];
  const step = async (name: string, fn: () => Promise<string>): Promise<boolean> => {
    try {
      probes.push({ step: name, ok: true, result: await fn() });
      return true;
    } catch (error) {
      probes.push({ step: name, ok: false, result: o.describeError(error).split('\n')[0]!, error });
      return false;
    }
  };
  const { RestCatalog } = await import('../iceberg/rest-client.js');

  const opened: { client: RestCatalogClient | null } = { client: null };
  const ns = settings.namespace;
  try {
    const connected = await step('GET /v1/config', async () => {
      const auth = await authOf(settings, o);
      opened.client = await RestCatalog.connect({
        url: settings.url,
        warehouse: settings.warehouse,
        auth,
        clock: o.clock,
        ...(o.dispatcher !== undefined && { dispatcher: o.dispatcher }),
        warn: (m) => o.logger.warn(m),
      });
      const c = opened.client;
      return `auth: ${auth.description}; prefix ${c.prefix ?? 'none'}; transactions ${c.supports(TRANSACTIONS) ? 'yes' : 'no (line_items and focus commit one after the other)'}`;
    });
    const c = opened.client;
    if (!connected || c === null) return probes;
    let exists = false;
    await step(`namespace ${ns.join('.')}`, async () => {
      exists = await c.namespaceExists(ns);
      return exists ? 'exists' : 'missing: the first sync creates it';
    });
    if (!exists) return probes;
    const staged: { location: string | null; result: LoadTableResult | null } = { location: null, result: null };
    const probeName = `_costsync_check_${Math.floor(o.clock.now() / 1000)}`;
    await step('create table (staged: nothing committed)', async () => {
      const out = o.out === '' ? null : outputTarget(o.out, o.scratchRoot, o.awsEnv);
      const created = await c.createTable(ns, {
        name: probeName,
        ...(out !== null && { location: out.location(probeName).replace(/\/+$/, '') }),
        schema: { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'source', required: false, type: 'string' }] },
        'stage-create': true,
      });
      if (created === 'exists') return 'allowed (a table of the probe name exists)';
      staged.location = created.metadata.location;
      staged.result = created;
      return `allowed; tables go to ${staged.location.replace(/\/[^/]*$/, '/')}`;
    });
    if (staged.location === null) return probes;
    const at = staged.location;
    await step('write to the table location', async () => {
      // With the credentials the catalog vended for the staged table, as a sync writes its tables.
      const vended = staged.result === null ? null : vendedConfig(staged.result, at);
      const bucket =
        vended !== null && isS3Url(at)
          ? (await import('./s3.js')).openVendedBucket(parseS3Url(at, 'the table location').bucket, vended, o.awsEnv)
          : undefined;
      const target = at.startsWith('file:')
        ? directoryTarget(fileURLToPath(at))
        : isS3Url(at)
          ? bucketTarget(at, o.scratchRoot, bucket, o.awsEnv)
          : null;
      if (target === null)
        throw new ConfigError(`The catalog places tables at ${at}, which costsync cannot write.`, 'Use a file:// or s3:// location.');
      await target.check(probeName);
      await target.putText('_costsync_probe', '{}');
      await target.remove('_costsync_probe');
      return `ok (${at})`;
    });
    return probes;
  } finally {
    await opened.client?.close();
  }
}
