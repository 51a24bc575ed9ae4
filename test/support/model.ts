/**
 * The model-based test of the command surface (fast-check's `fc.commands`): random sequences of what
 * users do, run against real processes, real DuckDB files and the emulator over loopback, with the
 * invariants checked after every step. A failing sequence is shrunk and printed as the commands to
 * type; `COSTSYNC_MODEL_SEED`, `COSTSYNC_MODEL_PATH` and `COSTSYNC_MODEL_REPLAY` (printed with it) replay it.
 *
 * Kill points are events, never times: the Nth request the emulator answers (held until the process
 * is gone), the Nth table commit an Iceberg REST catalog applies, or a named failpoint
 * (`src/failpoints.ts`) the process dies at.
 *
 * The world has an Iceberg REST catalog (`test/catalog/server.mjs`: a prefix, OAuth2, idempotency keys,
 * transactions unless a command takes them away): the lake `cat` is its namespace `costsync`, whose
 * tables the catalog places; the directory lake `ice` moves to its namespace `reg` (registered) at the
 * first sync that names the catalog with `--out lake-ice`, and every later sync of `ice` goes through it.
 *
 * It has a bucket too: the lake `s3` is an Iceberg lake at `s3://<bucket>/lake-s3`, a bucket of its own on
 * the run's radosgw (`test/support/s3.ts`), which every run reaches through a fault proxy. There a write can lose
 * its answer: the Nth PUT or POST of a run is applied and the connection reset instead of answered, so
 * the SDK sends it again. That is no stop: a run nothing else disturbed must still exit 0, and the lake
 * equal the warehouse with every file its snapshots name in place. Where no global setup started a
 * gateway (another project, or outside vitest), the model runs without the bucket lake.
 *
 * `verify --api` is a command too: it exits 0 or 1, and when it passes every date both windowed streams
 * say they synced (their ranges, `plan/coverage.ts`) holds the API's line-item total per provider.
 */
import { FOCUS_VERSIONS } from '../../src/focus/columns.js';
import fc from 'fast-check';
import { DuckDBInstance } from '@duckdb/node-api';
import { DeleteObjectsCommand, DeleteBucketCommand } from '@aws-sdk/client-s3';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { SCOPES } from '../../src/api/types.js';
import { startEmulator, type Emulator } from '../../src/emulator/server.js';
import { addDays, toDayNumber } from '../../src/dates.js';
import { coverageOf, formatRanges } from '../../src/plan/coverage.js';
import type { DateRange, WindowedStreamState } from '../../src/state/store.js';
import { horizonStart } from '../../src/plan/horizon.js';
import { SUMMARY } from '../../src/iceberg/metadata.js';
import { ICEBERG_TABLES } from '../../src/storage/tables.js';
import { manifestKey } from '../../src/outputs/lake.js';
import { gatherStatus } from '../../src/commands/status.js';
import { decode, type OutboxRow } from '../../src/storage/outbox.js';
import { shardOf } from '../../src/shards.js';
import { dbLockPath } from '../../src/state/lock.js';
import { formatUsd } from '../../src/money.js';
import { CLI, lakeDifferences, queryDb, run } from './helpers.js';
import { startCatalogServer, type CatalogFault, type CatalogServer } from '../catalog/server.mjs';
import { catalogLocator, icebergDifferences, icebergFileCheck } from './iceberg.js';
import { faultProxy, startRgwIfAny, type S3Server } from './s3.js';
import { decodeCarried } from '../../src/state/progress.js';
import { workingCopyPath } from '../../src/storage/working-copy.js';
import { LINE_ITEM_COLUMNS } from '../../src/api/fields.js';
import { lineItemText, storedAgainstApi, storedLineItems } from './api-truth.js';

/** The emulator's last day of data; the model's "today" starts a few days before and moves towards it. */
const END = '2026-06-30';
const SPAN_DAYS = 120;
/** The emulator's clock: alerts are as of then. */
const EMULATOR_NOW = Date.parse(`${END}T12:00:00Z`);
const FIRST_TODAY = addDays(END, -4);

export type LakeName = 'p1' | 'p2' | 'ice' | 'cat' | 's3';
/** The config file's two sources (two workspaces, a key each); a run syncs one or both (`--source`). */
export type SourceName = 'w1' | 'w2';
const SOURCES: readonly SourceName[] = ['w1', 'w2'];
/** `cat` is the catalog's own namespace: no directory, the catalog places its tables; `s3`'s is a prefix in the world's bucket. */
const LAKES: Record<LakeName, { format: 'parquet' | 'iceberg'; dir: string }> = {
  p1: { format: 'parquet', dir: 'lake-p1' },
  p2: { format: 'parquet', dir: 'lake-p2' },
  ice: { format: 'iceberg', dir: 'lake-ice' },
  cat: { format: 'iceberg', dir: '' },
  s3: { format: 'iceberg', dir: 'lake-s3' },
};

/** The catalog's settings, as the printed command lines assume them. */
const CATALOG = {
  warehouse: 'wh',
  prefix: 'ws/m',
  client: 'costsync',
  secret: 'model-secret-31c7',
  /** The lake `cat`'s namespace, and the one the directory lake `ice` is registered in. */
  namespaces: { cat: 'costsync', ice: 'reg' },
} as const;

/** What the catalog offers: transactions listed in `endpoints`, no transactions, or no `endpoints` at all (the document's default set, transactions in it). */
export type CatalogOffer = 'transactions' | 'no-transactions' | 'omit-endpoints';

/** A fault armed on the catalog before a sync: a change applied then answered 500, a 503, a 409, or every token expired at the first commit. */
export type CatalogFaultKind = 'none' | 'applied-500' | '503' | '409' | 'token-expiry';

/** How a run ends early: SIGKILL or SIGTERM at the Nth answered request, SIGKILL or a stop at a failpoint, or --max-runtime. */
export type Stop =
  | { kind: 'none' }
  | { kind: 'kill-request' | 'term-request'; n: number }
  | { kind: 'failpoint'; name: 'commit' | 'lake-put' | 'iceberg-commit' | 'publish'; n: number }
  /** A stop (as SIGTERM) seen at the Nth lake file put or Iceberg commit: the lake is abandoned there, exit 4, or 0 if all was done. */
  | { kind: 'term-at'; name: 'lake-put' | 'iceberg-commit'; n: number }
  | { kind: 'max-runtime' }
  /** Its reader goes away after N lines (`2>&1 | head -N`). */
  | { kind: 'head'; n: number }
  /** From the Nth request on the API answers nothing (as one answering in 45 s), and SIGTERM comes: the run must end anyway. */
  | { kind: 'term-held'; n: number }
  /** SIGKILL as the catalog applies its Nth table commit of the run (before it answers). */
  | { kind: 'kill-catalog'; n: number };

export interface SyncArgs {
  state: 'a' | 'b';
  sources: 'w1' | 'w2' | 'w1,w2';
  /** --drop-before, in days before today; only without --since. */
  dropBefore: number | null;
  /** Days before today, or none. */
  since: number | null;
  lookback: 0 | 1 | 3;
  windowDays: 1 | 7 | 30;
  streams: 'all' | 'line_items' | 'line_items,rollups' | 'rollups,anomalies';
  fullRefresh: boolean;
  lake: LakeName | null;
  retention: '7d' | '0s';
  publishNow: boolean;
  /** `--shard I/N`: the run syncs only the sources of `sources` this shard owns (none, some or all). */
  shard: { index: number; count: number } | null;
  stop: Stop;
  /** With `ice`: name the catalog (registering the directory tables); once it has, every sync of `ice` does. */
  register: boolean;
  /** With a lake through the catalog: a fault armed on it first (on a single-table commit or a transaction). */
  fault: CatalogFaultKind;
  faultRoute: 'commit' | 'transaction';
  /** With `s3`: the run's Nth write to the bucket (a PUT or POST) is applied and its answer lost; the SDK sends it again. */
  lostWrite: number | null;
}

/** The sources a sync works on: those it names, less the ones another shard owns. */
export function sourcesOf(args: Pick<SyncArgs, 'sources' | 'shard'>): SourceName[] {
  const named = args.sources.split(',') as SourceName[];
  return args.shard === null ? named : named.filter((s) => shardOf(s, args.shard!.count) === args.shard!.index);
}

/** What the test knows of the world besides the real files: enough to say what each command must do. */
export interface Model {
  today: string;
  /** Whether the directory lake `ice` has gone to the catalog (a sync named the catalog with its --out). */
  iceInCatalog: boolean;
}

/** The real side: a temp directory, the emulator, the bucket, and what the invariants remember between steps. */
export class World {
  readonly dir: string;
  emulator!: Emulator;
  catalog!: CatalogServer;
  /** The world's own bucket on the run's radosgw (null: no gateway, no bucket lake), and the proxy every run reaches it through. */
  readonly bucket: string | null;
  private proxy: Awaited<ReturnType<typeof faultProxy>> | null = null;
  /** The running process's writes to the bucket (PUT and POST) so far, and which of them loses its answer. */
  private bucketWrites = 0;
  private lostWrite: number | null = null;
  /** Where the proxy's log stood when the last run started: what follows is that run's. */
  private bucketLogFrom = 0;
  catalogOffer: CatalogOffer = 'transactions';
  today = FIRST_TODAY;
  /** Every line-item content each source's date has had on the emulator (`<source> <date>`: its ids and amounts). */
  readonly history = new Map<string, Set<string>>();
  /** When (this process's clock) each source's date last changed on the emulator, once it had changed after the first record. */
  readonly changedAt = new Map<string, number>();
  /** Each source's date's content at the last record. */
  private readonly latest = new Map<string, string>();
  /** Source's dates (`<source> <date>`) the published warehouse has held at some point. */
  readonly everSynced = new Set<string>();
  /** Source's dates whose line items were deleted from the published warehouse by hand, until a run brings them back. */
  readonly handDeleted = new Set<string>();
  /** The process running now, and when to stop it. */
  private child: ChildProcess | null = null;
  private exited: Promise<unknown> | null = null;
  private requests = 0;
  private stopAt: { n: number; signal: 'SIGKILL' | 'SIGTERM'; hold?: boolean } | null = null;
  /** Answers held back (a silent API) until the process is gone. */
  private held: (() => void)[] = [];
  readonly log: string[] = [];

  constructor(readonly s3: S3Server | null = null) {
    this.dir = mkdtempSync(join(tmpdir(), 'costsync-model-'));
    this.bucket = s3 === null ? null : `model-${randomBytes(6).toString('hex')}`;
  }

  async start(): Promise<void> {
    this.emulator = await startEmulator({
      port: 0,
      rateLimit: 0,
      seed: 7,
      keys: {
        keys: SOURCES.map((w) => ({ key: `key-${w}`, scopes: [...SCOPES], plan: 'business' as const, workspace: w })),
        connections: [],
      },
      startDate: addDays(END, -(SPAN_DAYS - 1)),
      endDate: END,
      rowsPerDay: 2,
      anomaliesPerDay: 1,
      clock: { now: () => EMULATOR_NOW },
      restatement: { days: 8, changeRate: 0.4, deleteRate: 0.2, addRate: 0.5 },
      beforeReply: async () => {
        if (this.stopAt === null || this.child === null) return;
        const n = ++this.requests;
        if (this.stopAt.hold === true && n >= this.stopAt.n) {
          if (n === this.stopAt.n) this.child.kill(this.stopAt.signal);
          await new Promise<void>((resolve) => this.held.push(resolve));
          return;
        }
        if (n !== this.stopAt.n) return;
        this.child.kill(this.stopAt.signal);
        // A SIGKILL lands while this request is unanswered: the run dies mid-page.
        if (this.stopAt.signal === 'SIGKILL') await this.exited;
      },
    });
    writeFileSync(
      join(this.dir, 'costsync.config.json'),
      JSON.stringify({
        sources: SOURCES.map((w) => ({ name: w, 'base-url': this.emulator.url, 'api-key-env': `KEY_${w.toUpperCase()}` })),
      }),
    );
    await this.startCatalog(0);
    if (this.s3 !== null && this.bucket !== null) {
      await this.s3.createBucket(this.bucket);
      this.proxy = await faultProxy(this.s3.endpoint, (req) => {
        if (req.method !== 'PUT' && req.method !== 'POST') return null;
        // Counted per run, the retry too: exactly one write of the run is lost.
        return ++this.bucketWrites === this.lostWrite ? 'lost' : null;
      });
    }
    this.recordTruth();
  }

  /** The bucket lake's location, as its metadata names it. */
  get bucketLake(): string {
    if (this.bucket === null) throw new Error('this world has no bucket (no radosgw was started for the run)');
    return `s3://${this.bucket}/${LAKES.s3.dir}`;
  }

  /** The requests of the last run that change the bucket (PUT, POST, DELETE). */
  bucketChanges(): string[] {
    return (this.proxy?.log.slice(this.bucketLogFrom) ?? [])
      .filter((r) => r.method === 'PUT' || r.method === 'POST' || r.method === 'DELETE')
      .map((r) => `${r.method} ${r.path}${r.query}`);
  }

  /** Starts the catalog on `port` (0: any), offering what `catalogOffer` says; its tables persist across restarts. */
  async startCatalog(port: number): Promise<void> {
    this.catalog = await startCatalogServer({
      root: join(this.dir, 'catalog-wh'),
      statePath: join(this.dir, 'catalog-state.json'),
      port,
      warehouse: CATALOG.warehouse,
      prefix: CATALOG.prefix,
      transactions: this.catalogOffer !== 'no-transactions',
      ...(this.catalogOffer === 'omit-endpoints' && { endpoints: 'omit' as const }),
      idempotencyKeyLifetime: 'PT30M',
      auth: { kind: 'oauth', clients: [{ id: CATALOG.client, secret: CATALOG.secret }] },
    });
  }

  /** The catalog again, at the same address, offering `offer`. */
  async restartCatalog(offer: CatalogOffer): Promise<void> {
    const port = this.catalog.port;
    await this.catalog.close();
    this.catalogOffer = offer;
    await this.startCatalog(port);
  }

  /** A bearer token from the catalog's token endpoint, as an engine reading the tables gets one. */
  async catalogHeaders(): Promise<Record<string, string>> {
    const response = await fetch(`${this.catalog.url}/v1/oauth/tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `grant_type=client_credentials&client_id=${CATALOG.client}&client_secret=${CATALOG.secret}&scope=catalog`,
    });
    if (!response.ok) throw new Error(`the catalog refused the model's token request: ${response.status}`);
    return { authorization: `Bearer ${((await response.json()) as { access_token: string }).access_token}` };
  }

  async close(): Promise<void> {
    await this.catalog?.close();
    await this.emulator?.close();
    await this.proxy?.close();
    if (this.proxy !== null) await this.emptyBucket();
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** The bucket's objects and the bucket let go, so that the gateway's memory store holds only live worlds; best effort. */
  private async emptyBucket(): Promise<void> {
    const [s3, bucket] = [this.s3!, this.bucket!];
    try {
      const keys = await s3.keys(bucket);
      for (let i = 0; i < keys.length; i += 1000) {
        const batch = keys.slice(i, i + 1000).map((Key) => ({ Key }));
        await s3.client.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: batch, Quiet: true } }));
      }
      await s3.client.send(new DeleteBucketCommand({ Bucket: bucket }));
    } catch (error) {
      // Not the model's failure: a bucket left behind goes with the run's gateway.
      console.warn(`the model's bucket ${bucket} was not removed: ${String(error)}`);
    }
  }

  get db(): string {
    return join(this.dir, 'costs.duckdb');
  }

  stateDir(state: 'a' | 'b'): string {
    return join(this.dir, `state-${state}`);
  }

  lakeDir(lake: LakeName): string {
    return join(this.dir, LAKES[lake].dir);
  }

  /**
   * A source's date's line items on the emulator now, as text (`id:amount:digest`, sorted, the digest of every
   * column: test/support/api-truth.ts); '' for none.
   */
  truth(source: SourceName, date: string): string {
    const ds = this.emulator.datasetOf(source);
    const day = toDayNumber(date);
    const items: string[] = [];
    for (let i = 0; i < ds.slots(day); i++) {
      const item = ds.itemAt(day, i);
      if (item) items.push(itemText(item.record.id, item.record.net_amount_usd, lineItemText(item.record)));
    }
    return items.sort().join(',');
  }

  /** A source's date's line-item total per provider on the emulator now. */
  providerTotals(source: SourceName, date: string): Map<string, number> {
    const ds = this.emulator.datasetOf(source);
    const day = toDayNumber(date);
    const totals = new Map<string, number>();
    for (let i = 0; i < ds.slots(day); i++) {
      const item = ds.itemAt(day, i);
      if (item) totals.set(item.record.provider_type, (totals.get(item.record.provider_type) ?? 0) + item.record.net_amount_usd);
    }
    return totals;
  }

  /** Remembers what every date up to the emulator's end holds now (after a restatement, say). */
  recordTruth(): void {
    for (const source of SOURCES) {
      for (let d = addDays(END, -(SPAN_DAYS + 5)); d <= END; d = addDays(d, 1)) {
        const key = `${source} ${d}`;
        const now = this.truth(source, d);
        const set = this.history.get(key) ?? new Set<string>();
        set.add(now);
        this.history.set(key, set);
        if (this.latest.has(key) && this.latest.get(key) !== now) this.changedAt.set(key, Date.now());
        this.latest.set(key, now);
      }
    }
  }

  /** Runs the CLI with `args`, stopping it as `stop` says; its exit code and signal. */
  async cli(
    args: string[],
    stop: Stop = { kind: 'none' },
    lostWrite: number | null = null,
  ): Promise<{ code: number | null; signal: string | null; stderr: string; stdout: string }> {
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '',
      HOME: this.dir,
      KEY_W1: 'key-w1',
      KEY_W2: 'key-w2',
      TZ: 'UTC',
      COSTSYNC_CATALOG_CREDENTIAL: `${CATALOG.client}:${CATALOG.secret}`,
      ...(this.proxy !== null && this.s3!.env(this.proxy.endpoint)),
    };
    this.bucketWrites = 0;
    this.lostWrite = lostWrite;
    this.bucketLogFrom = this.proxy?.log.length ?? 0;
    if (stop.kind === 'failpoint') env.COSTSYNC_FAILPOINT = `${stop.name}:${stop.n}`;
    if (stop.kind === 'term-at') env.COSTSYNC_FAILPOINT = `${stop.name}:${stop.n}:stop`;
    this.requests = 0;
    this.stopAt =
      stop.kind === 'kill-request'
        ? { n: stop.n, signal: 'SIGKILL' }
        : stop.kind === 'term-request'
          ? { n: stop.n, signal: 'SIGTERM' }
          : stop.kind === 'term-held'
            ? { n: stop.n, signal: 'SIGTERM', hold: true }
            : null;
    const child = spawn(process.execPath, [CLI, ...args], { cwd: this.dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    let catalogCommits = 0;
    // The catalog has applied the commit and not answered yet: the run dies not knowing whether it landed.
    const onCommit = () => {
      if (stop.kind === 'kill-catalog' && ++catalogCommits === stop.n) child.kill('SIGKILL');
    };
    const catalogEvents = this.catalog.events;
    catalogEvents.on('commit', onCommit);
    let stderr = '';
    let lines = 0;
    const read = (d: Buffer) => {
      stderr = (stderr + d.toString()).slice(-3000);
      lines += d.toString().split('\n').length - 1;
      // `| head -N`: the reader is gone once it has its lines.
      if (stop.kind === 'head' && lines >= stop.n) {
        child.stdout.destroy();
        child.stderr.destroy();
      }
    };
    // Standard output alone, whole, for the commands whose answer the model reads (verify --api's JSON).
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    this.exited = once(child, 'exit');
    const [code, signal] = (await this.exited) as [number | null, string | null];
    catalogEvents.off('commit', onCommit);
    this.child = null;
    this.stopAt = null;
    this.lostWrite = null;
    // The run ended while the API was silent (else it would never have): its answers go now, to nobody.
    for (const release of this.held.splice(0)) release();
    return { code, signal, stderr, stdout };
  }

  /** The published warehouse's line items per source and date (`<source> <date>`), as `truth` writes them; empty when there is no file yet. */
  async published(): Promise<Map<string, string>> {
    if (!existsSync(this.db)) return new Map();
    const byDate = new Map<string, string[]>();
    for (const r of await storedLineItems(this.db)) {
      const d = `${r.source} ${r.date}`;
      byDate.set(d, [...(byDate.get(d) ?? []), itemText(r.id, (JSON.parse(r.text) as unknown[])[AMOUNT] as number, r.text)]);
    }
    return new Map([...byDate].map(([d, items]) => [d, items.sort().join(',')]));
  }

  /** Names, sizes and times of every file a command may write: what an invalid command must leave as it was. */
  fingerprint(): string {
    const out: string[] = [];
    const walk = (dir: string) => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, e.name);
        if (e.isDirectory()) walk(path);
        // A shard that owns no source writes its metrics file (saying so), and nothing else.
        else if (!e.name.endsWith('.prom')) {
          const s = statSync(path);
          out.push(`${relative(this.dir, path)} ${s.size} ${s.mtimeMs}`);
        }
      }
    };
    walk(this.dir);
    return out.sort().join('\n');
  }
}

/** Fails with `what`, the sequence's log and the last command's stderr: what a person needs to see why. */
/** Whether the first failure of this process was printed (shrinking it can outlast the test's time). */
let firstFailureShown = false;

function fail(world: World, what: string, stderr = ''): never {
  const message = `${what}\nthe steps, as commands:\n  ${world.log.join('\n  ')}${stderr ? `\nlast stderr:\n${stderr}` : ''}`;
  if (!firstFailureShown) {
    firstFailureShown = true;
    console.error(`The model's first failure, before shrinking:\n${message.slice(0, 4000)}`);
  }
  throw new Error(message);
}

/**
 * Whether a date's line items are a version the API had less items that moved to another date the warehouse
 * holds (a line item is stored once: a window that brings it at its new date removes it from the old one,
 * whose other rows may be of an older version until that date is synced again).
 */
function movedAway(world: World, published: Map<string, string>, date: string, text: string): boolean {
  const source = date.split(' ')[0]!;
  const items = text === '' ? [] : text.split(',');
  const elsewhere = new Set(
    [...published]
      .filter(([d]) => d !== date && d.startsWith(`${source} `))
      .flatMap(([, t]) => t.split(','))
      .map((item) => item.split(':')[0]),
  );
  return [...(world.history.get(date) ?? [])].some((version) => {
    const had = version === '' ? [] : version.split(',');
    const gone = had.filter((item) => !items.includes(item));
    return items.every((item) => had.includes(item)) && gone.length > 0 && gone.every((item) => elsewhere.has(item.split(':')[0]));
  });
}

/**
 * Invariants that hold after every command, whatever it was. `ranTo` names the state directory of a
 * run that got its locks and ended without SIGKILL: it must have let go of them (a SIGKILLed run's
 * locks stay until the next run takes them over).
 */
async function checkAlways(world: World, stderr: string, ranTo: readonly ('a' | 'b')[]): Promise<Map<string, string>> {
  if (ranTo.length > 0) {
    for (const state of ranTo) {
      if (existsSync(join(world.stateDir(state), 'costsync.lock'))) fail(world, `the lock of state-${state} stayed after an exit`, stderr);
    }
    if (existsSync(dbLockPath(world.db))) fail(world, 'the lock beside --db stayed after an exit', stderr);
  }
  const published = await world.published();
  for (const [date, text] of published) {
    if (!world.history.get(date)?.has(text) && !movedAway(world, published, date, text))
      fail(
        world,
        `the warehouse's ${date} (${text}) is no version the API ever had (${[...(world.history.get(date) ?? [])].join(' | ')})`,
        stderr,
      );
  }
  for (const date of world.everSynced) {
    if (!published.has(date) && !world.history.get(date)?.has(''))
      fail(world, `${date} was in the warehouse and is gone, though the API always had rows for it`, stderr);
  }
  for (const date of published.keys()) world.everSynced.add(date);
  await checkRecency(world, published, stderr);
  // Every pending row is one this version reads: a row none can read stays pending for ever (and the metric counts it).
  if (existsSync(world.db)) {
    const unreadable = (await queryDb<OutboxRow>(world.db, 'SELECT kind, key FROM _costsync_outbox')).filter((r) => decode(r) === null);
    if (unreadable.length > 0) fail(world, `the warehouse's outbox holds rows no version reads: ${JSON.stringify(unreadable)}`, stderr);
  }
  // A commit the catalog was left unsure of is settled, never made twice.
  for (const namespace of Object.values(CATALOG.namespaces)) {
    for (const table of Object.keys(ICEBERG_TABLES)) {
      const snapshots = (world.catalog.table([namespace], table)?.metadata.snapshots ?? []) as { summary?: Record<string, string> }[];
      const ids = snapshots.map((s) => s.summary?.[SUMMARY.commitId]).filter((id) => id !== undefined);
      const twice = ids.find((id, i) => ids.indexOf(id) !== i);
      if (twice !== undefined) fail(world, `the catalog's ${namespace}.${table} has two snapshots of the commit ${twice}`, stderr);
    }
  }
  return published;
}

/** A date's line items' total in cents, from their text (`itemText`). Pure. */
function totalCents(text: string): number {
  return Math.round(text === '' ? 0 : text.split(',').reduce((sum, item) => sum + Number(item.split(':')[1]), 0) * 100);
}

/**
 * FOCUS's Recency never claims what is not there: a day whose TimeSectorLastUpdated is later than the
 * API's last change to it holds the API's total now (a recheck compares sums, so the total is the claim).
 */
async function checkRecency(world: World, published: Map<string, string>, stderr: string): Promise<void> {
  if (!existsSync(world.db)) return;
  const sectors = await queryDb<{ source: SourceName; date: string; at: number }>(
    world.db,
    "SELECT DatasetInstanceId AS source, strftime(TimeSectorStart AT TIME ZONE 'UTC', '%Y-%m-%d') AS date, epoch_ms(TimeSectorLastUpdated)::DOUBLE AS at FROM focus_recency",
  );
  for (const { source, date, at } of sectors) {
    const key = `${source} ${date}`;
    const changed = world.changedAt.get(key);
    if (world.handDeleted.has(key) || (changed !== undefined && at <= changed)) continue;
    const have = totalCents(published.get(key) ?? '');
    const api = totalCents(world.truth(source, date));
    if (have !== api)
      fail(
        world,
        `focus_recency says ${key} was found equal to the API at ${new Date(at).toISOString()}, after its last change${changed === undefined ? '' : ` (${new Date(changed).toISOString()})`}, yet the warehouse holds ${have / 100} and the API ${api / 100}`,
        stderr,
      );
  }
}

/** The dates the published warehouse says a source's line items cover (its carried state). */
async function coveredLineItems(world: World, source: SourceName): Promise<readonly DateRange[]> {
  const [row] = await queryDb<{ state: string }>(
    world.db,
    `SELECT state::VARCHAR AS state FROM _costsync_sync_state WHERE source = '${source}'`,
  );
  if (row === undefined) return [];
  const streams = decodeCarried(row.state) as Partial<Record<'line_items', WindowedStreamState>>;
  return streams.line_items === undefined ? [] : coverageOf(streams.line_items).ranges;
}

/** After a run of every source that exited 0: its metrics say no output waits (no lake work, manifest or publish). */
function checkNothingPending(world: World, args: SyncArgs, stderr: string): void {
  const text = readFileSync(join(world.dir, metricsFile(args.state)), 'utf8');
  const waiting = [...text.matchAll(/^costsync_outbox_pending\{output="(\w+)"\} (\d+)$/gm)].filter(
    (m) => m[1] !== 'notify' && m[2] !== '0',
  );
  if (waiting.length > 0) fail(world, `exit 0, yet the metrics say outputs wait: ${waiting.map((m) => m[0]).join(', ')}`, stderr);
}

/**
 * After a run of every source that exited 0: status says no window of the streams it ran waits (none pending, no
 * pending range), and no work of its working copy is left unpublished.
 */
async function checkStatusClear(world: World, args: SyncArgs, stderr: string): Promise<void> {
  const ran = args.streams === 'all' ? ['line_items', 'rollups'] : args.streams.split(',').filter((s) => s !== 'anomalies');
  const { sources, unpublished } = await gatherStatus(world.db, join(world.dir, `state-${args.state}`));
  if (unpublished !== null) fail(world, `exit 0, yet status says ${unpublished} holds work not yet published`, stderr);
  const waiting = sources.flatMap((s) =>
    s.streams
      .filter((st) => ran.includes(st.stream) && ((st.windowsPending ?? 0) > 0 || st.pendingRange !== null))
      .map((st) => ({ source: s.name, ...st })),
  );
  if (waiting.length > 0) fail(world, `exit 0, yet status says windows wait: ${JSON.stringify(waiting)}`, stderr);
}

/** After a run of every source into a lake (not through the catalog) that exited 0: status says that lake holds all the warehouse does. */
async function checkLakeCaughtUp(world: World, args: SyncArgs, stderr: string): Promise<void> {
  if (args.lake === null) return;
  const where = args.lake === 's3' ? world.bucketLake : world.lakeDir(args.lake);
  // A bucket lake is named as its prefix, with the trailing slash.
  const lakes = (await gatherStatus(world.db, world.dir)).lakes;
  const said = lakes.filter((l) => l.lake.replace(/\/$/, '') === where);
  const caughtUp = said.filter((l) => l.partitions_to_write === 0).map((l) => l.source);
  for (const source of sourcesOf(args))
    if (!caughtUp.includes(source)) fail(world, `exit 0 with ${where}, yet status says of the lakes: ${JSON.stringify(lakes)}`, stderr);
}

/** After a run that exited 0: every date it had to sync equals the API now, and its lake equals the warehouse for its sources. */
async function checkSynced(
  world: World,
  args: SyncArgs,
  published: Map<string, string>,
  stderr: string,
  viaCatalog: boolean,
): Promise<void> {
  const sources = sourcesOf(args);
  const today = world.today;
  for (const source of args.streams === 'rollups,anomalies' ? [] : sources) {
    const from = [addDays(today, -(args.lookback - 1))];
    if (args.since !== null) from.push(addDays(today, -args.since));
    // A full refresh re-syncs every date stored (or from --since).
    if (args.fullRefresh && args.since === null)
      from.push(...[...world.everSynced].filter((k) => k.startsWith(`${source} `)).map((k) => k.slice(source.length + 1)));
    for (let d = from.sort()[0]!; d <= today; d = addDays(d, 1)) {
      if (args.dropBefore !== null && d < addDays(today, -args.dropBefore)) continue;
      const have = published.get(`${source} ${d}`) ?? '';
      if (have !== world.truth(source, d))
        fail(
          world,
          `exit 0, yet ${source}'s ${d} is ${have || '(none)'} in the warehouse and ${world.truth(source, d) || '(none)'} on the API`,
          stderr,
        );
    }
    // The recheck: every date the line items cover within the horizon equals the API too (not only the lookback's).
    if (!args.fullRefresh) {
      const cut = args.dropBefore === null ? null : addDays(today, -args.dropBefore);
      const horizon = horizonStart(today, null)!;
      for (const range of await coveredLineItems(world, source)) {
        for (let d = range.from < horizon ? horizon : range.from; d <= range.to && d <= today; d = addDays(d, 1)) {
          if (cut !== null && d < cut) continue;
          const have = published.get(`${source} ${d}`) ?? '';
          if (have !== world.truth(source, d))
            fail(
              world,
              `exit 0, yet ${source}'s ${d} (covered, within the recheck horizon from ${horizon}) is ${have || '(none)'} in the warehouse and ${world.truth(source, d) || '(none)'} on the API`,
              stderr,
            );
        }
      }
    }
    // The lookback's rollups, every grouping and column, equal the API's own records.
    const lookbackFrom = addDays(today, -(args.lookback - 1));
    if (args.streams !== 'line_items' && lookbackFrom <= today) {
      const cut = args.dropBefore === null ? lookbackFrom : [lookbackFrom, addDays(today, -args.dropBefore)].sort()[1]!;
      const differ = await storedAgainstApi(world.db, world.emulator.datasetOf(source), {
        source,
        from: cut,
        to: today,
        nowMs: EMULATOR_NOW,
        tables: ['rollups_daily'],
      });
      if (differ.length > 0)
        fail(world, `exit 0, yet ${source}'s lookback rollups differ from the API's: ${differ.slice(0, 5).join('; ')}`, stderr);
    }
    if (args.dropBefore !== null) {
      const kept = [...published.keys()].find(
        (k) => k.startsWith(`${source} `) && k.slice(source.length + 1) < addDays(today, -args.dropBefore!),
      );
      if (kept !== undefined) fail(world, `exit 0 with --drop-before, yet the warehouse still holds ${kept}`, stderr);
    }
  }
  // Anomalies, every column and status included, as the API has them now: every one detected in the run's window,
  // and every one held that was detected within the recheck horizon (each run re-reads those).
  if (args.streams === 'all' || args.streams === 'rollups,anomalies') {
    const lookback = addDays(today, -(args.lookback - 1));
    const start = args.since === null ? lookback : [lookback, addDays(today, -args.since)].sort()[0]!;
    for (const source of sources) {
      const differ = await storedAgainstApi(world.db, world.emulator.datasetOf(source), {
        source,
        from: today,
        to: today,
        nowMs: EMULATOR_NOW,
        anomalies: { window: [start, today], heldSince: horizonStart(today, null)! },
        tables: ['anomalies'],
      });
      if (differ.length > 0)
        fail(world, `exit 0, yet ${source}'s anomalies differ from the API's: ${differ.slice(0, 5).join('; ')}`, stderr);
    }
  }
  // A date deleted from the warehouse by hand is still in a lake (nothing told it) until a run brings the date back.
  for (const key of [...world.handDeleted]) {
    const [source, date] = key.split(' ') as [SourceName, string];
    if ((published.get(key) ?? '') === world.truth(source, date)) world.handDeleted.delete(key);
  }
  if (args.lake === null || sources.some((source) => [...world.handDeleted].some((k) => k.startsWith(`${source} `)))) return;
  const dir = world.lakeDir(args.lake);
  if (viaCatalog) {
    // Each table as an engine finds it: loaded through the catalog, read by icebird.
    const namespace = CATALOG.namespaces[args.lake === 'cat' ? 'cat' : 'ice'];
    const locate = catalogLocator(world.catalog.url, CATALOG.prefix, [namespace], await world.catalogHeaders());
    const diff = await icebergDifferences(world.db, '', { sources, locate });
    for (const [table, d] of Object.entries(diff)) {
      if (d.missing !== 0 || d.extra !== 0)
        fail(
          world,
          `exit 0, yet ${namespace}.${table} loaded through the catalog differs from the warehouse: ${JSON.stringify(d)}`,
          stderr,
        );
    }
  } else if (args.lake === 's3') {
    await checkBucketLake(world, sources, stderr);
  } else if (LAKES[args.lake].format === 'parquet') {
    const diff = await lakeDifferences(world.db, dir, sources);
    for (const [table, d] of Object.entries(diff)) {
      if (d.missing !== 0 || d.extra !== 0)
        fail(
          world,
          `exit 0, yet the Parquet lake ${LAKES[args.lake].dir} differs from the warehouse in ${table}: ${JSON.stringify(d)}`,
          stderr,
        );
    }
    for (const source of sources) {
      const manifest = JSON.parse(readFileSync(join(dir, manifestKey(source)), 'utf8')) as {
        tables: Record<string, { rows: number; first_date: string | null }>;
      };
      const [lake] = existsSync(join(dir, 'line_items', `source=${source}`))
        ? await queryDb<{ rows: number; first: string | null }>(
            world.db,
            `SELECT count(*)::INTEGER AS rows, min(usage_date)::VARCHAR AS first FROM read_parquet('${join(dir, 'line_items', `source=${source}`)}/*/*.parquet', hive_partitioning = true)`,
          )
        : [{ rows: 0, first: null }];
      const said = manifest.tables.line_items!;
      if (Number(said.rows) !== lake!.rows || said.first_date !== lake!.first) {
        fail(
          world,
          `the manifest of ${source} in ${LAKES[args.lake].dir} says line_items ${said.rows} rows from ${said.first_date}, the lake holds ${lake!.rows} from ${lake!.first}`,
          stderr,
        );
      }
    }
  } else {
    const diff = await icebergDifferences(world.db, pathToFileURL(dir).href, { sources });
    for (const [table, d] of Object.entries(diff)) {
      if (d.missing !== 0 || d.extra !== 0)
        fail(world, `exit 0, yet the Iceberg lake differs from the warehouse in ${table}: ${JSON.stringify(d)}`, stderr);
    }
  }
}

/**
 * The bucket lake after a run that exited 0: read by icebird from the bucket, it equals the warehouse for
 * `sources`, and every file a kept snapshot names is there (a killed run's unreferenced files may be).
 */
async function checkBucketLake(world: World, sources: readonly SourceName[], stderr: string): Promise<void> {
  const location = world.bucketLake;
  const local = mkdtempSync(join(tmpdir(), 'costsync-model-lake-'));
  try {
    await world.s3!.download(world.bucket!, `${LAKES.s3.dir}/`, local);
    const hint = (table: string) => join(local, table, 'metadata', 'version-hint.text');
    const tables = Object.keys(ICEBERG_TABLES).filter((table) => existsSync(hint(table)));
    for (const table of Object.keys(ICEBERG_TABLES)) {
      const metadata = join(local, table, 'metadata');
      if (!tables.includes(table) && existsSync(metadata) && readdirSync(metadata).some((f) => /^v\d+\.metadata\.json$/.test(f)))
        fail(world, `exit 0, yet the bucket lake's ${table} has metadata and no version-hint.text`, stderr);
    }
    // Each table as readers find it, by its hint; one never committed (its sources had no rows of it) reads as empty.
    const locate = async (table: string) =>
      tables.includes(table)
        ? { tableUrl: `${location}/${table}`, metadataFileName: `v${Number(readFileSync(hint(table), 'utf8').trim())}.metadata.json` }
        : null;
    const diff = await icebergDifferences(world.db, location, { sources, s3: world.s3!.client, locate });
    for (const [table, d] of Object.entries(diff)) {
      if (d.missing !== 0 || d.extra !== 0)
        fail(world, `exit 0, yet the bucket lake differs from the warehouse in ${table}: ${JSON.stringify(d)}`, stderr);
    }
    const { missing } = await icebergFileCheck(local, location, tables);
    if (missing.length > 0) fail(world, `exit 0, yet files the bucket lake's snapshots name are missing: ${missing.join(', ')}`, stderr);
  } finally {
    rmSync(local, { recursive: true, force: true });
  }
}

/**
 * The command line of a sync, as a person would type it (relative to the world's directory); with
 * `catalog` (its URL, or a placeholder to print), the lake goes through the catalog. `bucketLake` is
 * where the lake `s3` is (or a placeholder to print).
 */
/** Where a state directory's syncs write their metrics (in the world's directory). */
function metricsFile(state: SyncArgs['state']): string {
  return `metrics-${state}.prom`;
}

export function syncLine(
  args: SyncArgs,
  today: string,
  catalog: string | null = null,
  bucketLake = `s3://$BUCKET/${LAKES.s3.dir}`,
): string[] {
  const line = [
    'sync',
    '--db',
    'costs.duckdb',
    '--state-dir',
    `state-${args.state}`,
    '--until',
    today,
    '--lookback-days',
    String(args.lookback),
    '--window-days',
    String(args.windowDays),
    '--rate-limit',
    '100000',
    '--log-format',
    'json',
    '--metrics-file',
    metricsFile(args.state),
  ];
  if (args.sources !== 'w1,w2') line.push('--source', args.sources);
  if (args.shard !== null) line.push('--shard', `${args.shard.index}/${args.shard.count}`);
  if (args.since !== null) line.push('--since', addDays(today, -args.since));
  if (args.dropBefore !== null) line.push('--drop-before', addDays(today, -args.dropBefore));
  if (args.streams !== 'all') line.push('--streams', args.streams);
  if (args.fullRefresh) line.push('--full-refresh');
  if (args.lake !== null && catalog !== null) {
    const namespace = CATALOG.namespaces[args.lake === 'cat' ? 'cat' : 'ice'];
    line.push('--catalog', catalog, '--catalog-warehouse', CATALOG.warehouse, '--catalog-namespace', namespace);
    if (args.lake !== 'cat') line.push('--out', LAKES[args.lake].dir);
    line.push('--iceberg-retention', args.retention);
  } else if (args.lake !== null) {
    line.push('--format', LAKES[args.lake].format, '--out', args.lake === 's3' ? bucketLake : LAKES[args.lake].dir);
    if (LAKES[args.lake].format === 'iceberg') line.push('--iceberg-retention', args.retention);
  }
  if (args.publishNow) line.push('--publish-interval', '0s');
  if (args.stop.kind === 'max-runtime') line.push('--max-runtime', '1ms');
  return line;
}

function stopText(stop: Stop): string {
  switch (stop.kind) {
    case 'none':
    case 'max-runtime':
      return '';
    case 'kill-request':
      return `  # SIGKILL at the emulator's request ${stop.n}`;
    case 'term-request':
      return `  # SIGTERM at the emulator's request ${stop.n}`;
    case 'failpoint':
      return `  # COSTSYNC_FAILPOINT=${stop.name}:${stop.n}`;
    case 'term-at':
      return `  # COSTSYNC_FAILPOINT=${stop.name}:${stop.n}:stop (a SIGTERM seen there)`;
    case 'head':
      return ` 2>&1 | head -${stop.n}`;
    case 'term-held':
      return `  # the API silent from request ${stop.n} on, SIGTERM then`;
    case 'kill-catalog':
      return `  # SIGKILL as the catalog applies its table commit ${stop.n}`;
  }
}

function lostText(lostWrite: number | null): string {
  return lostWrite === null ? '' : `  # the bucket applies this run's write ${lostWrite} (PUT or POST) and its answer is lost`;
}

function faultText(args: SyncArgs): string {
  switch (args.fault) {
    case 'none':
      return '';
    case 'token-expiry':
      return '# the catalog expires every token at its first commit\n  ';
    default:
      return `# the catalog answers the first ${args.faultRoute === 'commit' ? 'table commit' : 'transaction'} ${args.fault === 'applied-500' ? '500 after applying it' : `${args.fault} without applying it`}\n  `;
  }
}

/** The fault `kind` as the catalog server takes it (token expiry is armed on its commit event instead). */
function catalogFault(kind: Exclude<CatalogFaultKind, 'none' | 'token-expiry'>, route: 'commit' | 'transaction'): CatalogFault {
  return kind === 'applied-500' ? { route, status: 500, when: 'after' } : { route, status: Number(kind), when: 'before' };
}

type Cmd = fc.AsyncCommand<Model, World>;

/** Where the amount stands in a line item's every-column text. */
const AMOUNT = LINE_ITEM_COLUMNS.findIndex(([name]) => name === 'net_amount_usd');

/** A line item as the model compares it: its id and amount to read, and a digest of every column. */
function itemText(id: string, amount: number, everyColumn: string): string {
  return `${id}:${amount}:${createHash('md5').update(everyColumn).digest('hex').slice(0, 10)}`;
}

/**
 * The kinds of step the model's sequences reached since `runModel` began (a sync killed, each lake written
 * to the end, each of verify --api's outcomes, each change to the API, ...): the fast tier fails unless its
 * fixed seeds reach every kind it lists (`REACHED_FAST`).
 */
const reached = new Set<string>();

class SyncCommand implements Cmd {
  /** The day it last ran on, for its printed command line. */
  private ranOn = '<today>';
  /** Whether it last ran through the catalog. */
  private viaCatalog = false;
  constructor(readonly args: SyncArgs) {}
  /** What stops it: a kill at a catalog commit is none for a run that commits through no catalog. */
  private get stop(): Stop {
    return this.args.stop.kind === 'kill-catalog' && !this.viaCatalog ? { kind: 'none' } : this.args.stop;
  }
  check(): boolean {
    return true;
  }
  async run(model: Model, world: World): Promise<void> {
    this.ranOn = model.today;
    this.viaCatalog = this.args.lake === 'cat' || (this.args.lake === 'ice' && (this.args.register || model.iceInCatalog));
    // Once a sync has named the catalog for `ice` (even one killed mid-way), its tables are the catalog's.
    if (this.viaCatalog && this.args.lake === 'ice') model.iceInCatalog = true;
    const line = syncLine(
      this.args,
      model.today,
      this.viaCatalog ? world.catalog.url : null,
      this.args.lake === 's3' ? world.bucketLake : undefined,
    );
    world.log.push(this.toString());
    const synced = sourcesOf(this.args);
    const before = synced.length === 0 ? world.fingerprint() : '';
    const fault = this.viaCatalog ? this.args.fault : 'none';
    const began = new Date().toISOString();
    const expire = () => world.catalog.expireTokens();
    if (fault === 'token-expiry') world.catalog.events.once('commit', expire);
    else if (fault !== 'none') world.catalog.faults.push(catalogFault(fault, this.args.faultRoute));
    const result = await world.cli(line, this.stop, this.args.lostWrite);
    world.catalog.events.off('commit', expire);
    world.catalog.faults.splice(0);
    const killed = result.signal === 'SIGKILL';
    reached.add(killed ? 'sync killed' : result.code === 4 ? 'sync stopped' : result.code === 0 ? 'sync' : `sync exit ${result.code}`);
    if (result.code === 0) {
      if (this.args.lake !== null) reached.add(`lake ${this.args.lake}`);
      if (this.args.state === 'b') reached.add('second state directory');
      if (this.args.fullRefresh) reached.add('full refresh');
      if (this.args.shard !== null) reached.add(synced.length === 0 ? 'shard owning none' : 'shard');
      if (this.args.since !== null) reached.add('since');
      if (this.args.dropBefore !== null) reached.add('drop-before');
      if (fault !== 'none') reached.add('catalog fault');
      if (this.args.lostWrite !== null) reached.add('lost answer');
    }
    if (synced.length === 0) {
      // A shard that owns none of the named sources: exit 0 before anything is opened, whatever would have stopped it.
      if (result.code !== 0) fail(world, `a shard that owns no source exited ${result.code} (signal ${result.signal})`, result.stderr);
      if (world.fingerprint() !== before) fail(world, 'a shard that owns no source changed files', result.stderr);
      const changes = world.bucketChanges();
      if (changes.length > 0) fail(world, `a shard that owns no source wrote to the bucket: ${changes.join(', ')}`, result.stderr);
      await checkAlways(world, result.stderr, []);
      return;
    }
    if (this.args.dropBefore !== null) {
      // The user named these dates: they may go (the drop runs first, so even a stopped run may have dropped them).
      const cut = addDays(model.today, -this.args.dropBefore);
      for (const key of [...world.everSynced]) {
        const [source, date] = key.split(' ') as [SourceName, string];
        if (synced.includes(source) && date < cut && this.args.streams !== 'rollups,anomalies') world.everSynced.delete(key);
      }
    }
    if (!killed && result.code !== 0 && result.code !== 4)
      fail(world, `sync exited ${result.code} (signal ${result.signal})`, result.stderr);
    if (!killed) await checkExitAsRecorded(world, this.args.state, began, result.code, result.stderr);
    // A write whose answer was lost is no stop: the SDK sends it again, and the run recognises what it wrote.
    if (this.stop.kind === 'none' && result.code !== 0) fail(world, `a sync nothing stopped exited ${result.code}`, result.stderr);
    const published = await checkAlways(world, result.stderr, killed ? [] : [this.args.state]);
    if (result.code === 0) await checkSynced(world, this.args, published, result.stderr, this.viaCatalog);
    if (result.code === 0 && this.args.sources === 'w1,w2' && this.args.shard === null) {
      checkNothingPending(world, this.args, result.stderr);
      await checkStatusClear(world, this.args, result.stderr);
      if (!this.viaCatalog) await checkLakeCaughtUp(world, this.args, result.stderr);
    }
  }
  toString(): string {
    const line = syncLine(this.args, this.ranOn, this.viaCatalog ? '$CATALOG' : null);
    return `${this.viaCatalog ? faultText(this.args) : ''}costsync ${line.join(' ')}${stopText(this.stop)}${lostText(this.args.lostWrite)}`;
  }
}

/** The catalog is restarted (its tables kept) offering something else: transactions, none, or no `endpoints` list. */
class CatalogOfferCommand implements Cmd {
  constructor(readonly offer: CatalogOffer) {}
  check(): boolean {
    return true;
  }
  async run(_model: Model, world: World): Promise<void> {
    reached.add('catalog offer');
    await world.restartCatalog(this.offer);
    world.log.push(this.toString());
  }
  toString(): string {
    return `# the catalog restarts offering ${this.offer}`;
  }
}

/** A new day: the model's today (the runs' --until) moves one day on, up to the emulator's last day. */
class NewDayCommand implements Cmd {
  check(model: Model): boolean {
    return model.today < END;
  }
  async run(model: Model, world: World): Promise<void> {
    reached.add('new day');
    model.today = addDays(model.today, 1);
    world.today = model.today;
    world.log.push(`# a new day: today is ${model.today}`);
  }
  toString(): string {
    return '# a new day arrives';
  }
}

/** Late data: the emulator's last days change (rows changed, deleted, added). */
class RestateCommand implements Cmd {
  check(): boolean {
    return true;
  }
  async run(_model: Model, world: World): Promise<void> {
    reached.add('restate');
    world.emulator.restate();
    world.recordTruth();
    world.log.push('# the API restates its last 8 days');
  }
  toString(): string {
    return '# the API restates its last 8 days';
  }
}

/** A provider withdraws a whole day, `back` days before today. */
/**
 * `verify --api` on the published warehouse: it exits 0 or 1 (2 with no warehouse yet, or nothing synced in it). When it
 * passes, every date both windowed streams say they synced holds the API's line-item total per
 * provider (it can be fooled only by changes that keep those totals, its stated blind spot); when it
 * fails, it names differences, and each at a provider's level (line items or rollup) is one the model sees.
 */
class VerifyApiCommand implements Cmd {
  check(): boolean {
    return true;
  }
  async run(_model: Model, world: World): Promise<void> {
    world.log.push(this.toString());
    const had = existsSync(world.db);
    const result = await world.cli(['verify', '--api', '--db', 'costs.duckdb', '--rate-limit', '100000', '--format', 'json']);
    reached.add(`verify --api exit ${result.code}`);
    if (!had) {
      if (result.code !== 2) fail(world, `verify --api with no warehouse exited ${result.code}, not 2`, result.stderr);
      return;
    }
    if (result.code === 2) {
      // Nothing synced yet (a first run killed before its first commit): said, never "equal to the API".
      const [synced] = await queryDb<{ n: number }>(world.db, 'SELECT count(*)::INTEGER AS n FROM synced_dates');
      if (synced!.n > 0 || !result.stderr.includes('verify --api compared nothing'))
        fail(world, `verify --api exited 2 with ${synced!.n} synced range(s)`, result.stderr);
      return;
    }
    if (result.code !== 0 && result.code !== 1) fail(world, `verify --api exited ${result.code}`, result.stderr);
    const carried = await queryDb<{ source: SourceName; state: string }>(
      world.db,
      'SELECT source, state::VARCHAR AS state FROM _costsync_sync_state',
    );
    const stored = await queryDb<{ k: string; usd: number }>(
      world.db,
      "SELECT source || ' ' || usage_date::VARCHAR || ' ' || provider_type AS k, sum(net_amount_usd) AS usd FROM line_items GROUP BY ALL",
    );
    const storedUsd = new Map(stored.map((r) => [r.k, Number(r.usd)]));
    const rollups = await queryDb<{ k: string; usd: number }>(
      world.db,
      "SELECT source || ' ' || date::VARCHAR || ' ' || provider_type AS k, sum(cost_usd) AS usd FROM rollups_daily WHERE group_by = 'provider' GROUP BY ALL",
    );
    const storedRollups = new Map(rollups.map((r) => [r.k, Number(r.usd)]));
    if (result.code === 1) {
      // Each difference it names at the level the model knows (a provider's line items or rollup) is one the model sees too.
      const { differences } = JSON.parse(result.stdout) as {
        differences: { source: SourceName; date: string; check: string; group: string; stored_usd: number }[];
      };
      if (differences.length === 0) fail(world, 'verify --api exited 1 naming no difference', result.stderr);
      for (const d of differences.filter((x) => x.check === 'line_items' || x.check === 'provider')) {
        const api = world.providerTotals(d.source, d.date).get(d.group) ?? 0;
        const held = (d.check === 'line_items' ? storedUsd : storedRollups).get(`${d.source} ${d.date} ${d.group}`) ?? 0;
        if (Math.abs(held - api) <= 0.011)
          fail(
            world,
            `verify --api names ${d.source}'s ${d.date} ${d.check} ${d.group} ($${held.toFixed(2)}); the model's API has the same`,
            result.stderr,
          );
      }
      return;
    }
    for (const { source, state } of carried) {
      const streams = decodeCarried(state) as Partial<Record<'line_items' | 'rollups', WindowedStreamState>>;
      if (streams.line_items === undefined || streams.rollups === undefined) continue;
      const rollups = coverageOf(streams.rollups).ranges;
      for (const range of coverageOf(streams.line_items).ranges) {
        for (let d = range.from; d <= range.to && d <= END; d = addDays(d, 1)) {
          if (!rollups.some((r) => r.from <= d && d <= r.to)) continue;
          for (const [provider, usd] of world.providerTotals(source, d)) {
            for (const [what, held] of [
              ['line items', storedUsd],
              ['provider rollups', storedRollups],
            ] as const) {
              const have = held.get(`${source} ${d} ${provider}`) ?? 0;
              if (Math.abs(have - usd) > 0.011)
                fail(
                  world,
                  `verify --api passed, yet ${source}'s ${d} holds $${have.toFixed(2)} of ${provider} in its ${what} and the API $${usd.toFixed(2)}`,
                  result.stderr,
                );
            }
          }
        }
      }
    }
  }
  toString(): string {
    return 'costsync verify --api --db costs.duckdb --rate-limit 100000 --format json  # exit 0 only if every synced date equals the API, 1 naming real differences';
  }
}

/**
 * The exit code says what the run's records say: the run that started after `began` (in the state directory's
 * working copy, which holds its rows whether or not it published) recorded success for exit 0, stopped (its
 * worst) for exit 4. A run stopped before it recorded its start has nothing to compare.
 */
async function checkExitAsRecorded(world: World, state: 'a' | 'b', began: string, code: number | null, stderr: string): Promise<void> {
  const work = workingCopyPath(world.stateDir(state), world.db);
  if (!existsSync(work)) return;
  const rows = await queryDb<{ outcome: string | null }>(
    work,
    `SELECT outcome FROM sync_runs WHERE run_id = (SELECT max(run_id) FROM sync_runs WHERE strftime(started_at AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.%gZ') >= '${began}')`,
  );
  if (rows.length === 0) return;
  const outcomes = new Set(rows.map((r) => r.outcome));
  const recorded = outcomes.has('failed') ? 'failed' : outcomes.has('stopped') || outcomes.has('running') ? 'stopped' : 'success';
  const said = code === 0 ? 'success' : code === 4 ? 'stopped' : 'failed';
  if (recorded !== said) fail(world, `sync exited ${code} (${said}), yet sync_runs records the run as ${[...outcomes].join(', ')}`, stderr);
}

/** Every day of `ranges`, as dates. */
function daysOf(ranges: readonly DateRange[]): Set<string> {
  const days = new Set<string>();
  for (const r of ranges) for (let d = r.from; d <= r.to; d = addDays(d, 1)) days.add(d);
  return days;
}

/**
 * The readers agree with the progress the published warehouse carries: `synced_dates` holds its line items'
 * dates; `status` with the run's state directory, an empty one and one holding another warehouse's file shows
 * exactly the warehouse's sources with those dates (from the file only where it agrees with the warehouse);
 * `monthly_spend` calls a month whole only when both windowed streams' dates cover it; `verify` refuses
 * (exit 2) only a warehouse with no synced date.
 */
async function checkReaders(world: World, env: Record<string, string>): Promise<void> {
  const carried = await queryDb<{ source: string; state: string }>(
    world.db,
    'SELECT source, state::VARCHAR AS state FROM _costsync_sync_state',
  );
  const covered = new Map<string, { line_items: DateRange[]; any: Set<string> }>();
  for (const { source, state } of carried) {
    const streams = decodeCarried(state) as Partial<Record<'line_items' | 'rollups', WindowedStreamState>>;
    const lineItems = streams.line_items === undefined ? [] : coverageOf(streams.line_items).ranges;
    const rollups = streams.rollups === undefined ? [] : coverageOf(streams.rollups).ranges;
    covered.set(source, { line_items: [...lineItems], any: daysOf([...lineItems, ...rollups]) });
  }
  const viewed = await queryDb<{ source: string; f: string; t: string }>(
    world.db,
    "SELECT source, strftime(from_date, '%Y-%m-%d') AS f, strftime(to_date, '%Y-%m-%d') AS t FROM synced_dates WHERE stream = 'line_items'",
  );
  for (const [source, c] of covered) {
    const view = [...daysOf(viewed.filter((r) => r.source === source).map((r) => ({ from: r.f, to: r.t })))].sort().join();
    if (view !== [...daysOf(c.line_items)].sort().join())
      fail(world, `synced_dates holds other line-item dates of ${source} than the warehouse carries`);
  }
  const foreign = mkdtempSync(join(world.dir, 'foreign-state-'));
  const empty = mkdtempSync(join(world.dir, 'empty-state-'));
  try {
    writeFileSync(
      join(foreign, 'costsync-state-another-0badcafe--a.json'),
      JSON.stringify({ version: 2, source: { name: 'a' }, streams: {} }),
    );
    for (const [what, dir] of [
      ['state-a', world.stateDir('a')],
      ['an empty state directory', empty],
      ["another warehouse's state directory", foreign],
    ] as const) {
      const { sources, otherStateFiles } = await gatherStatus(world.db, dir, env);
      if (dir === foreign && otherStateFiles.length !== 1)
        fail(world, `status with ${what} names ${otherStateFiles.length} other warehouses' files`);
      for (const [source, c] of covered) {
        const shown = sources.find((x) => x.name === source);
        const line = shown?.streams.find((st) => st.stream === 'line_items');
        const want = c.line_items.length === 0 ? null : formatRanges(c.line_items);
        if (shown === undefined || (dir !== world.stateDir('a') && shown.stateFrom !== 'warehouse'))
          fail(world, `status with ${what} shows ${source} as ${JSON.stringify(shown?.stateFrom)}`);
        if (want !== null && line?.watermark?.replace(/ \(unchecked\)$/, '') !== want)
          fail(world, `status with ${what} says ${source}'s line items hold ${line?.watermark}; the warehouse carries ${want}`);
      }
      const strangers = sources.filter((x) => !covered.has(x.name) && x.file === '');
      if (strangers.length > 0)
        fail(world, `status with ${what} shows sources the warehouse does not carry: ${strangers.map((x) => x.name).join()}`);
    }
  } finally {
    rmSync(foreign, { recursive: true, force: true });
    rmSync(empty, { recursive: true, force: true });
  }
  const months = await queryDb<{ source: string; month: string; is_partial: boolean }>(
    world.db,
    "SELECT source, strftime(month, '%Y-%m-%d') AS month, is_partial FROM monthly_spend",
  );
  for (const m of months) {
    const days = covered.get(m.source)?.any ?? new Set<string>();
    let whole = true;
    for (let d = m.month; d.slice(0, 7) === m.month.slice(0, 7); d = addDays(d, 1)) whole &&= days.has(d);
    if (m.is_partial === whole)
      fail(
        world,
        `monthly_spend calls ${m.source}'s ${m.month.slice(0, 7)} ${m.is_partial ? 'partial' : 'whole'}; its synced dates say otherwise`,
      );
  }
  // Each FOCUS version's view holds, per source and date, the line items' rows and cost exactly.
  for (const { view } of FOCUS_VERSIONS) {
    const [apart] = await queryDb<{ n: number }>(
      world.db,
      `SELECT count(*)::INT AS n FROM (
         SELECT x_source AS source, CAST(ChargePeriodStart AS DATE) AS date, sum(BilledCost) AS usd, count(*) AS n FROM ${view} GROUP BY ALL
       ) v FULL JOIN (SELECT source, usage_date AS date, sum(net_amount_usd) AS usd, count(*) AS n FROM line_items GROUP BY ALL) l
       USING (source, date) WHERE v.usd IS DISTINCT FROM l.usd OR v.n IS DISTINCT FROM l.n`,
    );
    if (apart!.n > 0) fail(world, `${view} differs from the line items on ${apart!.n} source date(s)`);
  }
  // The FOCUS 1.3 export: every line item's row, and beside it the Recency the warehouse holds, day for day.
  const out = join(world.dir, 'export', 'focus-1.3.parquet');
  const exported = await run(['export', '--db', world.db, '--focus-version', '1.3', '--out', out], env);
  if (exported.code !== 0) fail(world, `export --focus-version 1.3 exited ${exported.code}`, exported.stderr);
  const metadata = JSON.parse(readFileSync(`${out}.metadata.json`, 'utf8')) as {
    Recency: { DatasetInstanceId: string; TimeSectors: { TimeSectorStart: string; TimeSectorLastUpdated: string }[] }[];
    x_DataFile: { Rows: number };
  };
  const [items] = await queryDb<{ n: number }>(world.db, 'SELECT count(*)::INT AS n FROM line_items');
  if (metadata.x_DataFile.Rows !== items!.n)
    fail(world, `the export's metadata says ${metadata.x_DataFile.Rows} rows; the warehouse holds ${items!.n}`);
  const sectors = await queryDb<{ s: string }>(
    world.db,
    "SELECT DatasetInstanceId || ' ' || strftime(TimeSectorStart AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%SZ') AS s FROM focus_recency ORDER BY 1",
  );
  const inMetadata = metadata.Recency.flatMap((r) => r.TimeSectors.map((t) => `${r.DatasetInstanceId} ${t.TimeSectorStart}`)).sort();
  if (inMetadata.join() !== sectors.map((r) => r.s).join()) fail(world, "the export's Recency is not the warehouse's focus_recency");
  rmSync(join(world.dir, 'export'), { recursive: true, force: true });
  const verify = await run(['verify', '--db', world.db], env);
  const anySynced = [...covered.values()].some((c) => c.any.size > 0);
  if (verify.code === 2 ? anySynced || !verify.stderr.includes('compared nothing') : verify.code !== 0 && verify.code !== 1)
    fail(world, `verify exited ${verify.code} with ${anySynced ? 'synced dates' : 'nothing synced'}`, verify.stderr);
}

/**
 * What an analyst runs on the published warehouse, whatever state the runs before left it in: `query`
 * answers with what the file holds (exit 2 with no warehouse yet), and `report`'s total for the last 30
 * days is the file's daily spend over them, as the `daily_spend_by_provider` view says; then the readers
 * of coverage agree with the carried progress (`checkReaders`).
 */
class ReadCommand implements Cmd {
  check(): boolean {
    return true;
  }
  async run(model: Model, world: World): Promise<void> {
    world.log.push(this.toString());
    const had = existsSync(world.db);
    const env = { TZ: 'UTC', HOME: world.dir };
    const sql =
      'SELECT source, count(*)::INTEGER AS n, round(sum(net_amount_usd), 2)::DOUBLE AS usd FROM line_items GROUP BY source ORDER BY source';
    const query = await run(['query', sql, '--db', world.db, '--format', 'json'], env);
    const from = addDays(model.today, -30);
    const to = addDays(model.today, -1);
    const out = join(world.dir, 'report.html');
    const report = await run(['report', '--db', world.db, '--out', out, '--from', from, '--to', to], env);
    if (!had) {
      if (query.code !== 2 || report.code !== 2)
        fail(world, `query and report with no warehouse exited ${query.code} and ${report.code}, not 2`, query.stderr + report.stderr);
      return;
    }
    if (query.code !== 0) fail(world, `query exited ${query.code}`, query.stderr);
    const direct = await queryDb(world.db, sql);
    if (JSON.stringify(JSON.parse(query.stdout)) !== JSON.stringify(direct))
      fail(world, `query answered ${query.stdout.trim()}, the published file holds ${JSON.stringify(direct)}`, query.stderr);
    if (report.code !== 0) fail(world, `report exited ${report.code}`, report.stderr);
    await checkReaders(world, env);
    reached.add('readers');
    const [{ usd }] = (await queryDb<{ usd: number | null }>(
      world.db,
      `SELECT round(sum(cost_usd), 2)::DOUBLE AS usd FROM daily_spend_by_provider WHERE date BETWEEN DATE '${from}' AND DATE '${to}'`,
    )) as [{ usd: number | null }];
    const html = readFileSync(out, 'utf8');
    const total = /<b id="total">([^<]*)<\/b>/.exec(html)?.[1];
    if (usd !== null && total !== formatUsd(usd))
      fail(world, `report's total is ${total}, the published file's daily spend ${formatUsd(usd)}`, report.stderr);
    // No spend in those days: the report says so, rather than showing a total of nothing.
    if (usd === null && !html.includes(`No spend is stored for ${from} to ${to}`))
      fail(world, `the file holds no spend for ${from}..${to}, yet the report does not say so`, report.stderr);
    rmSync(out, { force: true });
  }
  toString(): string {
    return 'costsync query "SELECT source, count(*), sum(net_amount_usd) FROM line_items GROUP BY source" --db costs.duckdb; costsync report --db costs.duckdb --from today-30 --to today-1  # what the file holds';
  }
}

class EmptyDayCommand implements Cmd {
  constructor(readonly back: number) {}
  check(): boolean {
    return true;
  }
  async run(model: Model, world: World): Promise<void> {
    reached.add('empty day');
    const date = addDays(model.today, -this.back);
    world.emulator.emptyDay(date);
    world.recordTruth();
    world.log.push(`# the API empties ${date}`);
  }
  toString(): string {
    return `# the API empties the day ${this.back} days before today`;
  }
}

/** The API restates one older day of every source (amounts changed, rows removed, late rows added), `back` days before today. */
class RestateOldDayCommand implements Cmd {
  constructor(readonly back: number) {}
  check(): boolean {
    return true;
  }
  async run(model: Model, world: World): Promise<void> {
    reached.add('restate old day');
    const date = addDays(model.today, -this.back);
    world.emulator.restateDay(date, { changeRate: 0.5, deleteRate: 0.3, addRows: 1 });
    world.recordTruth();
    world.log.push(`costsync emulator change restate-day ${date} --change-rate 0.5 --delete-rate 0.3 --add-rows 1`);
  }
  toString(): string {
    return `# the API restates the day ${this.back} days before today`;
  }
}

/** The API corrects a line item's usage date in every source: from `from` days before today to `to` days before it. */
class MoveLineItemCommand implements Cmd {
  constructor(
    readonly from: number,
    readonly to: number,
  ) {}
  check(): boolean {
    return true;
  }
  async run(model: Model, world: World): Promise<void> {
    reached.add('move line item');
    const [from, to] = [addDays(model.today, -this.from), addDays(model.today, -this.to)];
    world.log.push(`costsync emulator change move-line-item --from ${from} --to ${to}`);
    try {
      world.emulator.moveLineItem(from, to);
    } catch (error) {
      // A day with no line item left to move: nothing changes.
      if (!/no line item/i.test(String(error))) throw error;
    }
    world.recordTruth();
  }
  toString(): string {
    return `# the API moves a line item from ${this.from} to ${this.to} days before today`;
  }
}

/** An old alert's status changes at the API (resolved weeks after it fired). */
class AlertStatusCommand implements Cmd {
  constructor(readonly back: number) {}
  check(): boolean {
    return true;
  }
  async run(model: Model, world: World): Promise<void> {
    reached.add('alert status');
    const date = addDays(model.today, -this.back);
    world.log.push(`costsync emulator change anomaly-status --date ${date} --status resolved`);
    try {
      world.emulator.setAnomalyStatus({ date }, 'resolved');
    } catch (error) {
      if (!/no (alert|anomal)/i.test(String(error))) throw error;
    }
  }
  toString(): string {
    return `# an alert ${this.back} days old is resolved at the API`;
  }
}

/** A person deletes one date's line items of a source from the published warehouse (within the recheck horizon, past the lookback). */
class DeleteByHandCommand implements Cmd {
  constructor(
    readonly source: SourceName,
    readonly back: number,
  ) {}
  check(): boolean {
    return true;
  }
  async run(model: Model, world: World): Promise<void> {
    reached.add('delete by hand');
    const date = addDays(model.today, -this.back);
    world.log.push(this.line(date));
    if (!existsSync(world.db)) return;
    const instance = await DuckDBInstance.create(world.db);
    const connection = await instance.connect();
    try {
      await connection.run(`DELETE FROM line_items WHERE source = '${this.source}' AND usage_date = '${date}'`);
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
    world.everSynced.delete(`${this.source} ${date}`);
    world.handDeleted.add(`${this.source} ${date}`);
    await checkAlways(world, '', []);
  }
  private line(date: string): string {
    return `duckdb costs.duckdb "DELETE FROM line_items WHERE source = '${this.source}' AND usage_date = '${date}'"  # by hand`;
  }
  toString(): string {
    return this.line(`today-${this.back}`);
  }
}

/** Command lines costsync must refuse with exit 2, writing nothing. */
export const BAD_LINES: readonly string[][] = [
  ['--lookback-days', '-1'],
  ['--window-days', '0'],
  ['--since', '2026-02-30'],
  ['--format', 'orc'],
  ['--streams', 'line_items,costs'],
  ['--max-runtime', 'soon'],
  ['--iceberg-retention', '30'],
  ['--lease-ttl', '600'],
];

class BadCommand implements Cmd {
  constructor(
    readonly which: number,
    readonly state: 'a' | 'b',
  ) {}
  check(): boolean {
    return true;
  }
  async run(model: Model, world: World): Promise<void> {
    reached.add('bad command');
    const line = ['sync', '--db', 'costs.duckdb', '--state-dir', `state-${this.state}`, '--until', model.today, ...BAD_LINES[this.which]!];
    world.log.push(this.toString());
    const before = world.fingerprint();
    const result = await world.cli(line);
    if (result.code !== 2) fail(world, `an invalid command exited ${result.code}, not 2`, result.stderr);
    if (world.fingerprint() !== before) fail(world, 'an invalid command changed files', result.stderr);
    await checkAlways(world, result.stderr, []);
  }
  toString(): string {
    return `costsync sync --state-dir state-${this.state} ${BAD_LINES[this.which]!.join(' ')}  # must exit 2 and change nothing`;
  }
}

const stopArb: fc.Arbitrary<Stop> = fc.oneof(
  { weight: 6, arbitrary: fc.constant<Stop>({ kind: 'none' }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('kill-request' as const), n: fc.integer({ min: 1, max: 14 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('term-request' as const), n: fc.integer({ min: 1, max: 14 }) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('failpoint' as const),
      name: fc.constantFrom('commit' as const, 'lake-put' as const, 'iceberg-commit' as const, 'publish' as const),
      n: fc.integer({ min: 1, max: 4 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('term-at' as const),
      name: fc.constantFrom('lake-put' as const, 'iceberg-commit' as const),
      n: fc.integer({ min: 1, max: 4 }),
    }),
  },
  { weight: 1, arbitrary: fc.constant<Stop>({ kind: 'max-runtime' }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('head' as const), n: fc.integer({ min: 1, max: 6 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('term-held' as const), n: fc.integer({ min: 1, max: 10 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('kill-catalog' as const), n: fc.integer({ min: 1, max: 8 }) }) },
);

export const syncArb: fc.Arbitrary<SyncArgs> = fc
  .record({
    state: fc.constantFrom('a' as const, 'b' as const),
    sources: fc.oneof(
      { weight: 3, arbitrary: fc.constant('w1,w2' as const) },
      { weight: 1, arbitrary: fc.constantFrom('w1' as const, 'w2' as const) },
    ),
    dropBefore: fc.oneof({ weight: 8, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.constantFrom(20, 105) }),
    since: fc.oneof({ weight: 3, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.constantFrom(2, 10, 100, 115) }),
    lookback: fc.constantFrom(3 as const, 1 as const, 0 as const),
    windowDays: fc.constantFrom(30 as const, 7 as const, 1 as const),
    streams: fc.oneof(
      { weight: 4, arbitrary: fc.constant('all' as const) },
      { weight: 1, arbitrary: fc.constantFrom('line_items' as const, 'line_items,rollups' as const, 'rollups,anomalies' as const) },
    ),
    fullRefresh: fc.oneof({ weight: 5, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
    // COSTSYNC_MODEL_LAKES=0 leaves the lakes out, to look for what a lake's failure would hide.
    lake:
      process.env.COSTSYNC_MODEL_LAKES === '0' ? fc.constant(null) : fc.constantFrom<LakeName | null>(null, 'p1', 'p2', 'ice', 'cat', 's3'),
    retention: fc.constantFrom('7d' as const, '0s' as const),
    publishNow: fc.boolean(),
    stop: stopArb,
    register: fc.oneof({ weight: 3, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
    fault: fc.oneof(
      { weight: 3, arbitrary: fc.constant('none' as const) },
      { weight: 2, arbitrary: fc.constantFrom('applied-500' as const, '503' as const, '409' as const, 'token-expiry' as const) },
    ),
    faultRoute: fc.constantFrom('commit' as const, 'transaction' as const),
    lostWrite: fc.oneof({ weight: 1, arbitrary: fc.constant(null) }, { weight: 2, arbitrary: fc.integer({ min: 1, max: 30 }) }),
    // Of two sources, 3 shards leave one shard with none, 2 split them, 1 has both.
    shard: fc.oneof(
      { weight: 4, arbitrary: fc.constant(null) },
      {
        weight: 1,
        arbitrary: fc
          .integer({ min: 1, max: 3 })
          .chain((count) => fc.record({ index: fc.integer({ min: 1, max: count }), count: fc.constant(count) })),
      },
    ),
  })
  .map((a) => (a.since !== null && a.dropBefore !== null && a.since > a.dropBefore ? { ...a, dropBefore: null } : a))
  // A short run (the fast tier's) has no backfill of a day a window (a first run's 90 days, a --since far back):
  // one such sequence would take all its seconds.
  .map((a) => (shortRun && a.windowDays === 1 && (a.since === null || a.since > 10) ? { ...a, windowDays: 7 as const } : a))
  // Only a run that may go through the catalog is killed at a catalog commit (`ice` does once registered).
  .map((a) => (a.stop.kind === 'kill-catalog' && a.lake !== 'cat' && a.lake !== 'ice' ? { ...a, stop: { kind: 'none' as const } } : a))
  // No gateway, no bucket lake (see `runModel`); only a run with the bucket lake loses a write's answer.
  .map((a) => (a.lake === 's3' && !bucketLake ? { ...a, lake: null } : a))
  .map((a) => (a.lake !== 's3' && a.lostWrite !== null ? { ...a, lostWrite: null } : a));

export const commandArbs: fc.Arbitrary<Cmd>[] = [
  syncArb.map((a) => new SyncCommand(a)),
  syncArb.map((a) => new SyncCommand(a)),
  syncArb.map((a) => new SyncCommand(a)),
  fc.constant(new NewDayCommand()),
  fc.constant(new RestateCommand()),
  fc.integer({ min: 0, max: 6 }).map((back) => new EmptyDayCommand(back)),
  fc.constant(new VerifyApiCommand()),
  fc.constant(new ReadCommand()),
  fc.integer({ min: 4, max: 50 }).map((back) => new RestateOldDayCommand(back)),
  fc
    .tuple(fc.integer({ min: 4, max: 50 }), fc.integer({ min: 0, max: 50 }))
    .filter(([from, to]) => from !== to)
    .map(([from, to]) => new MoveLineItemCommand(from, to)),
  fc.integer({ min: 4, max: 50 }).map((back) => new AlertStatusCommand(back)),
  fc
    .tuple(fc.constantFrom<SourceName>('w1', 'w2'), fc.integer({ min: 4, max: 40 }))
    .map(([source, back]) => new DeleteByHandCommand(source, back)),
  fc.constantFrom<CatalogOffer>('transactions', 'no-transactions', 'omit-endpoints').map((offer) => new CatalogOfferCommand(offer)),
  fc
    .tuple(fc.integer({ min: 0, max: BAD_LINES.length - 1 }), fc.constantFrom('a' as const, 'b' as const))
    .map(([i, s]) => new BadCommand(i, s)),
];

/** Set by `runModel` for the commands it draws: see `ModelRunOptions.short`. */
let shortRun = false;
/** Set by `runModel`: whether the run's global setup started a radosgw for the bucket lake. */
let bucketLake = false;

export interface ModelRunOptions {
  /** The fast tier's run: no sequence backfills a day a window (many windows), so several fit in its seconds. */
  short?: boolean;
  seed?: number;
  /** fast-check's path to the shrunk failure of `seed` (COSTSYNC_MODEL_PATH). */
  path?: string;
  /** The commands' own replay path (COSTSYNC_MODEL_REPLAY): which commands of the shrunk sequence ran. */
  replay?: string;
  numRuns: number;
  maxCommands: number;
  timeLimitMs: number;
}

/**
 * Runs the model: one sequence at a time (seeds `seed`, `seed + 1`, …), each in a fresh world, until
 * one fails or the time is up; a sequence once started always finishes (a time limit inside fast-check
 * would cut it and count nothing). With `path`, replays that one failure of `seed`.
 */
export async function runModel(
  options: ModelRunOptions,
): Promise<fc.RunDetails<[Iterable<Cmd>]> & { sequences: number; reached: ReadonlySet<string> }> {
  reached.clear();
  // The bucket lake's gateway: the run's radosgw. Without one the model cannot run its bucket lake: that is a
  // failure, unless COSTSYNC_MODEL_NO_BUCKET=1 names the skip (CI never sets it).
  const s3 = startRgwIfAny();
  if (s3 === null && process.env.COSTSYNC_MODEL_NO_BUCKET !== '1')
    throw new Error(
      "The model needs the run's radosgw for its bucket lake (test/support/global-setup.ts); set COSTSYNC_MODEL_NO_BUCKET=1 to run without it.",
    );
  const property = fc.asyncProperty(
    fc.commands(commandArbs, { maxCommands: options.maxCommands, ...(options.replay !== undefined && { replayPath: options.replay }) }),
    async (cmds) => {
      const world = new World(s3);
      try {
        await world.start();
        await fc.asyncModelRun(() => ({ model: { today: FIRST_TODAY, iceInCatalog: false }, real: world }), cmds);
      } finally {
        await world.close();
      }
    },
  );
  shortRun = options.short === true;
  bucketLake = s3 !== null;
  const base = options.seed ?? Math.floor(Math.random() * 2 ** 31);
  const started = Date.now();
  try {
    for (let i = 0; ; i++) {
      const details = await fc.check(property, { numRuns: 1, seed: base + i, ...(options.path !== undefined && { path: options.path }) });
      if (details.failed || options.path !== undefined || i + 1 >= options.numRuns || Date.now() - started >= options.timeLimitMs) {
        return Object.assign(details, { sequences: i + 1, reached: new Set(reached) });
      }
    }
  } finally {
    s3?.stop();
  }
}

/** The commands' replay path, as fast-check prints it in a sequence (`/*replayPath="…"*\/`). */
export function commandsReplayPath(sequence: unknown): string | undefined {
  return /\/\*replayPath="([^"]*)"\*\//.exec(String(sequence))?.[1];
}

/**
 * The report of a failed model run: the variables that replay it with the test file that ran it (whose
 * sequence length they depend on), and the shortest sequence found, as the commands it ran.
 */
export function modelReport(details: fc.RunDetails<[Iterable<Cmd>]> & { sequences: number }, testFile: string, length?: number): string {
  if (!details.failed) return `${details.sequences} sequence(s) passed (seeds from ${details.seed - details.sequences + 1})`;
  const replay = commandsReplayPath(details.counterexample?.[0]);
  const vars = [
    `COSTSYNC_MODEL_SEED=${details.seed}`,
    ...(length === undefined ? [] : [`COSTSYNC_MODEL_LENGTH=${length}`]),
    `COSTSYNC_MODEL_PATH=${details.counterexamplePath}`,
    ...(replay ? [`COSTSYNC_MODEL_REPLAY=${replay}`] : []),
  ];
  return [
    `The model found a failing sequence (seed ${details.seed}); replay it with`,
    `  ${vars.join(' ')} npx vitest run ${testFile}`,
    `(in a fresh directory with costsync.config.json naming sources w1 and w2 of the emulator, data ${addDays(END, -(SPAN_DAYS - 1))}..${END}, 2 line items a day, restatements of the last 8 days;`,
    `$CATALOG: node test/catalog/server.mjs --root catalog-wh --prefix ${CATALOG.prefix} --warehouse ${CATALOG.warehouse} --oauth ${CATALOG.client}:<secret> --transactions, and COSTSYNC_CATALOG_CREDENTIAL=${CATALOG.client}:<secret>;`,
    `$BUCKET: a new bucket on an S3 server that honours conditional writes (radosgw), AWS_ENDPOINT_URL_S3 and its keys in the environment)`,
    details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance),
  ].join('\n');
}
