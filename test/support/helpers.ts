/** Shared test helpers: an emulator on port 0 that always closes, a fake clock, raw HTTP. */
import { request } from 'undici';
import { startEmulator, type Emulator, type EmulatorInput } from '../../src/emulator/server.js';
import type { Clock } from '../../src/api/resilience.js';

/** Runs `fn` against a fresh emulator on a free loopback port, closing it afterwards. */
export async function withEmulator<T>(options: EmulatorInput, fn: (emulator: Emulator) => Promise<T>): Promise<T> {
  const emulator = await startEmulator({ port: 0, rateLimit: 0, ...options });
  try {
    return await fn(emulator);
  } finally {
    await emulator.close();
  }
}

/** A clock that only moves when slept on; records each sleep. Share it with the emulator. */
export interface FakeClock extends Clock {
  sleeps: number[];
  advance(ms: number): void;
}

export function fakeClock(startMs = Date.parse('2025-06-30T12:00:00Z')): FakeClock {
  let t = startMs;
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => t,
    sleep: async (ms: number) => {
      sleeps.push(ms);
      t += ms;
    },
    advance: (ms: number) => {
      t += ms;
    },
  };
}

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any;
  text: string;
}

/** One raw HTTP request; the body parsed as JSON when it is. */
export async function raw(
  url: string,
  path: string,
  init: { method?: 'GET' | 'POST' | 'PUT' | 'DELETE'; headers?: Record<string, string>; body?: string; key?: string | null } = {},
): Promise<RawResponse> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.key !== null) headers['x-api-key'] ??= init.key ?? 'demo-key';
  const res = await request(`${url}${path}`, { method: init.method ?? 'GET', headers, body: init.body });
  const text = await res.body.text();
  let body: unknown = undefined;
  try {
    body = JSON.parse(text);
  } catch {
    /* not JSON: left undefined */
  }
  return { status: res.statusCode, headers: res.headers, body, text };
}

/** A fixed span for deterministic tests. */
export const SPAN = { startDate: '2025-06-01', endDate: '2025-06-30' } as const;

/** A scripted HTTP server on port 0: each request gets the next reply; the last one repeats. */
export interface ScriptedReply {
  status?: number;
  body?: string | object;
  headers?: Record<string, string>;
  /** Never answer (for timeout tests). */
  hang?: boolean;
  /** Send the headers, then one byte every this many ms, never ending (a slowloris server). */
  trickleMs?: number;
  /** Stream a body of this many bytes (a JSON array that never closes), without holding it in memory. */
  hugeBytes?: number;
}

export async function withScriptedServer<T>(replies: ScriptedReply[], fn: (url: string, hits: () => number) => Promise<T>): Promise<T> {
  const { createServer } = await import('node:http');
  let hits = 0;
  const server = createServer((req, res) => {
    req.resume();
    const reply = replies[Math.min(hits, replies.length - 1)]!;
    hits += 1;
    if (reply.hang) return;
    if (reply.trickleMs !== undefined) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"data": [');
      const timer = setInterval(() => res.write(' '), reply.trickleMs);
      res.on('close', () => clearInterval(timer));
      return;
    }
    if (reply.hugeBytes !== undefined) {
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(64 * 1024, ' ');
      let sent = 0;
      const pump = () => {
        while (sent < reply.hugeBytes!) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      res.write('{"data": [');
      pump();
      return;
    }
    const body = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body ?? {});
    res.writeHead(reply.status ?? 200, { 'content-type': 'application/json', ...reply.headers });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  try {
    return await fn(`http://127.0.0.1:${port}`, () => hits);
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveSyncConfig, type SyncConfig } from '../../src/config.js';
import { createLogger, type Logger } from '../../src/log.js';

/** A temporary directory that is removed after `fn`. */
export async function withTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'costsync-test-'));
  try {
    return await fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs `fn` in `dir` as the working directory, then goes back (test files run in forked processes, where chdir works). */
export async function inDirectory<T>(dir: string, fn: () => Promise<T>): Promise<T> {
  const before = process.cwd();
  process.chdir(dir);
  try {
    return await fn();
  } finally {
    process.chdir(before);
  }
}

/** A sync config for tests: the emulator's key, files in `dir`, a fixed date range. */
export function testSyncConfig(url: string, dir: string, over: Partial<SyncConfig> = {}): SyncConfig {
  // A run refuses a --db whose directory does not exist (a typo): the test's directory is made here.
  mkdirSync(dir, { recursive: true });
  // From the resolver, as the CLI's are: the defaults are the product's, only the test's own choices are flags.
  const resolved = resolveSyncConfig({
    flags: {
      'base-url': url,
      db: join(dir, 'costs.duckdb'),
      'state-dir': join(dir, 'state'),
      until: SPAN.endDate,
      'start-date': SPAN.startDate,
      'window-days': 7,
      'rate-limit': 100_000,
      'log-format': 'json',
      quiet: true,
    },
    env: { COSTSYNC_API_KEY: 'demo-key' },
    file: {},
    nowMs: Date.now(),
  });
  // Where a test that turns a lake on (format, in `over`) has it: --out alone is refused without one.
  return { ...resolved, out: join(dir, 'parquet'), ...over };
}

/**
 * Runs `config` in this process and stops it (as SIGINT does) once `stopAt` pages (of `stream` only, when
 * given) have been saved. Returns the run's summary and the pages saved by its end, the stop's included.
 */
export async function syncStoppedAt(config: SyncConfig, clock: Clock, stopAt: number, stream?: string) {
  // Loaded here, as `run` loads the CLI: the pure tests that import these helpers never load the runner.
  const { runSync } = await import('../../src/sync/runner.js');
  const stop = new AbortController();
  let pages = 0;
  const summary = await runSync({
    config,
    logger: memoryLogger(),
    clock,
    clientOptions: FAST_CLIENT,
    signal: stop.signal,
    progress: {
      page: (saved) => {
        if ((stream === undefined || saved === stream) && ++pages === stopAt) stop.abort('test stop');
      },
    },
  });
  return { summary, pages };
}

/** A logger that keeps its lines, for assertions. */
export function memoryLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  return Object.assign(createLogger({ format: 'json', level: 'debug', write: (l) => lines.push(l) }), { lines });
}

export const FAST_CLIENT = { retry: { retries: 6, minTimeoutMs: 1, maxTimeoutMs: 5 } };

/** Webhook sends for tests: short timeouts and backoff. */
export const FAST_SEND = { timeoutMs: 300, retries: 2, minBackoffMs: 5 };

import { openReadOnly } from '../../src/storage/duckdb.js';
import { DuckDBInstance } from '@duckdb/node-api';
import { readdirSync as readEntries, statSync, watch as fsWatch, type FSWatcher } from 'node:fs';
import { relative } from 'node:path';

/**
 * Calls `onName` with the path (relative to `root`) of each entry that appears under `root`, at any depth.
 * Not `fs.watch(…, { recursive: true })`: on Linux, Node's recursive watch reads each new folder as it
 * appears and throws, uncaught, when the folder is gone by then (a writer's temporary folder). Here a
 * folder that vanishes is simply no longer watched, and a new folder's entries are reported as it is
 * added, so nothing created before its watch began is missed. Returns the function that stops it.
 */
export function watchTree(root: string, onName: (path: string) => void): () => void {
  const watchers = new Map<string, FSWatcher>();
  const seen = (full: string) => {
    onName(relative(root, full));
    try {
      if (statSync(full).isDirectory()) add(full);
    } catch {
      // Gone already: nothing under it to watch.
    }
  };
  const add = (dir: string) => {
    if (watchers.has(dir)) return;
    let watcher: FSWatcher;
    try {
      watcher = fsWatch(dir, (_event, name) => {
        if (name !== null) seen(join(dir, String(name)));
      });
    } catch {
      return;
    }
    watcher.on('error', () => {
      watcher.close();
      watchers.delete(dir);
    });
    watchers.set(dir, watcher);
    try {
      for (const name of readEntries(dir)) seen(join(dir, name));
    } catch {
      // Gone meanwhile.
    }
  };
  add(root);
  return () => {
    for (const watcher of watchers.values()) watcher.close();
  };
}

/** Runs SQL on a DuckDB file with DuckDB itself, as a person with the duckdb CLI would (costsync's own code not involved). */
export async function byHand(db: string, statements: readonly string[]): Promise<void> {
  const instance = await DuckDBInstance.create(db);
  const connection = await instance.connect();
  try {
    for (const sql of statements) await connection.run(sql);
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

/** The rows of a read-only query against a DuckDB file (opened and closed around it). */
export async function queryDb<T = Record<string, unknown>>(db: string, sql: string): Promise<T[]> {
  const wh = await openReadOnly(db);
  try {
    return await wh.sql<T>(sql);
  } finally {
    wh.close();
  }
}

/** Rows and a content digest per synced table (see sql/checks/table_digest.sql). */
export async function tableDigest(db: string): Promise<Record<string, { rows: number; digest: string }>> {
  const wh = await openReadOnly(db);
  try {
    const rows = await wh.query<{ table: string; rows: number; digest: string }>('checks/table_digest');
    return Object.fromEntries(rows.map((r) => [r.table, { rows: r.rows, digest: r.digest }]));
  } finally {
    wh.close();
  }
}

/** Every line item the emulator serves for [start, end], by reading its dataset directly. */
export function emulatorLineItemIds(emulator: Emulator, start: string, end: string): string[] {
  const ids: string[] = [];
  const from = Date.parse(`${start}T00:00:00Z`) / 86_400_000;
  const to = Date.parse(`${end}T00:00:00Z`) / 86_400_000;
  for (let day = from; day <= to; day++) {
    for (let i = 0; i < emulator.dataset.slots(day); i++) {
      const item = emulator.dataset.itemAt(day, i);
      if (item) ids.push(item.record.id);
    }
  }
  return ids.sort();
}

import { spawn } from 'node:child_process';
import { once as onceEvent } from 'node:events';
import { fileURLToPath } from 'node:url';

/**
 * The built executable (`npm test` builds it first), run as `node <it>`: the entry users run, with its
 * thread pool and compile cache (a spawned run starts about a tenth of a second sooner than from cli.js).
 */
export const CLI = fileURLToPath(new URL('../../dist/bin.cjs', import.meta.url));

/** The warehouse `name` in `dir`, the directory made first: a run refuses a --db whose directory does not exist. */
export function dbIn(dir: string, name = 'c.duckdb'): string {
  mkdirSync(dir, { recursive: true });
  return join(dir, name);
}

/** A sync's arguments against `url`, with its warehouse (`c.duckdb`) and `state/` in `dir`, then `extra`. */
export function syncCommand(url: string, dir: string, extra: readonly string[] = []): string[] {
  // A run refuses a --db whose directory does not exist (a typo): the test's directory is made here.
  mkdirSync(dir, { recursive: true });
  return syncCommandFor(url, join(dir, 'c.duckdb'), join(dir, 'state'), extra);
}

/** A sync's arguments against `url` with the warehouse `db` (a path or an s3:// URL) and `stateDir` as they are, then `extra`. */
export function syncCommandFor(url: string, db: string, stateDir: string, extra: readonly string[] = []): string[] {
  return ['sync', '--base-url', url, '--db', db, '--state-dir', stateDir, ...extra];
}

type Span = { startDate: string; endDate: string };

/**
 * A sync of `span` (SPAN by default) in windows of `windowDays` days (omitted: the default size) and, unless
 * `rateLimit` is false, with a rate limit the emulator never reaches (the default one would make a test wait).
 */
export function spanFlags(windowDays?: number, options: { span?: Span; rateLimit?: boolean } = {}): string[] {
  const { span = SPAN, rateLimit = true } = options;
  return [
    '--start-date',
    span.startDate,
    '--until',
    span.endDate,
    ...(windowDays === undefined ? [] : ['--window-days', String(windowDays)]),
    ...(rateLimit ? ['--rate-limit', '100000'] : []),
  ];
}

/** `spanFlags` with JSON logs: the backfill most spawned runs make. */
export function backfillFlags(windowDays?: number, options: { span?: Span; rateLimit?: boolean } = {}): string[] {
  return [...spanFlags(windowDays, options), '--log-format', 'json'];
}

export interface CliResult {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a command line in this process (src/cli-app.ts) with `env` as its whole environment and its output
 * captured: the same parsing, commands and exit codes as the executable, without starting Node and
 * DuckDB again. Tests that need a real process (signals, kills, pipes, the executable) use `cli`.
 */
export async function run(args: string[], env: Record<string, string> = {}, clock: { now: () => number } = Date): Promise<CliResult> {
  const { runCli } = await import('../../src/cli-app.js');
  let stdout = '';
  let stderr = '';
  const io = {
    env: { ...env },
    stdout: (t: string) => {
      stdout += t;
    },
    stderr: (t: string) => {
      stderr += t;
    },
    isTTY: false,
    now: () => clock.now(),
  };
  const code = await runCli(args, io);
  return { code, signal: null, stdout, stderr };
}

/**
 * Starts the built CLI with PATH and `env` as its whole environment: the child (for a test to signal) and
 * its result once it exits, with what it wrote.
 */
export function startCli(args: string[], env: Record<string, string> = {}) {
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d;
  });
  child.stderr.on('data', (d: Buffer) => {
    stderr += d;
  });
  const result = onceEvent(child, 'exit').then(([code, signal]): CliResult => ({ code, signal, stdout, stderr }));
  return { child, result };
}

/** Runs the built CLI with a clean environment (PATH, HOME) plus `env`. */
export async function cli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return await startCli(args, { HOME: process.env.HOME ?? '', ...env }).result;
}

/**
 * A command line's prefix that runs the rest in a new PID namespace whose next pid is above any on this
 * machine (pid_max here is 32768): a holder there has a pid this namespace does not have.
 */
export const IN_OTHER_PID_NAMESPACE: readonly string[] = [
  'unshare',
  '--pid',
  '--fork',
  '--mount-proc',
  'sh',
  '-c',
  'echo 77777 > /proc/sys/kernel/ns_last_pid; "$@"; exit $?',
  'holder',
];

/** Where a kill test SIGKILLs a run: at its Nth counted request, or after a delay (landing anywhere). */
/**
 * Where a kill test's run dies: at the emulator's Nth request it counts, or at a failpoint
 * (`COSTSYNC_FAILPOINT`, `NAME:N`: the process SIGKILLs itself the Nth time it reaches that step).
 */
export interface KillPoint {
  atRequest?: number;
  failpoint?: string;
}

/**
 * Runs CLI processes (`args` after node) again and again, SIGKILLing each at a chosen point. Pass
 * `onRequest` to the emulator; `counts` picks which requests count (all by default).
 */
export function killRunner(env: Record<string, string>, counts: (entry: { route: string }) => boolean = () => true) {
  let requests = 0;
  let killAt = Infinity;
  let kill: (() => void) | null = null;
  return {
    onRequest(entry: { route: string }): void {
      if (counts(entry) && ++requests === killAt) kill?.();
    },
    /** SIGKILLs the running process now (from another event: a webhook receiver's request, say). */
    killNow(): void {
      kill?.();
    },
    /** Runs one process; `stderr` keeps its last 4 KB, to show why a run that should succeed did not. */
    async run(args: string[], point: KillPoint = {}): Promise<{ code: number | null; signal: string | null; stderr: string }> {
      requests = 0;
      killAt = point.atRequest ?? Infinity;
      const failpoint = point.failpoint === undefined ? {} : { COSTSYNC_FAILPOINT: point.failpoint };
      const child = spawn(process.execPath, args, {
        env: { PATH: process.env.PATH ?? '', ...env, ...failpoint },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => {
        stderr = (stderr + d.toString()).slice(-4096);
      });
      kill = () => child.kill('SIGKILL');
      const [code, signal] = (await onceEvent(child, 'exit')) as [number | null, string | null];
      kill = null;
      return { code, signal, stderr };
    },
    /**
     * The run after the kills, which nothing kills: in this process (`args` after node, the CLI first),
     * with the runner's environment. A failpoint is read at a process's start, so a run that arms one is spawned.
     */
    async finish(args: string[]): Promise<{ code: number | null; signal: string | null; stderr: string }> {
      if (args[0] !== CLI || env.COSTSYNC_FAILPOINT !== undefined) throw new Error('finish() runs the CLI in-process, with no failpoint');
      requests = 0;
      killAt = Infinity;
      const result = await run(args.slice(1), env);
      return { code: result.code, signal: null, stderr: result.stderr.slice(-4096) };
    },
  };
}

import { existsSync, readdirSync } from 'node:fs';
import { LAKE_DOUBLES, LAKE_TABLES } from '../../src/storage/tables.js';

/** A warehouse column as a lake's value is compared with it, as text: money as the double the lakes hold (LAKE_DOUBLES). Pure. */
export function lakeComparedColumn(table: string, column: string): string {
  return `"${column}"${(LAKE_DOUBLES[table] ?? []).includes(column) ? '::DOUBLE' : ''}::VARCHAR`;
}

/**
 * Per lake table (or those of `tables`), rows in the DuckDB file but not in the Parquet tree (`missing`)
 * and the reverse (`extra`), compared row for row (as text, in the table's column order) with DuckDB's
 * `read_parquet(..., hive_partitioning = true)`.
 */
export async function lakeDifferences(
  db: string,
  outDir: string,
  sources?: readonly string[],
  tables: readonly string[] = Object.keys(LAKE_TABLES),
): Promise<Record<string, { rows: number; missing: number; extra: number }>> {
  // With `sources`, only their rows, on both sides (a shard's warehouse against a shared lake).
  const wh = await openReadOnly(db);
  try {
    const result: Record<string, { rows: number; missing: number; extra: number }> = {};
    for (const [table, spec] of Object.entries(LAKE_TABLES).filter(([t]) => tables.includes(t))) {
      const sourceColumn = spec.source ?? 'source';
      const only = sources === undefined ? '' : `WHERE ${sourceColumn} IN (${sources.map((s) => `'${s}'`).join(', ')})`;
      const columns = (
        await wh.sql<{ c: string }>('SELECT column_name AS c FROM duckdb_columns() WHERE table_name = $1 ORDER BY column_index', [table])
      )
        .map((r) => lakeComparedColumn(table, r.c))
        .join(', ');
      // A table with no partition at all is an empty table, not an error.
      const lake = hasParquet(join(outDir, table))
        ? `read_parquet('${join(outDir, table)}/*/*/*.parquet', hive_partitioning = true)`
        : `(SELECT * FROM ${table} WHERE false)`;
      const [row] = await wh.sql<{ rows: number; missing: number; extra: number }>(`
        WITH t AS (SELECT ${columns} FROM ${table} ${only}), p AS (SELECT ${columns} FROM ${lake} ${only})
        SELECT (SELECT count(*) FROM t) AS rows,
               (SELECT count(*) FROM (SELECT * FROM t EXCEPT ALL SELECT * FROM p)) AS missing,
               (SELECT count(*) FROM (SELECT * FROM p EXCEPT ALL SELECT * FROM t)) AS extra`);
      result[table] = row!;
    }
    return result;
  } finally {
    wh.close();
  }
}

/** Whether any Parquet file lies under `dir`. */
function hasParquet(dir: string): boolean {
  return existsSync(dir) && readdirSync(dir, { recursive: true }).some((f) => String(f).endsWith('.parquet'));
}

/** Files and directories under `dir` that a run leaves only while it works (temporary names). */
export function temporaryFiles(dir: string): string[] {
  const found: string[] = [];
  const walk = (d: string) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const path = join(d, entry.name);
      if (entry.name.startsWith('.tmp') || entry.name.endsWith('.tmp') || /\.publish-\d+/.test(entry.name) || entry.name.endsWith('.adopt'))
        found.push(path);
      if (entry.isDirectory()) walk(path);
    }
  };
  walk(dir);
  return found;
}

/** `costsync push` (or `push-otel`) arguments against `url`, the ledger in `dir`, JSON logs, no rate limit; `extra` adds flags and files. */
export function pushArgs(url: string, dir: string, extra: string[], command: 'push' | 'push-otel' = 'push'): string[] {
  return [
    command,
    '--base-url',
    url,
    '--db',
    join(dir, 'p.duckdb'),
    '--state-dir',
    join(dir, 'state'),
    '--log-format',
    'json',
    '--rate-limit',
    '100000',
    ...extra,
  ];
}

/** The `push finished` summary of a push's JSON log. */
export function pushSummary(stderr: string): Record<string, unknown> {
  const line = stderr.split('\n').find((l) => l.includes('"push finished"'));
  if (!line) throw new Error(`no summary in:\n${stderr}`);
  return JSON.parse(line) as Record<string, unknown>;
}
