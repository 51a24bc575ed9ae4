/**
 * The model-based test of `costsync push` (fast-check's `fc.commands`): random exports of random rows,
 * edited between pushes (amounts corrected, rows added and removed), written in random formats, column
 * orders, header cases and number spellings, pushed against the emulator in one of its ingest modes
 * (duplicates skipped or replaced, dates only or date-times, errors as objects or strings, an invalid
 * row skipped, rejecting its batch or refusing its request), with answers lost, processes SIGKILLed at
 * the Nth request, rows the server refuses or skips without a word, and pushes from an empty ledger.
 *
 * Exports hold rows that share a key (date, service, account): identical rows (the same charge twice)
 * and rows alike but for their amount or tags; edits add such rows, change amounts within a group,
 * re-tag rows and remove whole groups, and each push writes the rows in another order and spelling.
 *
 * Invariant after every push: the server holds no more rows of a key than an export pushed had (each
 * charge once); a push that exits 0 leaves every row it read held by the server with the file's values
 * (the group's rows as a multiset: amount and tags), unless a flag accepted it and it is listed in the
 * file of rows not delivered; a push that exits 1 leaves every row it read held with its values or
 * listed there (or, refused for rows failing the checks, sent nothing and listed those). Where the
 * server replaces and a group is as large as it ever was, all of it delivered, the server holds
 * exactly the group as the last export says.
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
  /** The one tag the server shows (`user_email`), or no tags. */
  team: string | null;
  kind: Kind;
}
type Format = 'csv' | 'jsonl' | 'parquet';
const COLUMNS = ['ChargePeriodStart', 'ServiceName', 'ChargeCategory', 'BilledCost', 'SubAccountId', 'Tags'] as const;

export interface Modes {
  duplicates: DuplicateRows;
  dates: ChargePeriodDates;
  errors: RowErrorShape;
  invalid: InvalidRows;
  /**
   * Whether the server also skips rows without a word for reasons of its own, and pushes move to a fresh
   * ledger (another --db, which the pushes after it keep: a ledger left behind would hold values the
   * server no longer has, where it replaces). Push takes a skip of rows sent again after its own request whose answer
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
  /** The export as it is now, in order; rows may share a key. */
  rows: Charge[];
  /** The most rows of each key an export pushed (or begun) had: the server holds no more. */
  most: Map<string, number>;
  /** The ledger (`--db`) pushes use; a fresh one replaces it (a new container that keeps its own). */
  db: string;
  /** The ledger and charges of the last push, when it delivered every row. */
  delivered: string | undefined;
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

/** The cases pushes of the model reached (across sequences): what a tier asserts it covered. */
export const reached = new Set<string>();

/** Notes what one push's export and flags exercise. */
function noteReached(charges: readonly Charge[], shape: Shape, flags: PushCommand['flags'], modes: Modes): void {
  const byKey = new Map<string, Charge[]>();
  for (const c of charges) byKey.set(keyOf(c), [...(byKey.get(keyOf(c)) ?? []), c]);
  const groups = [...byKey.values()].filter((g) => g.length > 1);
  if (groups.some((g) => g.some((c, i) => g.findIndex((o) => o.cents === c.cents && o.team === c.team) !== i)))
    reached.add('identical rows');
  if (groups.some((g) => g.some((c) => g.some((o) => o.cents === c.cents && o.team !== c.team))))
    reached.add('rows told apart by tags only');
  if (groups.some((g) => g.some((c) => g.some((o) => o.cents !== c.cents)))) reached.add('rows sharing a key, other amounts');
  reached.add(`format ${shape.format}`);
  reached.add(`FOCUS ${focusVersionOf(modes).version} export`);
  reached.add(`server ${modes.duplicates}`);
  if (shape.reversed) reached.add('rows reversed');
  if (flags.loseAnswer) reached.add('lost answer');
  if (flags.fresh) reached.add('fresh ledger');
  if (flags.killAt !== null) reached.add('kill');
  if (charges.some((c) => c.kind === 'invalid')) reached.add('invalid rows');
}

/**
 * The FOCUS version a sequence's exports speak, one for all its pushes as a user's export tool writes one, taken
 * from its modes (no draw of its own, so the fixed seeds' sequences stay as they were): 1.2 names the provider as
 * ProviderName, 1.3 adds ServiceProviderName and HostProviderName, 1.4 drops ProviderName and adds InvoiceDetailId.
 * None of them is a key column. (An export that changes version between pushes changes its rows' values: each row
 * is sent again as a correction, docs/focus-and-push.md.) Pure.
 */
export function focusVersionOf(modes: Modes): { version: '1.2' | '1.3' | '1.4'; columns: Record<string, string> } {
  const word = JSON.stringify(modes);
  let h = 0;
  for (let i = 0; i < word.length; i++) h = (h * 31 + word.charCodeAt(i)) >>> 0;
  const version = (['1.2', '1.3', '1.4'] as const)[h % 3]!;
  const provider = 'Acme Cloud';
  if (version === '1.2') return { version, columns: { ProviderName: provider } };
  if (version === '1.3') return { version, columns: { ProviderName: provider, ServiceProviderName: provider, HostProviderName: provider } };
  return { version, columns: { ServiceProviderName: provider, HostProviderName: provider, InvoiceDetailId: 'inv-1-1' } };
}

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
  const charges = [...world.rows];
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
      case 'Tags':
        // The same tags in another member order and spacing are the same tags.
        return c.team === null
          ? ''
          : shape.spelled
            ? `{ "env" : "prod", "user_email" : "${c.team}" }`
            : JSON.stringify({ user_email: c.team, env: 'prod' });
    }
  };
  const header = (col: string) => (shape.upper ? col.toUpperCase() : col);
  const path = join(world.dir, `${name}.${shape.format}`);
  const versioned = Object.entries(focusVersionOf(world.modes).columns);
  if (shape.format === 'csv') {
    writeFileSync(
      path,
      [
        [...columns, ...versioned.map(([col]) => col)].map(header).join(','),
        ...charges.map((c) =>
          [...columns.map((col) => String(value(c, col))), ...versioned.map(([, v]) => v)]
            .map((v) => (v.includes(',') || v.includes('"') ? `"${v.replaceAll('"', '""')}"` : v))
            .join(','),
        ),
      ].join('\n'),
    );
  } else {
    const member = (c: Charge, col: (typeof COLUMNS)[number]) =>
      col === 'Tags' ? (c.team === null ? null : (JSON.parse(String(value(c, col))) as unknown)) : value(c, col);
    const lines = charges.map((c) =>
      JSON.stringify(
        Object.fromEntries([...columns.map((col) => [header(col), member(c, col)]), ...versioned.map(([col, v]) => [header(col), v])]),
      ),
    );
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

/** A row's values as the server shows them: amount in cents and the tag. */
const valueOf = (cents: number, team: string | null) => `${cents}|${team ?? ''}`;

/** What the server holds, by key: the values of every row stored for it. */
function serverHolds(world: World): Map<string, string[]> {
  const held = new Map<string, string[]>();
  for (const r of world.emulator.dataset.ingestedRecords()) {
    const key = keyOf({ date: r.usage_date, service: r.provider_service, account: r.project_id });
    held.set(key, [...(held.get(key) ?? []), valueOf(Math.round(r.net_amount_usd * 100), r.user_email === '' ? null : r.user_email)]);
  }
  return held;
}

/** Each charge once: no key has more rows on the server than an export pushed had. */
function checkNoDoubles(world: World): void {
  for (const [key, values] of serverHolds(world)) {
    if (values.length > (world.most.get(key) ?? 0))
      throw new Error(
        `the server holds ${values.length} rows of ${key} (${values.join(', ')}); no export had more than ${world.most.get(key) ?? 0}\n${world.log.join('\n')}`,
      );
  }
}

/** Takes each of `wanted` out of `from` once (a multiset difference); returns those not found. */
function missing(wanted: readonly string[], from: readonly string[]): string[] {
  const left = [...from];
  return wanted.filter((v) => {
    const at = left.indexOf(v);
    if (at < 0) return true;
    left.splice(at, 1);
    return false;
  });
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
  again: boolean,
): Promise<boolean> {
  checkNoDoubles(world);
  if (code === null || code === ExitCode.STOPPED_EARLY) return false;
  const fail = (why: string) => {
    throw new Error(`${why}\nexit ${code}\n${world.log.join('\n')}\n--- stderr:\n${stderr.slice(-3000)}`);
  };
  if (code !== ExitCode.OK && code !== ExitCode.FAILED) fail(`unexpected exit code ${code}`);
  const summary = pushSummary(stderr);
  await checkStatusAgrees(db, summary, fail);
  await checkLedgerAgainstServer(world, db, summary.pushId, fail);
  // The same charges again, in any order or spelling, after a push that delivered them all: nothing to send.
  if (again && summary.sent !== 0) fail(`the same charges as the last push, which delivered them all, sent ${String(summary.sent)} row(s)`);
  const listed = await undeliveredRows(file.replace(/\.(csv|jsonl|parquet)$/, `.undelivered.${format}`), format);
  const held = serverHolds(world);
  const invalidRows = charges.map((c, i) => (c.kind === 'invalid' ? i + 1 : 0)).filter((r) => r > 0);
  if (invalidRows.length > 0 && !flags.skipInvalid) {
    // Refused before sending: exit 1, every invalid row listed.
    if (code !== ExitCode.FAILED) fail('a push with rows failing the checks exited 0 without --skip-invalid');
    for (const r of invalidRows) if (!listed.has(r)) fail(`row ${r} failed the checks but is not listed`);
    return false;
  }
  const groups = new Map<string, { row: number; charge: Charge }[]>();
  charges.forEach((charge, i) => groups.set(keyOf(charge), [...(groups.get(keyOf(charge)) ?? []), { row: i + 1, charge }]));
  for (const [key, rows] of groups) {
    const onServer = held.get(key) ?? [];
    const unlisted = rows.filter(({ row }) => !listed.has(row));
    for (const { row, charge } of unlisted) {
      if (charge.kind === 'invalid') fail(`row ${row} (${key}) failed the checks but is not listed`);
    }
    const notHeld = missing(
      unlisted.map(({ charge }) => valueOf(charge.cents, charge.team)),
      onServer,
    );
    if (notHeld.length > 0)
      fail(
        `rows of ${key} not listed as not delivered are not held with their values: ${notHeld.join(', ')} (server: ${onServer.join(', ') || 'none'})`,
      );
    for (const { row, charge } of rows) {
      if (!listed.has(row)) continue;
      const accepted = charge.kind === 'invalid' ? flags.skipInvalid : flags.allow;
      if (code === ExitCode.OK && !accepted) fail(`row ${row} (${key}) was not delivered, yet the push exited 0`);
    }
    // A server that replaces holds the group as the export says, once it is as large as it ever was and all delivered.
    const whole = unlisted.length === rows.length && rows.every(({ charge }) => charge.kind === 'ok');
    if (world.modes.duplicates === 'replace' && whole && rows.length === world.most.get(key)) {
      const want = rows.map(({ charge }) => valueOf(charge.cents, charge.team)).sort();
      if (want.join() !== [...onServer].sort().join())
        fail(`the server holds ${key} as ${[...onServer].sort().join(', ')}; the export says ${want.join(', ')}`);
    }
  }
  return code === ExitCode.OK && listed.size === 0;
}

/**
 * status's "Last pushes" says of the push what its summary said of the rows it sent. (The summary's
 * `settled` also counts corrections settled by an earlier push and not sent again: at least status's.)
 */
/**
 * The ledger against the server's own records: every answered batch of the push holds what the server did
 * with it (rows, line items created, rows skipped, accepted), and status's sums of those are the server's.
 */
async function checkLedgerAgainstServer(world: World, db: string, pushId: unknown, fail: (why: string) => void): Promise<void> {
  if (!existsSync(db)) return;
  // Every push's batches, a killed one's too (its summary never printed).
  const batches = await queryDb<{
    push_id: string;
    batch_id: string | null;
    row_count: number;
    created: number;
    skipped: number;
    accepted: boolean;
  }>(db, 'SELECT push_id, batch_id, row_count, cost_line_item_count AS created, skipped, accepted FROM ingest_batches');
  let created = 0;
  for (const b of batches) {
    if (b.batch_id === null) continue;
    const server = world.emulator.ingestResults.get(b.batch_id);
    if (server === undefined) {
      fail(`the ledger records batch ${b.batch_id}, which the server never answered`);
      return;
    }
    const said = [server.row_count, server.cost_line_item_count, server.skipped, server.accepted];
    const held = [b.row_count, b.created, b.skipped, b.accepted].map((v, i) => (i === 3 ? v : Number(v)));
    if (said.join() !== held.join())
      fail(`the ledger records batch ${b.batch_id} as ${held.join(', ')}; the server answered ${said.join(', ')}`);
    if (b.push_id === pushId) created += server.cost_line_item_count;
    reached.add('ledger against the server');
  }
  if (typeof pushId !== 'string') return;
  const rows = await queryDb<{ push_id: string; created: number | null }>(db, loadSql('status/last_pushes'));
  const shown = rows.find((r) => r.push_id === pushId);
  if (shown !== undefined && Number(shown.created ?? 0) !== created)
    fail(`status says the push created ${Number(shown.created ?? 0)} line item(s); the server created ${created} in its batches`);
}

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
    // Any push begun may store every row of the file: no key then holds more than the most any file had.
    const sizes = new Map<string, number>();
    for (const c of charges) sizes.set(keyOf(c), (sizes.get(keyOf(c)) ?? 0) + 1);
    for (const [key, n] of sizes) world.most.set(key, Math.max(n, world.most.get(key) ?? 0));
    // A fresh ledger is a new container's: the pushes after it use it (a ledger left behind knows nothing of what came after).
    if (flags.fresh) world.db = join(world.dir, `other-${world.pushes}`, 'p.duckdb');
    const db = world.db;
    const content = `${db}\n${charges
      .map((c) => `${keyOf(c)}|${valueOf(c.cents, c.team)}|${c.kind}`)
      .sort()
      .join('\n')}`;
    const again = world.delivered === content;
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
    noteReached(charges, this.shape, flags, world.modes);
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
    const clean = await checkPush(world, code, charges, path, this.shape.format, this.flags, stderr, db, again);
    world.delivered = clean ? content : undefined;
  }
  toString(): string {
    return describeFlags(this.shape, this.flags);
  }
}

function describeFlags(shape: Shape, f: PushCommand['flags']): string {
  return `${shape.format}[${shape.order.join('')}${shape.upper ? ' UPPER' : ''}${shape.spelled ? ' spelled' : ''}${shape.reversed ? ' reversed' : ''}] batch ${f.batchSize}${f.skipInvalid ? ' --skip-invalid' : ''}${f.allow ? ' --allow-undelivered' : ''}${f.fresh ? ' fresh-db' : ''}${f.loseAnswer ? ' lose-answer' : ''}${f.killAt !== null ? ` kill@${f.killAt}` : ''}`;
}

type EditOp = 'amend' | 'add' | 'remove' | 'kind' | 'twin' | 'share' | 'retag';
const TEAMS = [null, 'red@x', 'blue@x', 'green@x'] as const;

/**
 * An edit of the export: an amount corrected, a row added (a new charge), a whole key removed, a row
 * turned into one the server treats otherwise, a row repeated (the same charge twice), a row of the same
 * key with another amount and tag, or a row re-tagged.
 */
class EditCommand implements fc.AsyncCommand<Model, World> {
  constructor(readonly edits: { op: EditOp; pick: number; cents: number; kind: Kind; team: number }[]) {}
  check = () => true;
  async run(model: Model, world: World): Promise<void> {
    for (const e of this.edits) {
      reached.add(`edit ${e.op}`);
      const at = world.rows.length === 0 ? null : e.pick % world.rows.length;
      const team = TEAMS[e.team % TEAMS.length]!;
      if (e.op === 'add' || at === null) {
        const n = world.rows.length + e.pick;
        const kind = e.kind === 'silent' && !world.modes.silent ? 'ok' : e.kind;
        world.rows.push({
          date: `2026-11-${String((e.pick % 28) + 1).padStart(2, '0')}`,
          service: serviceOf(n, kind),
          account: `acct-${e.cents % 3}`,
          cents: e.cents,
          team,
          kind,
        });
        continue;
      }
      const c = world.rows[at]!;
      if (e.op === 'remove') world.rows = world.rows.filter((r) => keyOf(r) !== keyOf(c));
      else if (e.op === 'amend') world.rows[at] = { ...c, cents: e.cents };
      else if (e.op === 'retag') world.rows[at] = { ...c, team };
      else if (e.op === 'twin') world.rows.splice(e.cents % (world.rows.length + 1), 0, { ...c });
      else if (e.op === 'share') world.rows.push({ ...c, cents: e.cents, team, kind: c.kind === 'invalid' ? 'ok' : c.kind });
      // Validity only: a change of service would be another key.
      else if (c.kind === 'ok' || c.kind === 'invalid') world.rows[at] = { ...c, kind: c.kind === 'ok' ? 'invalid' : 'ok' };
    }
    model.rows = world.rows.length;
    world.log.push(`edit ${this.toString()}`);
  }
  toString(): string {
    return this.edits
      .map((e) => `${e.op}(${e.pick},${e.cents}${e.op === 'add' ? `,${e.kind}` : ''},${TEAMS[e.team % TEAMS.length] ?? '-'})`)
      .join(' ');
  }
}

const shapeArb: fc.Arbitrary<Shape> = fc.record({
  format: fc.constantFrom<Format>('csv', 'jsonl', 'parquet'),
  order: fc.shuffledSubarray([0, 1, 2, 3, 4, 5], { minLength: 6, maxLength: 6 }),
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
          op: fc.constantFrom<EditOp>('amend', 'add', 'add', 'remove', 'kind', 'twin', 'share', 'retag'),
          pick: fc.nat({ max: 40 }),
          // Few amounts, so rows of a group often meet, pass each other and come back to values pushed before.
          cents: fc.oneof(fc.integer({ min: -500, max: 5000 }), fc.constantFrom(100, 250, 400)),
          kind: kindArb,
          team: fc.nat({ max: 3 }),
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

/** The first export: rows of a few keys, some repeated, some told apart only by their tag. */
const initialArb = fc.array(
  fc.record({ pick: fc.nat({ max: 27 }), cents: fc.integer({ min: 1, max: 5000 }), key: fc.nat({ max: 5 }), team: fc.nat({ max: 3 }) }),
  { minLength: 3, maxLength: 10 },
);

/** One sequence: a fresh emulator in the given modes and a fresh directory, closed whatever happens. */
async function runSequence(
  modes: Modes,
  initial: { pick: number; cents: number; key: number; team: number }[],
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
    // As a user starts it: --ingest-refuse-service Refused --ingest-skip-service Quiet.
    ingestRefuseServices: ['Refused'],
    ingestSkipServices: ['Quiet'],
  });
  const dir = mkdtempSync(join(tmpdir(), 'costsync-push-model-'));
  // Rows with one `key` number share a key: the first such row's date, service and account.
  const first = new Map<number, Charge>();
  const rows: Charge[] = initial.map((r, i) => {
    const team = TEAMS[r.team % TEAMS.length]!;
    const like = first.get(r.key);
    if (like !== undefined) return { ...like, cents: r.key % 2 === 0 ? like.cents : r.cents, team: r.key % 3 === 0 ? like.team : team };
    const c: Charge = {
      date: `2026-11-${String(r.pick + 1).padStart(2, '0')}`,
      service: serviceOf(i, 'ok'),
      account: `acct-${i % 2}`,
      cents: r.cents,
      team,
      kind: 'ok',
    };
    first.set(r.key, c);
    return c;
  });
  world.emulator = emulator;
  world.dir = dir;
  world.rows = rows;
  world.most = new Map();
  world.db = join(dir, 'p.duckdb');
  try {
    await fc.asyncModelRun(() => ({ model: { rows: rows.length }, real: world }), cmds);
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
