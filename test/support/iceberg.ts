/**
 * An independent reader of the Iceberg lake: `icebird` (a JavaScript Iceberg reader built on
 * hyparquet) reads each table through `fetch`. It fetches over HTTP, so a shim serves `file://`
 * locations from disk and icebird's `s3://` translation (`https://<bucket>.s3.amazonaws.com/<key>`)
 * from the bucket under test, byte ranges included. Nothing of costsync's own reading code is used.
 */
import { GetObjectCommand, HeadObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join as joinPath, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodeManifest, decodeManifestList, type DataFile, type PartitionValues } from '../../src/iceberg/avro.js';
import type { Clock } from '../../src/api/resilience.js';
import type { IcebergCatalog } from '../../src/iceberg/catalog.js';
import { SUMMARY, currentSnapshot, type TableMetadata } from '../../src/iceberg/metadata.js';
import { commitSource, directoryCatalog } from '../../src/iceberg/table.js';
import type { OutputTarget } from '../../src/outputs/target.js';
import { openReadOnly } from '../../src/storage/duckdb.js';
import { ICEBERG_TABLES, RUN_TABLES } from '../../src/storage/tables.js';
import { expect } from 'vitest';
import { backfillFlags, syncCommand } from './helpers.js';

type Fetch = typeof globalThis.fetch;

function rangeOf(init: RequestInit | undefined, length: number): [number, number] | null {
  const header = new Headers(init?.headers).get('range');
  const m = header ? /bytes=(\d+)-(\d*)/.exec(header) : null;
  return m ? [Number(m[1]), m[2] === '' ? length - 1 : Math.min(Number(m[2]), length - 1)] : null;
}

function answer(body: Buffer | null, init: RequestInit | undefined): Response {
  if (body === null) return new Response('not found', { status: 404, statusText: 'Not Found' });
  if (init?.method === 'HEAD') return new Response(null, { status: 200, headers: { 'content-length': String(body.length) } });
  const range = rangeOf(init, body.length);
  if (range)
    return new Response(body.subarray(range[0], range[1] + 1), {
      status: 206,
      headers: { 'content-length': String(range[1] - range[0] + 1) },
    });
  return new Response(body, { status: 200, headers: { 'content-length': String(body.length) } });
}

/** Serves `file://` URLs (and, with `s3`, icebird's S3 URLs) to `fn`'s icebird reads. */
export async function withLakeFetch<T>(fn: () => Promise<T>, s3?: S3Client): Promise<T> {
  const real: Fetch = globalThis.fetch;
  const shim = async (input: Parameters<Fetch>[0], init?: RequestInit): Promise<Response> => {
    const url = String(input instanceof Request ? input.url : input);
    if (url.startsWith('file:')) {
      try {
        return answer(readFileSync(fileURLToPath(url)), init);
      } catch {
        return answer(null, init);
      }
    }
    const s3Url = /^https:\/\/([^.]+)\.s3\.amazonaws\.com\/(.*)$/.exec(url);
    if (s3Url && s3) {
      const [, bucket, key] = s3Url as unknown as [string, string, string];
      try {
        if (init?.method === 'HEAD') {
          const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: decodeURIComponent(key) }));
          return new Response(null, { status: 200, headers: { 'content-length': String(head.ContentLength ?? 0) } });
        }
        const out = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: decodeURIComponent(key) }));
        return answer(Buffer.from(await out.Body!.transformToByteArray()), init);
      } catch {
        return answer(null, init);
      }
    }
    return real(input, init);
  };
  globalThis.fetch = shim;
  try {
    return await fn();
  } finally {
    globalThis.fetch = real;
  }
}

/**
 * Every row of the Iceberg table at `tableUrl` (its current snapshot, or `metadataFileName`'s), as icebird
 * reads it; with `snapshotId`, that snapshot's rows (icebird reads the current one, so the metadata says it is).
 */
export async function readIceberg(
  tableUrl: string,
  options: { metadataFileName?: string; snapshotId?: number; s3?: S3Client; metadata?: unknown } = {},
): Promise<Record<string, unknown>[]> {
  const { icebergMetadata, icebergRead } = await import('icebird');
  return withLakeFetch(async () => {
    // A catalog's loadTable answer carries the metadata itself (where its file is may be the catalog's alone).
    const metadata =
      options.metadata !== undefined
        ? (structuredClone(options.metadata) as Awaited<ReturnType<typeof icebergMetadata>>)
        : await icebergMetadata({
            tableUrl,
            ...(options.metadataFileName !== undefined && { metadataFileName: options.metadataFileName }),
          });
    if (options.snapshotId !== undefined) metadata['current-snapshot-id'] = options.snapshotId;
    return icebergRead({ tableUrl, metadata });
  }, options.s3);
}

/** A value as text, the way the warehouse's `::VARCHAR` would compare: dates, times and numbers normalised. */
function canonical(value: unknown, type: string): string {
  if (value === null || value === undefined) return 'null';
  if (type === 'DATE') return (value instanceof Date ? value.toISOString() : String(value)).slice(0, 10);
  if (type.startsWith('TIMESTAMP')) {
    // DuckDB's text ("2025-06-01 00:00:00.5+00") and a Date, both to ISO at millisecond precision.
    const ms =
      value instanceof Date
        ? value.getTime()
        : Date.parse(
            String(value)
              .replace(' ', 'T')
              .replace(/([+-]\d\d)$/, '$1:00'),
          );
    return new Date(ms).toISOString();
  }
  // hyparquet turns a decimal into a double by division (0.7 reads as 0.7000000000000001): compare at the column's scale.
  const decimal = /^DECIMAL\(\d+,\s*(\d+)\)$/.exec(type);
  if (decimal) return Number(value).toFixed(Number(decimal[1]));
  if (type === 'DOUBLE' || type === 'BIGINT' || type === 'INTEGER') return String(Number(value));
  return String(value);
}

/**
 * Per Iceberg table but the run tables (or per one of `tables`), the warehouse's rows of `sources` against
 * what icebird reads from the lake: rows missing from the lake and rows only the lake has, compared value for value.
 */
export async function icebergDifferences(
  db: string,
  lakeUrl: string,
  options: {
    sources?: readonly string[];
    tables?: readonly string[];
    s3?: S3Client;
    /** Where a table's current metadata is (a catalog's `loadTable`); null: no such table. Default: `lakeUrl/<table>`'s hint. */
    locate?: (table: string) => Promise<{ tableUrl: string; metadataFileName: string; metadata?: unknown } | null>;
  } = {},
): Promise<Record<string, { rows: number; missing: number; extra: number }>> {
  const wh = await openReadOnly(db);
  try {
    const result: Record<string, { rows: number; missing: number; extra: number }> = {};
    for (const [table, def] of Object.entries(ICEBERG_TABLES)) {
      if (options.tables !== undefined && !options.tables.includes(table)) continue;
      // The run tables when named: a run that was stopped or left its lake behind writes them in a later run.
      if (RUN_TABLES.includes(table) && options.tables === undefined) continue;
      const columns = await wh.sql<{ name: string; type: string }>(
        'SELECT column_name AS name, data_type AS type FROM duckdb_columns() WHERE table_name = $1 ORDER BY column_index',
        [table],
      );
      const only = options.sources === undefined ? '' : `WHERE "${def.source}" IN (${options.sources.map((s) => `'${s}'`).join(', ')})`;
      const warehouseRows = (await wh.table(`SELECT * FROM ${table} ${only}`)).rows;
      const located = options.locate === undefined ? undefined : await options.locate(table);
      // A table never created (its source had no rows of it) reads as empty.
      const absent =
        located === null || (located === undefined && lakeUrl.startsWith('file:') && !existsSync(fileURLToPath(`${lakeUrl}/${table}`)));
      const read = () =>
        located === undefined || located === null
          ? readIceberg(`${lakeUrl}/${table}`, options.s3 ? { s3: options.s3 } : {})
          : readIceberg(located.tableUrl, {
              metadataFileName: located.metadataFileName,
              ...(located.metadata !== undefined && { metadata: located.metadata }),
              ...(options.s3 && { s3: options.s3 }),
            });
      const lakeRows = (absent ? [] : await read()).filter(
        (r) => options.sources === undefined || options.sources.includes(String(r[def.source])),
      );
      const key = (row: Record<string, unknown>) => columns.map((c) => canonical(row[c.name], c.type)).join('\u0001');
      const counts = new Map<string, number>();
      for (const r of warehouseRows) counts.set(key(r), (counts.get(key(r)) ?? 0) + 1);
      let extra = 0;
      for (const r of lakeRows) {
        const k = key(r);
        const n = counts.get(k) ?? 0;
        if (n === 0) extra += 1;
        else counts.set(k, n - 1);
      }
      const missing = [...counts.values()].reduce((a, b) => a + b, 0);
      result[table] = { rows: warehouseRows.length, missing, extra };
    }
    return result;
  } finally {
    wh.close();
  }
}

/**
 * The files of a lake on disk (`dir`; `location` is how its metadata names it, a `file://` URL or
 * `s3://bucket/prefix`) against what its tables (the lake's, unless named) reference: files any kept snapshot needs that are
 * missing, and files under a table that nothing references (a killed writer's leftovers).
 */
export async function icebergFileCheck(
  dir: string,
  location: string,
  tables: readonly string[] = Object.keys(ICEBERG_TABLES),
): Promise<{ missing: string[]; unreferenced: string[] }> {
  const root = location.endsWith('/') ? location : `${location}/`;
  const local = (url: string) => joinPath(dir, url.slice(root.length));
  const missing: string[] = [];
  const unreferenced: string[] = [];
  for (const table of tables) {
    const tableDir = joinPath(dir, table);
    if (!existsSync(tableDir)) continue;
    const hint = Number(readFileSync(joinPath(tableDir, 'metadata', 'version-hint.text'), 'utf8'));
    const referenced = new Set<string>(['metadata/version-hint.text', `metadata/v${hint}.metadata.json`]);
    const metadata = JSON.parse(readFileSync(joinPath(tableDir, 'metadata', `v${hint}.metadata.json`), 'utf8')) as {
      snapshots: { 'manifest-list': string }[];
      'metadata-log': { 'metadata-file': string }[];
    };
    const need = (url: string) => {
      const path = local(url);
      referenced.add(relative(tableDir, path));
      if (!existsSync(path)) missing.push(relative(dir, path));
      return existsSync(path);
    };
    for (const e of metadata['metadata-log']) need(e['metadata-file']);
    for (const snapshot of metadata.snapshots) {
      if (!need(snapshot['manifest-list'])) continue;
      for (const m of await decodeManifestList(readFileSync(local(snapshot['manifest-list'])))) {
        if (!need(m.manifest_path)) continue;
        for (const e of await decodeManifest(readFileSync(local(m.manifest_path)))) {
          // A file a snapshot deleted may be gone once the snapshots before it expired.
          if (e.status === 2) referenced.add(relative(tableDir, local(e.data_file.file_path)));
          else need(e.data_file.file_path);
        }
      }
    }
    for (const entry of readdirSync(tableDir, { recursive: true, withFileTypes: true })) {
      if (!entry.isFile()) continue;
      const rel = relative(tableDir, joinPath(entry.parentPath, entry.name));
      if (!referenced.has(rel)) unreferenced.push(`${table}/${rel}`);
    }
  }
  return { missing: [...new Set(missing)], unreferenced };
}

/**
 * The data files the current snapshot of `table` reads, in a lake on disk (`dir`, whose metadata names
 * files by `file://` URL), each with the record count its manifest gives: what a reader's scan opens.
 */
export async function icebergLiveFiles(dir: string, table: string): Promise<{ path: string; records: number }[]> {
  const tableDir = joinPath(dir, table);
  const hint = Number(readFileSync(joinPath(tableDir, 'metadata', 'version-hint.text'), 'utf8'));
  const snapshot = currentSnapshot(
    JSON.parse(readFileSync(joinPath(tableDir, 'metadata', `v${hint}.metadata.json`), 'utf8')) as TableMetadata,
  );
  const files: { path: string; records: number }[] = [];
  for (const m of snapshot === null ? [] : await decodeManifestList(readFileSync(fileURLToPath(snapshot['manifest-list'])))) {
    for (const e of await decodeManifest(readFileSync(fileURLToPath(m.manifest_path)))) {
      if (e.status !== 2) files.push({ path: fileURLToPath(e.data_file.file_path), records: Number(e.data_file.record_count) });
    }
  }
  return files;
}

/**
 * Where a REST catalog says each table's current metadata is, asked as any engine asks (`GET …/tables/{t}`,
 * `loadTable`): for `icebergDifferences`' `locate`.
 */
export function catalogLocator(
  catalogUrl: string,
  prefix: string | null,
  namespace: readonly string[],
  headers: Record<string, string> = {},
  o: { withMetadata?: boolean } = {},
) {
  return async (table: string): Promise<{ tableUrl: string; metadataFileName: string; metadata?: unknown } | null> => {
    const base = `${catalogUrl}/v1/${prefix === null ? '' : `${prefix}/`}namespaces/${namespace.map(encodeURIComponent).join('%1F')}/tables/${table}`;
    const response = await fetch(base, { headers });
    if (response.status === 404) return null;
    if (!response.ok) throw new Error(`loadTable ${table}: ${response.status} ${await response.text()}`);
    const body = (await response.json()) as { 'metadata-location': string; metadata: { location: string } };
    const location = body['metadata-location'];
    return {
      tableUrl: body.metadata.location.replace(/\/+$/, ''),
      metadataFileName: location.slice(location.lastIndexOf('/') + 1),
      ...(o.withMetadata === true && { metadata: body.metadata }),
    };
  };
}

/** A data file as a manifest lists it, with no column statistics (for commits whose file is not read, or read whole). */
export function bareDataFile(filePath: string, partition: PartitionValues, records: number, bytes: number): DataFile {
  return {
    content: 0,
    file_path: filePath,
    file_format: 'PARQUET',
    partition,
    record_count: records,
    file_size_in_bytes: bytes,
    column_sizes: null,
    value_counts: null,
    null_value_counts: null,
    nan_value_counts: null,
    lower_bounds: null,
    upper_bounds: null,
    key_metadata: null,
    split_offsets: null,
    equality_ids: null,
    sort_order_id: null,
  };
}

/**
 * A commit of one placeholder data file of `source` (never read) to the directory table `table`,
 * replacing the source's files when `replace`; through `catalog` when given (one that misreports, say).
 */
export async function placeholderCommit(
  target: OutputTarget,
  table: string,
  source: string,
  n: number,
  clock: Clock,
  options: { replace?: boolean; catalog?: IcebergCatalog } = {},
) {
  const key = `${table}/data/source=${source}/${n}.parquet`;
  await target.putBytes(key, Buffer.from('not read here'));
  return commitSource(
    options.catalog ?? directoryCatalog(target),
    table,
    {
      source,
      columns: [
        { name: 'id', type: 'VARCHAR' },
        { name: 'source', type: 'VARCHAR' },
      ],
      partitioning: { source: 'source', month: null },
      add: [bareDataFile(target.location(key), { source }, n, 13)],
      replaces: () => options.replace === true,
      summary: { [SUMMARY.commitId]: `${source}.${n}` },
    },
    clock,
  );
}

/** The clock and key the Iceberg tests' runs use. */
export const LAKE_CLOCK = { now: () => Date.parse('2025-07-01T06:00:00Z') };
export const LAKE_ENV = { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC' };

/** A sync into `dir`, with the Iceberg lake `dir/lake`; `warehouseOnly` writes the warehouse alone (no --out). */
export function lakeSyncArgs(url: string, dir: string, extra: string[] = [], warehouseOnly = false): string[] {
  return syncCommand(url, dir, [
    ...(warehouseOnly ? [] : ['--format', 'iceberg', '--out', joinPath(dir, 'lake')]),
    ...backfillFlags(7),
    '--quiet',
    ...extra,
  ]);
}

/** A table's metadata at `version`, else at its version hint. */
export const metadataOf = (lake: string, table: string, version?: number): TableMetadata => {
  const v = version ?? Number(readFileSync(joinPath(lake, table, 'metadata', 'version-hint.text'), 'utf8'));
  return JSON.parse(readFileSync(joinPath(lake, table, 'metadata', `v${v}.metadata.json`), 'utf8')) as TableMetadata;
};

/** Every table of `icebergDifferences` holds rows, none missing and none extra. */
export function expectEqualToWarehouse(diff: Record<string, { rows: number; missing: number; extra: number }>) {
  for (const [table, d] of Object.entries(diff)) {
    expect({ table, missing: d.missing, extra: d.extra }).toEqual({ table, missing: 0, extra: 0 });
    expect(d.rows, table).toBeGreaterThan(0);
  }
}
