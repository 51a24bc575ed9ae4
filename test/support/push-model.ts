/**
 * The model-based test of `costsync push` (fast-check's `fc.commands`): random exports of random rows,
 * edited between pushes (amounts corrected, rows added and removed), written in random formats, column
 * orders, header cases and number spellings, pushed against the emulator in one of its ingest modes
 * (duplicates skipped or replaced, dates only or date-times, errors as objects or strings, an invalid
 * row skipped, rejecting its batch or refusing its request), with answers lost, processes SIGKILLed at
 * the Nth request, rows the server refuses or skips without a word, and pushes from an empty ledger.
 *
 * Invariant after every push: the server holds each identity (date, service, account) at most once;
 * a push that exits 0 leaves every row it read held by the server with the file's values, unless a
 * flag accepted it and it is listed in the file of rows not delivered; a push that exits 1 leaves every
 * row it read held with its values or listed there (or, refused for rows failing the checks, sent
 * nothing and listed those).
 */
import fc from 'fast-check';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { startEmulator, type Emulator } from '../../src/emulator/server.js';
import type { DuplicateRows, InvalidRows, RowErrorShape, ChargePeriodDates } from '../../src/emulator/ingest.js';
import { ExitCode } from '../../src/errors.js';
import { loadSql } from '../../src/storage/duckdb.js';
import { CLI, killRunner, pushSummary, queryDb, run } from './helpers.js';

const ENV = { COSTSYNC_API_KEY: 'demo-key' };
type Kind = 'ok' | 'invalid' | 'refused' | 'silent';
interface Charge {
  date: string;
  service: string;
  account: string;
  cents: number;
  kind: Kind;
}
type Format = 'csv' | 'jsonl' | 'parquet';
const COLUMNS = ['ChargePeriodStart', 'ServiceName', 'ChargeCategory', 'BilledCost', 'SubAccountId'] as const;

export interface Modes {
  duplicates: DuplicateRows;
  dates: ChargePeriodDates;
  errors: RowErrorShape;
  invalid: InvalidRows;
  /**
   * Whether the server also skips rows without a word for reasons of its own, and pushes come from other
   * ledgers (other --db) too. Push takes a skip of rows sent again after its own request whose answer
   * never came as the server holding them (the id is its deduplication key), which such a server, or
   * the same id pushed with other values through another ledger, would make untrue (docs/focus-and-push.md
   * says so): so those sequences lose no answer and kill nothing, and the others keep to one ledger.
   */
  silent: boolean;
}

interface World {
  emulator: Emulator;
  dir: string;
  modes: Modes;
  /** The export as it is now, by identity. */
  rows: Map<string, Charge>;
  pushes: number;
  log: string[];
  /** The emulator's request hook of the moment (a kill runner's). */
  hook: ((entry: { route: string }) => void) | undefined;
}

interface Model {
  rows: number;
}

const keyOf = (c: { date: string; service: string; account: string }) => `${c.date}|${c.service}|${c.account}`;
/** The service name carries what the emulator does with the row (its verdict). */
const serviceOf = (n: number, kind: Kind) => (kind === 'refused' ? `Refused ${n}` : kind === 'silent' ? `Quiet ${n}` : `Svc ${n}`);

/** One push's way of writing the export. */
interface Shape {
  format: Format;
  order: number[];
  upper: boolean;
  /** Amounts as `12.50`, dates as `…T00:00:00Z`. */
  spelled: boolean;
  reversed: boolean;
}

async function writeExport(world: World, shape: Shape, name: string): Promise<{ path: string; charges: Charge[] }> {
  const charges = [...world.rows.values()];
  if (shape.reversed) charges.reverse();
  const columns = shape.order.map((i) => COLUMNS[i]!);
  const value = (c: Charge, col: (typeof COLUMNS)[number]): string | number => {
    switch (col) {
      case 'ChargePeriodStart':
        return shape.spelled ? `${c.date}T00:00:00Z` : c.date;
      case 'ServiceName':
        return c.service;
      case 'ChargeCategory':
        return shape.upper ? 'USAGE' : 'Usage';
      case 'BilledCost':
        return c.kind === 'invalid' ? 'abc' : shape.spelled ? (c.cents / 100).toFixed(2) : c.cents / 100;
      case 'SubAccountId':
        return c.account;
    }
  };
  const header = (col: string) => (shape.upper ? col.toUpperCase() : col);
  const path = join(world.dir, `${name}.${shape.format}`);
  if (shape.format === 'csv') {
    writeFileSync(
      path,
      [columns.map(header).join(','), ...charges.map((c) => columns.map((col) => String(value(c, col))).join(','))].join('\n'),
    );
  } else {
    const lines = charges.map((c) => JSON.stringify(Object.fromEntries(columns.map((col) => [header(col), value(c, col)]))));
    const jsonl = shape.format === 'jsonl' ? path : join(world.dir, `${name}.tmp.jsonl`);
    writeFileSync(jsonl, lines.join('\n'));
    if (shape.format === 'parquet') {
      const instance = await DuckDBInstance.create(':memory:');
      const conn = await instance.connect();
      try {
        await conn.run(`COPY (SELECT * FROM read_json('${jsonl}', format = 'newline_delimited')) TO '${path}' (FORMAT parquet)`);
      } finally {
        conn.closeSync();
        instance.closeSync();
      }
      rmSync(jsonl);
    }
  }
  return { path, charges };
}

/** The rows of a file of rows not delivered, by their row in the input. */
async function undeliveredRows(path: string, format: Format): Promise<Set<number>> {
  if (!existsSync(path)) return new Set();
  if (format === 'jsonl') {
    return new Set(
      readFileSync(path, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => Number((JSON.parse(l) as { costsync_row: number }).costsync_row)),
    );
  }
  const instance = await DuckDBInstance.create(':memory:');
  const conn = await instance.connect();
  try {
    const reader = format === 'csv' ? `read_csv('${path}', all_varchar = true)` : `read_parquet('${path}')`;
    return new Set((await conn.runAndReadAll(`SELECT costsync_row FROM ${reader}`)).getRowObjectsJS().map((r) => Number(r.costsync_row)));
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}

/** What the server holds, by identity: every amount stored for it (more than one is a double). */
function serverHolds(world: World): Map<string, number[]> {
  const held = new Map<string, number[]>();
  for (const r of world.emulator.dataset.ingestedRecords()) {
    const key = keyOf({ date: r.usage_date, service: r.provider_service, account: r.project_id });
    held.set(key, [...(held.get(key) ?? []), r.net_amount_usd]);
  }
  return held;
}

function checkNoDoubles(world: World): void {
  for (const [key, amounts] of serverHolds(world)) {
    if (amounts.length > 1)
      throw new Error(`the server holds ${key} ${amounts.length} times (${amounts.join(', ')})\n${world.log.join('\n')}`);
  }
}

/** The invariant after a push that ended with `code` (null: killed), having read `charges` in file order. */
async function checkPush(
  world: World,
  code: number | null,
  charges: Charge[],
  file: string,
  format: Format,
  flags: { skipInvalid: boolean; allow: boolean },
  stderr: string,
  db: string,
) {
  checkNoDoubles(world);
  if (code === null || code === ExitCode.STOPPED_EARLY) return;
  const fail = (why: string) => {
    throw new Error(`${why}\nexit ${code}\n${world.log.join('\n')}\n--- stderr:\n${stderr.slice(-3000)}`);
  };
  if (code !== ExitCode.OK && code !== ExitCode.FAILED) fail(`unexpected exit code ${code}`);
  await checkStatusAgrees(db, pushSummary(stderr), fail);
  const listed = await undeliveredRows(file.replace(/\.(csv|jsonl|parquet)$/, `.undelivered.${format}`), format);
  const held = serverHolds(world);
  const invalidRows = charges.map((c, i) => (c.kind === 'invalid' ? i + 1 : 0)).filter((r) => r > 0);
  if (invalidRows.length > 0 && !flags.skipInvalid) {
    // Refused before sending: exit 1, every invalid row listed.
    if (code !== ExitCode.FAILED) fail('a push with rows failing the checks exited 0 without --skip-invalid');
    for (const r of invalidRows) if (!listed.has(r)) fail(`row ${r} failed the checks but is not listed`);
    return;
  }
  charges.forEach((c, i) => {
    const row = i + 1;
    const amounts = held.get(keyOf(c));
    const holds = c.kind !== 'invalid' && amounts !== undefined && Math.abs(amounts[0]! - c.cents / 100) < 1e-9;
    if (holds) return;
    if (!listed.has(row))
      fail(
        `row ${row} (${keyOf(c)} ${c.cents / 100}, ${c.kind}) is neither held with its values (server: ${amounts?.join(', ') ?? 'none'}) nor listed as not delivered`,
      );
    const accepted = c.kind === 'invalid' ? flags.skipInvalid : flags.allow;
    if (code === ExitCode.OK && !accepted) fail(`row ${row} (${keyOf(c)}) was not delivered, yet the push exited 0`);
  });
}

/**
 * status's "Last pushes" says of the push what its summary said of the rows it sent. (The summary's
 * `settled` also counts corrections settled by an earlier push and not sent again: at least status's.)
 */
async function checkStatusAgrees(db: string, summary: Record<string, unknown>, fail: (why: string) => void): Promise<void> {
  const rows = existsSync(db) ? await queryDb(db, loadSql('status/last_pushes')) : [];
  const row = rows.find((r) => r.push_id === summary.pushId);
  const said = (n: unknown) => Number(n ?? 0);
  const status = row === undefined ? [0, 0, 0, 0] : [row.delivered, row.refused, row.not_applied, row.unconfirmed].map(said);
  const pushed = [summary.delivered, summary.refused, summary.notApplied, summary.unconfirmed].map(said);
  if (status.join() !== pushed.join())
    fail(`status says delivered, refused, not applied, unconfirmed ${status.join(', ')}; the push said ${pushed.join(', ')}`);
  if (said(row?.settled) > said(summary.settled)) fail(`status says ${said(row?.settled)} settled; the push said ${said(summary.settled)}`);
}

/** A push as the user types it: in-process (fast), or a process SIGKILLed at the Nth ingest request. */
class PushCommand implements fc.AsyncCommand<Model, World> {
  constructor(
    readonly shape: Shape,
    readonly flags: { skipInvalid: boolean; allow: boolean; batchSize: number; fresh: boolean; loseAnswer: boolean; killAt: number | null },
  ) {}
  check = () => true;
  async run(_m: Model, world: World): Promise<void> {
    world.pushes += 1;
    const flags = world.modes.silent ? { ...this.flags, loseAnswer: false, killAt: null } : { ...this.flags, fresh: false };
    const { path, charges } = await writeExport(world, this.shape, `export-${world.pushes}`);
    const db = flags.fresh ? join(world.dir, `other-${world.pushes}`, 'p.duckdb') : join(world.dir, 'p.duckdb');
    const args = [
      'push',
      '--base-url',
      world.emulator.url,
      '--db',
      db,
      '--state-dir',
      join(db, '..', 'state'),
      '--log-format',
      'json',
      '--rate-limit',
      '100000',
      '--connection',
      'demo-connection',
      '--batch-size',
      String(this.flags.batchSize),
      ...(this.flags.skipInvalid ? ['--skip-invalid'] : []),
      ...(this.flags.allow ? ['--allow-undelivered'] : []),
      path,
    ];
    if (flags.fresh) mkdirSync(join(db, '..'), { recursive: true });
    if (flags.loseAnswer) world.emulator.faults.script({ kind: 'drop', pathPrefix: '/api/v1/public/ingest' });
    world.log.push(`push ${describeFlags(this.shape, flags)} (${charges.length} rows)`);
    let code: number | null;
    let stderr: string;
    if (flags.killAt !== null) {
      const runner = killRunner(ENV, (e) => e.route === 'ingest-focus');
      world.hook = runner.onRequest;
      const result = await runner.run([CLI, ...args], { atRequest: flags.killAt });
      world.hook = undefined;
      code = result.signal === 'SIGKILL' ? null : result.code;
      stderr = result.stderr;
    } else {
      const result = await run(args, ENV);
      code = result.code;
      stderr = result.stderr;
    }
    world.log.push(`  -> ${code === null ? 'killed' : `exit ${code}`}`);
    await checkPush(world, code, charges, path, this.shape.format, this.flags, stderr, db);
  }
  toString(): string {
    return describeFlags(this.shape, this.flags);
  }
}

function describeFlags(shape: Shape, f: PushCommand['flags']): string {
  return `${shape.format}[${shape.order.join('')}${shape.upper ? ' UPPER' : ''}${shape.spelled ? ' spelled' : ''}${shape.reversed ? ' reversed' : ''}] batch ${f.batchSize}${f.skipInvalid ? ' --skip-invalid' : ''}${f.allow ? ' --allow-undelivered' : ''}${f.fresh ? ' fresh-db' : ''}${f.loseAnswer ? ' lose-answer' : ''}${f.killAt !== null ? ` kill@${f.killAt}` : ''}`;
}

/** An edit of the export: amounts corrected, rows added, removed, or turned into rows the server treats otherwise. */
class EditCommand implements fc.AsyncCommand<Model, World> {
  constructor(readonly edits: { op: 'amend' | 'add' | 'remove' | 'kind'; pick: number; cents: number; kind: Kind }[]) {}
  check = () => true;
  async run(model: Model, world: World): Promise<void> {
    for (const e of this.edits) {
      const keys = [...world.rows.keys()];
      const at = keys.length === 0 ? null : keys[e.pick % keys.length]!;
      if (e.op === 'add' || at === null) {
        const n = world.rows.size + e.pick;
        const kind = e.kind === 'silent' && !world.modes.silent ? 'ok' : e.kind;
        const charge: Charge = {
          date: `2026-11-${String((e.pick % 28) + 1).padStart(2, '0')}`,
          service: serviceOf(n, kind),
          account: `acct-${e.cents % 3}`,
          cents: e.cents,
          kind,
        };
        if (!world.rows.has(keyOf(charge))) world.rows.set(keyOf(charge), charge);
      } else if (e.op === 'remove') world.rows.delete(at);
      else if (e.op === 'amend') world.rows.set(at, { ...world.rows.get(at)!, cents: e.cents });
      else {
        // Validity only: a change of service would be another identity.
        const c = world.rows.get(at)!;
        if (c.kind === 'ok' || c.kind === 'invalid') world.rows.set(at, { ...c, kind: c.kind === 'ok' ? 'invalid' : 'ok' });
      }
    }
    model.rows = world.rows.size;
    world.log.push(`edit ${this.toString()}`);
  }
  toString(): string {
    return this.edits.map((e) => `${e.op}(${e.pick},${e.cents}${e.op === 'add' ? `,${e.kind}` : ''})`).join(' ');
  }
}

const shapeArb: fc.Arbitrary<Shape> = fc.record({
  format: fc.constantFrom<Format>('csv', 'jsonl', 'parquet'),
  order: fc.shuffledSubarray([0, 1, 2, 3, 4], { minLength: 5, maxLength: 5 }),
  upper: fc.boolean(),
  spelled: fc.boolean(),
  reversed: fc.boolean(),
});

export function pushCommands(options: { kills: boolean }): fc.Arbitrary<fc.AsyncCommand<Model, World>>[] {
  const kindArb = fc.constantFrom<Kind>('ok', 'ok', 'ok', 'ok', 'invalid', 'refused', 'silent');
  return [
    fc
      .array(
        fc.record({
          op: fc.constantFrom('amend', 'add', 'add', 'remove', 'kind' as const),
          pick: fc.nat({ max: 40 }),
          cents: fc.integer({ min: -500, max: 5000 }),
          kind: kindArb,
        }),
        { minLength: 1, maxLength: 4 },
      )
      .map((edits) => new EditCommand(edits)),
    fc
      .record({
        shape: shapeArb,
        skipInvalid: fc.boolean(),
        allow: fc.boolean(),
        batchSize: fc.constantFrom(2, 3, 500),
        fresh: fc.constantFrom(false, false, false, false, true),
        loseAnswer: fc.constantFrom(false, false, true),
        killAt: options.kills ? fc.option(fc.integer({ min: 1, max: 4 }), { freq: 4 }) : fc.constant(null),
      })
      .map(({ shape, ...flags }) => new PushCommand(shape, flags)),
  ];
}

export const modesArb: fc.Arbitrary<Modes> = fc.record({
  duplicates: fc.constantFrom<DuplicateRows>('skip', 'replace'),
  dates: fc.constantFrom<ChargePeriodDates>('date', 'date-or-time'),
  errors: fc.constantFrom<RowErrorShape>('object', 'string'),
  invalid: fc.constantFrom<InvalidRows>('skip', 'reject-batch', 'refuse-request'),
  silent: fc.boolean(),
});

const initialArb = fc.array(fc.record({ pick: fc.nat({ max: 27 }), cents: fc.integer({ min: 1, max: 5000 }) }), {
  minLength: 3,
  maxLength: 10,
});

/** One sequence: a fresh emulator in the given modes and a fresh directory, closed whatever happens. */
async function runSequence(
  modes: Modes,
  initial: { pick: number; cents: number }[],
  cmds: Iterable<fc.AsyncCommand<Model, World>>,
): Promise<void> {
  const world = { modes, pushes: 0, log: [`modes ${JSON.stringify(modes)}`], hook: undefined } as unknown as World;
  const emulator = await startEmulator({
    startDate: '2026-11-01',
    endDate: '2026-11-30',
    rowsPerDay: 1,
    ingestDuplicateRows: modes.duplicates,
    ingestChargePeriodDates: modes.dates,
    ingestRowErrorShape: modes.errors,
    ingestInvalidRows: modes.invalid,
    onRequest: (entry) => world.hook?.(entry),
    ingestVerdict: (row) => {
      const service = String(row.ServiceName ?? '');
      return service.startsWith('Refused')
        ? { refuse: 'this service is not on the contract' }
        : service.startsWith('Quiet')
          ? 'skip'
          : null;
    },
  });
  const dir = mkdtempSync(join(tmpdir(), 'costsync-push-model-'));
  const rows = new Map<string, Charge>();
  initial.forEach((r, i) => {
    const c: Charge = {
      date: `2026-11-${String(r.pick + 1).padStart(2, '0')}`,
      service: serviceOf(i, 'ok'),
      account: `acct-${i % 2}`,
      cents: r.cents,
      kind: 'ok',
    };
    rows.set(keyOf(c), c);
  });
  world.emulator = emulator;
  world.dir = dir;
  world.rows = rows;
  try {
    await fc.asyncModelRun(() => ({ model: { rows: rows.size }, real: world }), cmds);
  } finally {
    await emulator.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface PushModelOptions {
  seed: number | undefined;
  path?: string | undefined;
  numRuns: number;
  maxCommands: number;
  timeLimitMs: number;
  kills: boolean;
}

export async function runPushModel(options: PushModelOptions): Promise<fc.RunDetails<unknown[]> & { sequences: number }> {
  const property = fc.asyncProperty(
    modesArb,
    initialArb,
    fc.commands(pushCommands({ kills: options.kills }), { maxCommands: options.maxCommands }),
    runSequence,
  );
  const started = Date.now();
  const base = options.seed ?? Math.floor(Math.random() * 2 ** 31);
  for (let i = 0; ; i++) {
    // A sequence once started finishes; shrinking a failure (whose every step spawns pushes) is bounded, keeping the smallest found by then.
    const details = await fc.check(property, {
      numRuns: 1,
      seed: base + i,
      interruptAfterTimeLimit: options.timeLimitMs + 120_000,
      ...(options.path !== undefined && { path: options.path }),
    });
    if (details.failed || options.path !== undefined || i + 1 >= options.numRuns || Date.now() - started >= options.timeLimitMs) {
      return Object.assign(details as unknown as fc.RunDetails<unknown[]>, { sequences: i + 1 });
    }
  }
}

export function pushModelReport(details: fc.RunDetails<unknown[]> & { sequences: number }, testFile: string): string {
  if (!details.failed) return `${details.sequences} push sequence(s) passed (seeds from ${details.seed - details.sequences + 1})`;
  return [
    `The push model found a failing sequence (seed ${details.seed}); replay it with`,
    `  COSTSYNC_PUSH_MODEL_SEED=${details.seed} COSTSYNC_PUSH_MODEL_PATH=${details.counterexamplePath} npx vitest run ${testFile}`,
    details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance),
  ].join('\n');
}
