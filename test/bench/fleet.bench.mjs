#!/usr/bin/env node
// The fleet benchmark (issue 83): N workspaces, one key each at 60 requests a minute, synced by P shard
// processes (`--shard i/P`, each its own --db and --state-dir, as Kubernetes Indexed Job pods) into one
// Iceberg REST catalog (the project's test catalog, test/catalog/server.mjs, with multi-table transactions):
// a backfill, then a nightly over unchanged data, then one past the snapshots' retention (`--iceberg-retention 1s`). Prints per phase the wall time, table commits, commits
// refused as conflicts, table loads, snapshots of line_items and peak RSS per pod; then reads line_items and
// focus back through the catalog with icebird (a reader costsync did not write) and compares each
// source's rows with the API's. Asserts nothing. Run after `npm ci` (uses dist/):
//   npm run bench:fleet
// Environment: BENCH_FLEET_WORKSPACES (default 200), BENCH_FLEET_PODS (10), BENCH_FLEET_DAYS (30),
// BENCH_FLEET_ROWS (line items a day per workspace, 100), BENCH_FLEET_RPM (60); BENCH_SMOKE=1: tiny sizes.
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { icebergMetadata, icebergRead } from 'icebird';
import { startEmulator } from '../../dist/emulator/server.js';
import { addDays } from '../../dist/dates.js';
import { startCatalogServer } from '../catalog/server.mjs';
import { BIN, size, tempDir, watchChild } from './common.mjs';

const WORKSPACES = Number(size('BENCH_FLEET_WORKSPACES', '200', '4'));
const PODS = Number(size('BENCH_FLEET_PODS', '10', '2'));
const DAYS = Number(size('BENCH_FLEET_DAYS', '30', '3'));
const ROWS = Number(size('BENCH_FLEET_ROWS', '100', '5'));
const RPM = Number(size('BENCH_FLEET_RPM', '60', '100000'));
const SCOPES = ['line_items:read', 'rollups:read', 'anomalies:read', 'usage:write'];
const NS = ['costsync'];
const END = '2025-06-30';
const START = addDays(END, -(DAYS - 1));

/** One pod's run: its exit code and peak RSS (sampled from /proc). */
async function pod(config, i, dir, catalogUrl, extra) {
  const env = { PATH: process.env.PATH, TZ: 'UTC' };
  for (let w = 0; w < WORKSPACES; w++) env[`KEY_${w}`] = `fleet-key-${w}`;
  const child = spawn(
    BIN,
    [
      'sync',
      '--config',
      config,
      '--shard',
      `${i}/${PODS}`,
      '--db',
      join(dir, 'pod-{shard}.duckdb'),
      '--state-dir',
      join(dir, 'state-{shard}'),
      '--catalog',
      catalogUrl,
      '--start-date',
      START,
      '--until',
      END,
      '--log-format',
      'json',
      '--quiet',
      ...extra,
    ],
    { env, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const { code, peakMb, cpuSeconds: cpu } = await watchChild(child, 200);
  if (code !== 0) process.stderr.write(`pod ${i} exited ${code}:\n${stderr.slice(-2000)}\n`);
  return { code, peakMb, cpuSeconds: cpu };
}

/** Every pod at once; the phase's figures from the catalog's log. */
async function phase(name, config, dir, catalog, extra = []) {
  const before = { commits: catalog.commits, requests: catalog.requests.length };
  const started = Date.now();
  const pods = await Promise.all(Array.from({ length: PODS }, (_, i) => pod(config, i + 1, dir, catalog.url, extra)));
  const seconds = (Date.now() - started) / 1000;
  const requests = catalog.requests.slice(before.requests);
  const conflicts = requests.filter((r) => r.status === 409).length;
  const loads = requests.filter((r) => r.method === 'GET' && /\/tables\/[^/]+$/.test(r.path)).length;
  const snapshots = catalog.table(NS, 'line_items')?.metadata.snapshots.length ?? 0;
  const metadataBytes = Buffer.byteLength(JSON.stringify(catalog.table(NS, 'line_items')?.metadata ?? {}));
  const rss = pods.map((p) => p.peakMb);
  const cpu = pods.reduce((n, p) => n + p.cpuSeconds, 0);
  console.log(
    `fleet: ${name}: ${WORKSPACES} workspaces over ${PODS} pods, ${seconds.toFixed(1)} s; exit codes ${[...new Set(pods.map((p) => p.code))].join(',')}; ` +
      `${catalog.commits - before.commits} table commits (${((catalog.commits - before.commits) / PODS).toFixed(1)} a pod), ${conflicts} refused as conflicts, ${loads} table loads; ` +
      `line_items: ${snapshots} snapshots, metadata ${(metadataBytes / 1024).toFixed(0)} KiB; peak RSS a pod ${Math.min(...rss).toFixed(0)}-${Math.max(...rss).toFixed(0)} MB; the pods' CPU ${cpu.toFixed(1)} s (${((cpu / WORKSPACES) * 1000).toFixed(0)} ms a workspace)`,
  );
}

/** `file://` URLs served from disk (with ranges), for icebird, which reads through fetch. */
function serveFiles() {
  const real = globalThis.fetch;
  globalThis.fetch = async (input, init) => {
    const url = String(input instanceof globalThis.Request ? input.url : input);
    if (!url.startsWith('file:')) return real(input, init);
    let body;
    try {
      body = readFileSync(fileURLToPath(url));
    } catch {
      return new globalThis.Response('not found', { status: 404 });
    }
    if (init?.method === 'HEAD') return new globalThis.Response(null, { status: 200, headers: { 'content-length': String(body.length) } });
    const m = /bytes=(\d+)-(\d*)/.exec(new globalThis.Headers(init?.headers).get('range') ?? '');
    if (!m) return new globalThis.Response(body, { status: 200 });
    const end = m[2] === '' ? body.length - 1 : Math.min(Number(m[2]), body.length - 1);
    return new globalThis.Response(body.subarray(Number(m[1]), end + 1), { status: 206 });
  };
}

/** Each table's rows per source as icebird reads the catalog's current snapshot, against the API's count. */
async function readBack(catalog) {
  serveFiles();
  for (const [table, column] of [
    ['line_items', 'source'],
    ['focus', 'x_source'],
  ]) {
    const t = catalog.table(NS, table);
    const location = String(t.metadata.location).replace(/\/+$/, '');
    const metadataFileName = t.metadataLocation.slice(t.metadataLocation.lastIndexOf('/') + 1);
    const metadata = await icebergMetadata({ tableUrl: location, metadataFileName });
    const rows = await icebergRead({ tableUrl: location, metadataFileName, metadata });
    const perSource = new Map();
    for (const r of rows) perSource.set(r[column], (perSource.get(r[column]) ?? 0) + 1);
    const wrong = [...Array(WORKSPACES).keys()].filter((w) => perSource.get(`ws-${w}`) !== ROWS * DAYS).length;
    console.log(
      `fleet: read back ${table} with icebird: ${rows.length} rows, ${perSource.size} sources, ${wrong} source(s) not holding the API's ${ROWS * DAYS} rows`,
    );
  }
}

const dir = tempDir('costsync-fleet-');
const keys = Array.from({ length: WORKSPACES }, (_, w) => ({
  key: `fleet-key-${w}`,
  scopes: SCOPES,
  plan: 'business',
  workspace: `ws-${w}`,
}));
const emulator = await startEmulator({
  port: 0,
  rateLimit: RPM,
  rowsPerDay: ROWS,
  startDate: START,
  endDate: END,
  anomaliesPerDay: 1,
  clock: { now: () => Date.now() },
  keys: { keys, connections: [] },
});
const catalog = await startCatalogServer({ root: join(dir, 'warehouse'), transactions: true });
try {
  const config = join(dir, 'config.json');
  writeFileSync(
    config,
    JSON.stringify({
      sources: keys.map((_, w) => ({ name: `ws-${w}`, 'base-url': emulator.url, 'api-key-env': `KEY_${w}` })),
      'rate-limit': RPM,
    }),
  );
  await phase('backfill', config, dir, catalog);
  await phase('nightly', config, dir, catalog);
  // As a nightly is once the lake is older than --iceberg-retention: each pod expires its own snapshots.
  await phase('nightly past the retention', config, dir, catalog, ['--iceberg-retention', '1s']);
  await readBack(catalog);
} finally {
  await catalog.close();
  await emulator.close();
}
