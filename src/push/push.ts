/**
 * `costsync push`: checks FOCUS files row by row, then sends the valid rows in batches through the
 * same client as `sync`. Every row carries a line-item id (the file's own, or one its identity gives),
 * and the ledger (`push_rows`) records what the server holds of each id, so a row delivered before is
 * not sent again, a row with other values is a correction, and every row read ends delivered, already
 * delivered, or in the file of rows not delivered with the reason.
 */
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { ApiClient } from '../api/client.js';
import type { IngestResult, IngestVersion } from '../api/types.js';
import { ApiError, ClientErrorCode, ConfigError, ExitCode, InternalError } from '../errors.js';
import { keyFingerprint } from '../fingerprint.js';
import { REQUIRED_INGEST_COLUMNS, extensionColumns } from '../focus/rules.js';
import type { Logger } from '../log.js';
import { newRunId } from '../run-id.js';
import { acquireLock, dbLockPath } from '../state/lock.js';
import type { Warehouse } from '../storage/duckdb.js';
import { HashSet52, hash52 } from '../sync/id-set.js';
import { lowestVersion, planColumns, type ColumnMapping, type ColumnPlan } from './columns.js';
import {
  assignGroupIds,
  classifyRow,
  defaultKeyColumns,
  describeRule,
  ledgerKey,
  parseRule,
  ruleText,
  settleBatch,
  type GroupRow,
  type IdentityRule,
  type LedgerEntry,
  type RowClass,
  type RowOutcome,
} from './identity.js';
import { validationCountsSql, validationSql, type FileReader, type RowIdentity, type SourceFile } from './reader.js';

export const DEFAULT_BATCH_SIZE = 500;
/** How often a long push says how far it got. */
export const PROGRESS_EVERY_MS = 30_000;

/** Columns of a file of rows not delivered (costsync's, added to the input's): not FOCUS, not sent, not warned about. */
export const UNDELIVERED_COLUMNS = ['costsync_row', 'costsync_reason'] as const;

export interface PushOptions {
  connectionId: string;
  files: string[];
  mapping: ColumnMapping;
  /** `--profile-version`; null picks the lowest that covers the columns used. */
  version: IngestVersion | null;
  /** `--format`; null sends `<vendor>.focus`. */
  format: string | null;
  vendor: string;
  batchSize: number;
  dryRun: boolean;
  /** Rows that fail the local checks are left out (and listed) without failing the push. */
  skipInvalid: boolean;
  /** Rows the server refused, skipped or did not confirm are listed without failing the push. */
  allowUndelivered: boolean;
  /** `--key-columns`; null keeps the connection's rule (the default key for a new connection). */
  keyColumns: string[] | null;
  /** `--rekey`: change the rule of a connection rows were delivered under (they would get new ids). */
  rekey: boolean;
  /** `--settle-corrections`: corrections the server does not apply are recorded as settled, not failures. */
  settleCorrections: boolean;
  /** Where files of rows not delivered go; null: beside each input. */
  undeliveredDir: string | null;
  /** Send every row again, even those the ledger shows delivered. */
  force: boolean;
  baseUrl: string;
  apiKey: string;
  /** The source (workspace) the key belongs to, recorded in the ledger. */
  source?: string;
}

export interface RowProblem {
  file: string;
  /** Data row, 1-based (the first row after a CSV header is 1). */
  row: number;
  /** Line in the file where the format has lines (CSV: row + 1; JSON Lines: row). */
  line: number | null;
  column: string;
  reason: string;
  /** 'error' when the row fails the push (nothing is sent); 'warn' when it is only left out (--skip-invalid). */
  level: 'error' | 'warn';
}

export interface PushSummary {
  pushId: string;
  version: IngestVersion;
  /** What identifies rows without an id of their own, in words. */
  identity: string;
  rowsRead: number;
  valid: number;
  /** Rows that failed the local checks (values, or an id another row of the file has). */
  invalid: number;
  sent: number;
  /** Cost line items the server says it created. */
  accepted: number;
  /** Rows the server says it skipped (rows it had, or refused). */
  skipped: number;
  /** Rows not sent because they failed the checks (= invalid). */
  rejected: number;
  /** Rows this push delivered: stored, corrected, or held by the server from an earlier request. */
  delivered: number;
  /** Of those, corrections (an id delivered before with other values) the server applied. */
  corrected: number;
  /** Rows the ledger shows delivered with the same values: not sent again. */
  alreadyDelivered: number;
  /**
   * Rows sent again because an earlier request carrying them got no answer (a stop cut it, or its
   * answer was lost), which the server then skipped as rows it had: that request had delivered them.
   */
  deliveredBefore: number;
  /** Rows the server refused (named in its errors, or in a request it did not accept). */
  refused: number;
  /** The server's words for each request it refused whole (400), each once: often the reason every row failed (an unknown connection). */
  requestRefusals: string[];
  /** Of the rows refused, those in requests the server refused whole. */
  refusedWhole: number;
  /** Corrections the server did not apply (it keeps the first values it stored for an id). */
  notApplied: number;
  /** Corrections the server did not apply, settled by the user (`--settle-corrections`, now or before): not sent, not failures. */
  settled: number;
  /** Rows the server skipped without naming them, where what a skip means is not known. */
  unconfirmed: number;
  /** Files listing the rows not delivered, with the reason per row. */
  undeliveredFiles: string[];
  /** Valid rows whose ChargePeriodStart or ChargePeriodEnd has a time of day other than midnight UTC (sent as dates; warned). */
  offMidnight: number;
  /** Valid rows that share their key with other rows of their file: each a charge, with an id of its own. */
  sharedKey: number;
  /** Of the rows stored, those the ledger showed the server holding with these values (sent again by --force): stored in place of their id's row. */
  replacedHeld: number;
  batches: number;
  requests: number;
  serverErrors: number;
  ignoredColumns: Record<string, string[]>;
  /** `undelivered`: the server did not take every row sent, and --allow-undelivered was not given. */
  outcome: 'success' | 'invalid' | 'stopped' | 'undelivered';
}

/** What became of one answered request's rows, as ingest_batches.outcome records it (the summary's words). */
export interface BatchOutcome {
  delivered: number;
  refused: number;
  not_applied: number;
  settled: number;
  unconfirmed: number;
}

const NO_ROWS: BatchOutcome = { delivered: 0, refused: 0, not_applied: 0, settled: 0, unconfirmed: 0 };

/** The counts of `outcomes`, `settled` of the corrections not applied counted as settled. Pure. */
export function batchOutcome(outcomes: readonly RowOutcome[], settled: number): BatchOutcome {
  const count = (test: (o: RowOutcome) => boolean) => outcomes.filter(test).length;
  const notApplied = count((o) => !o.delivered && o.why === 'not-applied');
  return {
    delivered: count((o) => o.delivered),
    refused: count((o) => !o.delivered && o.why === 'refused'),
    not_applied: notApplied - settled,
    settled,
    unconfirmed: count((o) => !o.delivered && o.why === 'unconfirmed'),
  };
}

export interface PushDeps {
  options: PushOptions;
  reader: FileReader;
  logger: Logger;
  /** Needed unless dry-run. */
  client?: ApiClient;
  /** The warehouse holding the ledger; needed unless dry-run. */
  warehouse?: Warehouse;
  clock?: { now(): number };
  /**
   * The run's stop (SIGTERM, SIGINT), the one the client was made with: once aborted, the request in
   * flight is cut (recorded as unanswered, so the next push sends it again with the same ids), nothing
   * more is sent, and the push ends with outcome 'stopped'.
   */
  signal?: AbortSignal;
  /** Each row problem, as found. */
  onProblem?: (problem: RowProblem) => void;
}

/** The columns of a chunk of `validationSql`'s rows, in its order (seven when checking, eight when sending). */
type ValidationColumns = [unknown[], unknown[], unknown[], unknown[], unknown[], unknown[], unknown[], unknown[]];

/** A file's rows not delivered: file row and reason. */
type Undelivered = Map<number, string>;

interface PreparedFile {
  source: SourceFile;
  plan: ColumnPlan;
  /** Rows the local checks found sharing their own id with another row: never sent. */
  repeated: Set<number>;
  /** The ids of rows that share their key's id with others of the file, by file row: each a charge of its own. */
  groupIds: Map<number, string>;
  undelivered: Undelivered;
}

/**
 * The ledger key of a push, and the key costsync 0.1 gave the same push (its key's fingerprint where
 * the source's name now stands). Pure.
 */
export function pushKeys(parts: Record<string, unknown>, who: { source?: string | undefined; apiKey: string }): [string, string] {
  const hash = (value: unknown) => createHash('sha256').update(JSON.stringify(value)).digest('hex');
  const { base, ...rest } = parts;
  return [hash({ base, source: who.source ?? 'default', ...rest }), hash({ base, key: keyFingerprint(who.apiKey), ...rest })];
}

/** How many rows the warning about charge period times of day names. */
export const OFF_MIDNIGHT_EXAMPLES = 5;

/**
 * The one warning of a push whose charge period values have a time of day: how many rows, what is sent
 * instead, and the first few (`file:line Column "value"`). Pure.
 */
export function offMidnightLine(rows: number, examples: readonly string[]): string {
  const more = rows > examples.length ? `, and ${rows - examples.length} more` : '';
  return (
    `${rows} row(s) have a ChargePeriodStart or ChargePeriodEnd with a time of day other than midnight UTC, which the API's calendar dates cannot hold: ` +
    `ChargePeriodStart is sent as its UTC date, ChargePeriodEnd as the date of the next midnight: ${examples.join('; ')}${more}`
  );
}

/** File row to line: CSV has a header line, JSON Lines one object a line, Parquet no lines. Pure. */
export function lineOf(format: SourceFile['format'], row: number): number | null {
  return format === 'csv' ? row + 1 : format === 'jsonl' ? row : null;
}

/** A row's place in a file, for messages: `line 12` or `row 12`. Pure. */
function placeOf(format: SourceFile['format'], row: number): string {
  const line = lineOf(format, row);
  return line === null ? `row ${row}` : `line ${line}`;
}

/** The rows of a request as a place in their file, as the checks name rows: `costs.csv lines 20-21` (or `rows` where the format has no lines). Pure. */
export function spanOf(source: Pick<SourceFile, 'path' | 'format'>, rows: readonly number[]): string {
  const [first, last] = [rows[0]!, rows.at(-1)!].map((r) => lineOf(source.format, r) ?? r);
  return `${source.path} ${source.format === 'parquet' ? 'rows' : 'lines'} ${first}-${last}`;
}

/** Splits `_problems` (joined by chr(31), each "Column: reason") into column and reason. Pure. */
export function splitProblems(text: string): { column: string; reason: string }[] {
  return text.split('\u001f').map((p) => {
    const at = p.indexOf(': ');
    return at < 0 ? { column: '', reason: p } : { column: p.slice(0, at), reason: p.slice(at + 2) };
  });
}

/**
 * A row's line-item id under the content rule: a hash of the row's content and of how many
 * identical rows came before it in the file, so identical charges stay separate rows and the same
 * file always gives the same ids. Pure.
 */
export function contentId(json: string, occurrence: number): string {
  const h = createHash('sha256').update(json);
  if (occurrence > 1) h.update(`#${occurrence}`);
  return `costsync-${h.digest('hex').slice(0, 32)}`;
}

/** Counts repeats of row contents within a file; memory is 16 bytes a row. */
class OccurrenceCounter {
  private readonly seen = new HashSet52();
  private readonly repeats = new Map<number, number>();

  next(json: string): number {
    const h = hash52(json);
    if (this.seen.add(h)) return 1;
    const n = (this.repeats.get(h) ?? 1) + 1;
    this.repeats.set(h, n);
    return n;
  }
}

/** Adds the id member to a row's JSON object text. Pure. */
export function withId(json: string, idColumn: string, id: string): string {
  return `${json.slice(0, -1)}${json.length > 2 ? ',' : ''}"${idColumn}":${JSON.stringify(id)}}`;
}

/** Where the rows of `input` not delivered are written: `<name>.undelivered.<ext>` beside it, or in `dir`. Pure. */
export function undeliveredPath(input: string, format: SourceFile['format'], dir: string | null): string {
  const name = basename(input)
    .replace(/\.(gz|zst)$/i, '')
    .replace(/\.[^.]*$/, '')
    // A list pushed again is listed in its own place: it shrinks as its rows are delivered, and goes with the last.
    .replace(/\.undelivered$/, '');
  return join(dir ?? dirname(input), `${name}.undelivered.${format}`);
}

/** The one line naming rows of a file that share their own id, and the fix. `places` are the other rows' places (`line 3`). Pure. */
export function repeatedIdReason(places: readonly string[], vendor: string): string {
  const others = places.length > 3 ? `${places.slice(0, 3).join(', ')} and ${places.length - 3} more` : places.join(', ');
  return `the same ${extensionColumns(vendor).lineItemId} as ${others}: the server keeps one row per id, so neither is sent; give each row its own id`;
}

async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Is this a refusal of the batch's size (so a smaller batch would pass)? */
function isTooLarge(error: unknown): boolean {
  return (
    error instanceof ApiError &&
    (error.statusCode === 413 ||
      (error.statusCode === 400 && /\b(rows|body|too large|at most|exceeds)\b/i.test(error.message) && !/connection/i.test(error.message)))
  );
}

/**
 * The identity rule of this push: `--key-columns` when given, else the one the connection's ledger
 * records (a connection an earlier costsync pushed to without one keeps that costsync's content ids),
 * else the default key. Warned when it changes the rule rows were delivered under; `record` says the
 * ledger must be told before anything is sent.
 */
async function identityRule(deps: PushDeps, key: string): Promise<{ rule: IdentityRule; record: boolean }> {
  const { options, logger, warehouse } = deps;
  const asked: IdentityRule | null = options.keyColumns === null ? null : { kind: 'key', columns: options.keyColumns };
  const fresh: IdentityRule = asked ?? { kind: 'key', columns: defaultKeyColumns(options.vendor) };
  if (options.dryRun || warehouse === undefined) return { rule: fresh, record: false };
  const [row] = await warehouse.query<{ rule: string | null; earlier_batches: number; delivered_rows: number }>('push/identity_get', [
    key,
    options.connectionId,
    options.source ?? 'default',
  ]);
  const legacy = row!.rule === null && row!.earlier_batches > 0;
  const recorded: IdentityRule | null = row!.rule !== null ? parseRule(row!.rule) : legacy ? { kind: 'content' } : null;
  const rule = asked ?? recorded ?? fresh;
  const changed = recorded !== null && ruleText(rule) !== ruleText(recorded);
  if (changed && (legacy || row!.delivered_rows > 0)) {
    const what = `connection ${options.connectionId}: its ledger identifies rows by ${describeRule(recorded, options.vendor)}; --key-columns would change that to ${describeRule(rule, options.vendor)}`;
    const consequence = `rows pushed before without an id of their own (${legacy ? 'by an earlier costsync' : `${row!.delivered_rows} delivered`}) would get new ids, so pushing them again stores them again beside the old ones`;
    if (!options.rekey)
      throw new ConfigError(
        `${what}: ${consequence}.`,
        `Leave --key-columns out to keep the rule (rows that share an identity under it need their own ids), or pass --rekey too to change it for good, pushing only rows not pushed before.`,
      );
    logger.warn(`${what}, as --rekey asks: ${consequence}; the connection keeps the new rule from now on.`);
  } else if (legacy && !changed) {
    logger.warn(
      `connection ${options.connectionId}: an earlier costsync pushed to it identifying rows by their whole content; kept, so those rows are not sent again as new ones. ` +
        'Under it a re-export with other columns, column order or values pushes its rows again; to identify rows by their key instead, pass --key-columns default --rekey once (rows pushed before would then be stored again if pushed again).',
    );
  }
  return { rule, record: row!.rule === null || changed };
}

/** A push's summary before it has read anything. */
export function emptySummary(pushId: string): PushSummary {
  return {
    pushId,
    version: '1',
    identity: '',
    rowsRead: 0,
    valid: 0,
    invalid: 0,
    sent: 0,
    accepted: 0,
    skipped: 0,
    rejected: 0,
    delivered: 0,
    corrected: 0,
    alreadyDelivered: 0,
    deliveredBefore: 0,
    refused: 0,
    notApplied: 0,
    settled: 0,
    unconfirmed: 0,
    requestRefusals: [],
    refusedWhole: 0,
    undeliveredFiles: [],
    offMidnight: 0,
    sharedKey: 0,
    replacedHeld: 0,
    batches: 0,
    requests: 0,
    serverErrors: 0,
    ignoredColumns: {},
    outcome: 'success',
  };
}

export async function runPush(deps: PushDeps): Promise<PushSummary> {
  const { options, reader, logger } = deps;
  const clock = deps.clock ?? { now: () => Date.now() };
  const pushId = newRunId(clock.now());
  const idColumn = extensionColumns(options.vendor).lineItemId;
  const summary = emptySummary(pushId);

  // 1. Every file's columns, before reading any row: a missing column fails fast.
  const files: PreparedFile[] = [];
  const used = new Set<string>([idColumn]);
  for (const path of options.files) {
    const source = await reader.describe(path);
    const plan = planColumns(
      path,
      source.columns.map((c) => c.name).filter((c) => !(UNDELIVERED_COLUMNS as readonly string[]).includes(c)),
      options.mapping,
      options.vendor,
    );
    if (!plan.targets.some((t) => t.name === 'EffectiveCost')) {
      // EffectiveCost defaults to BilledCost: sent explicitly, so the figure is the one we checked.
      const billed = plan.targets.find((t) => t.name === 'BilledCost')!;
      plan.targets.push({ name: 'EffectiveCost', kind: 'number', from: billed.from });
    }
    for (const t of plan.targets) used.add(t.name);
    if (plan.ignored.length > 0) {
      summary.ignoredColumns[path] = plan.ignored;
      logger.warn(`${path}: column(s) ${plan.ignored.join(', ')} are not FOCUS columns and are not sent; map them with --map to send them`);
    }
    files.push({ source, plan, repeated: new Set(), groupIds: new Map(), undelivered: new Map() });
  }
  summary.version = options.version ?? lowestVersion(used, options.vendor);
  const key = ledgerKey({
    baseUrl: options.baseUrl,
    source: options.source ?? 'default',
    connectionId: options.connectionId,
    vendor: options.vendor,
  });
  const { rule, record: recordRule } = await identityRule(deps, key);
  summary.identity = describeRule(rule, options.vendor);
  const identityOf = (plan: ColumnPlan): RowIdentity => ({
    ownIdColumn: plan.ownIdColumn,
    keyColumns: rule.kind === 'key' ? rule.columns : null,
  });

  // 2. Check every row of every file; nothing is sent until all are checked. A parallel count
  // first; only a file with problems (or a charge period with a time of day, for the first few) is read
  // again in order, to name their lines.
  const level = options.skipInvalid ? 'warn' : 'error';
  const offMidnight: string[] = [];
  for (const file of files) {
    if (deps.signal?.aborted) break;
    const { source, plan } = file;
    const validation = validationSql(source, plan.targets, REQUIRED_INGEST_COLUMNS, false, identityOf(plan));
    const [counts] = await reader.all<{
      rows: bigint | number;
      invalid: bigint | number;
      off_midnight: bigint | number;
      repeated: bigint | number;
    }>(validationCountsSql(validation), source.path);
    summary.rowsRead += Number(counts!.rows);
    summary.invalid += Number(counts!.invalid);
    summary.offMidnight += Number(counts!.off_midnight);
    const invalid = Number(counts!.invalid) > 0;
    // Ids more than one row has: each such row is named, with the others.
    const repeatedIds =
      Number(counts!.repeated) > 0
        ? new Set((await reader.all<{ id: bigint }>(repeatedIdsSql(validation), source.path)).map((r) => BigInt(r.id)))
        : null;
    if (!invalid && repeatedIds === null && (Number(counts!.off_midnight) === 0 || offMidnight.length >= OFF_MIDNIGHT_EXAMPLES)) continue;
    const sharing = new Map<bigint, number[]>();
    const groups = new Map<string, GroupRow[]>();
    let row = 0;
    await reader.scan(validation, source.path, (columns, rows) => {
      const [problems, offs, ids, keyed, rowIds, values, orders] = columns as ValidationColumns;
      for (let i = 0; i < rows; i++) {
        row += 1;
        const text = problems[i];
        if (text === null || text === undefined) {
          const id = ids[i];
          if (repeatedIds !== null && typeof id === 'bigint' && repeatedIds.has(id)) {
            if (keyed[i] === true) {
              // Rows that share a key are as many charges: each gets an id of its own before it is sent.
              const keyId = String(rowIds[i]);
              const member = { row, values: String(values[i]), order: JSON.parse(String(orders[i])) as GroupRow['order'] };
              const group = groups.get(keyId);
              if (group === undefined) groups.set(keyId, [member]);
              else group.push(member);
            } else {
              const list = sharing.get(id) ?? [];
              list.push(row);
              sharing.set(id, list);
            }
          }
          const off = offs[i];
          if (off !== null && off !== undefined && offMidnight.length < OFF_MIDNIGHT_EXAMPLES)
            offMidnight.push(`${source.path}:${lineOf(source.format, row) ?? `row ${row}`} ${String(off)}`);
          continue;
        }
        const found = splitProblems(String(text));
        file.undelivered.set(row, `failed the checks: ${found.map((p) => (p.column ? `${p.column}: ${p.reason}` : p.reason)).join('; ')}`);
        for (const { column, reason } of found) {
          deps.onProblem?.({ file: source.path, row, line: lineOf(source.format, row), column, reason, level });
        }
      }
      if (deps.signal?.aborted) return false;
      // Without problems to name, the first few examples are all the read is for.
      return invalid || repeatedIds !== null || offMidnight.length < OFF_MIDNIGHT_EXAMPLES;
    });
    for (const rowsOfId of sharing.values()) {
      for (const at of rowsOfId) {
        const places = rowsOfId.filter((r) => r !== at).map((r) => placeOf(source.format, r));
        const reason = repeatedIdReason(places, options.vendor);
        file.repeated.add(at);
        file.undelivered.set(at, `failed the checks: ${reason}`);
        deps.onProblem?.({ file: source.path, row: at, line: lineOf(source.format, at), column: '', reason, level });
      }
    }
    summary.invalid += file.repeated.size;
    for (const [keyId, members] of groups) for (const [at, id] of assignGroupIds(keyId, members)) file.groupIds.set(at, id);
    summary.sharedKey += file.groupIds.size;
  }
  summary.valid = summary.rowsRead - summary.invalid;
  summary.rejected = summary.invalid;
  if (summary.sharedKey > 0)
    logger.info(
      `${summary.sharedKey} valid row(s) share their key (${summary.identity}) with other rows of their file: each is a charge of its own, told apart by its values (docs/focus-and-push.md, "What identifies a row")`,
      { rows: summary.sharedKey },
    );
  if (deps.signal?.aborted) {
    summary.outcome = 'stopped';
    return summary;
  }
  if (summary.invalid > 0 && !options.skipInvalid) {
    summary.outcome = 'invalid';
    if (!options.dryRun) await writeUndelivered(files, deps, summary);
    return summary;
  }
  if (summary.offMidnight > 0) logger.warn(offMidnightLine(summary.offMidnight, offMidnight), { rows: summary.offMidnight });
  if (options.dryRun) return summary;

  // 3. Send.
  const { client, warehouse } = deps;
  if (!client || !warehouse) throw new InternalError('runPush: a client and a warehouse are needed to send (only a dry run does without).');
  const lock = acquireLock(dbLockPath(warehouse.path), `costsync push (${pushId})`, new Date(clock.now()));
  try {
    if (recordRule)
      await warehouse.transaction(() =>
        warehouse.run('push/identity_set', [
          key,
          options.connectionId,
          options.source ?? 'default',
          ruleText(rule),
          pushId,
          new Date(clock.now()).toISOString(),
        ]),
      );
    for (const file of files) {
      if (deps.signal?.aborted || (await sendFile(file, deps, summary, { idColumn, key, identity: identityOf(file.plan) })) === 'stopped') {
        summary.outcome = 'stopped';
        break;
      }
    }
  } finally {
    lock.release();
  }
  if (summary.outcome === 'stopped') return summary;
  await writeUndelivered(files, deps, summary);
  if (summary.refused + summary.notApplied + summary.unconfirmed > 0 && !options.allowUndelivered) summary.outcome = 'undelivered';
  return summary;
}

/** How many row ids one ledger lookup names. */
const LOOKUP_IDS = 10_000;

/** What the ledger holds of some row ids of one connection. */
async function ledgerEntries(warehouse: Warehouse, key: string, ids: readonly string[]): Promise<Map<string, LedgerEntry>> {
  const entries = new Map<string, LedgerEntry>();
  for (let at = 0; at < ids.length; at += LOOKUP_IDS) {
    const rows = await warehouse.query<{ row_id: string; held_md5: string | null; pending_md5: string | null; settled_md5: string | null }>(
      'push/rows_lookup',
      [key, JSON.stringify(ids.slice(at, at + LOOKUP_IDS))],
    );
    for (const r of rows) entries.set(r.row_id, { held: r.held_md5, pending: r.pending_md5, settled: r.settled_md5 });
  }
  return entries;
}

/** The hashes of the ids more than one valid row of a file has. */
function repeatedIdsSql(validation: string): string {
  return `SELECT _row_hash AS id FROM (${validation}) WHERE _problems IS NULL AND _row_hash IS NOT NULL GROUP BY _row_hash HAVING count(*) > 1`;
}

/**
 * Writes each file's rows not delivered, in its format, with `costsync_row` and `costsync_reason`;
 * removes the file an earlier push left for an input whose rows are now all delivered.
 */
async function writeUndelivered(files: readonly PreparedFile[], deps: PushDeps, summary: PushSummary): Promise<void> {
  for (const { source, undelivered } of files) {
    const path = undeliveredPath(source.path, source.format, deps.options.undeliveredDir);
    if (undelivered.size === 0) {
      if (existsSync(path)) {
        rmSync(path, { force: true });
        deps.logger.info(`${path}: removed; every row of ${source.path} is delivered now`);
      }
      continue;
    }
    const rows = [...undelivered].sort(([a], [b]) => a - b).map(([row, reason]) => ({ row, reason }));
    await deps.reader.writeRows(source, rows, path);
    summary.undeliveredFiles.push(path);
  }
}

interface Pending {
  rows: string[];
  fileRows: number[];
  ids: string[];
  values: string[];
  /** The pending values the ledger had for each row before this push (a correction keeps them). */
  before: (string | null)[];
  /** Whether the ledger showed the server holding these very values (a row `--force` sends again). */
  held: boolean[];
}

const emptyPending = (): Pending => ({ rows: [], fileRows: [], ids: [], values: [], before: [], held: [] });

async function sendFile(
  file: PreparedFile,
  deps: PushDeps,
  summary: PushSummary,
  context: { idColumn: string; key: string; identity: RowIdentity },
): Promise<'done' | 'stopped'> {
  const { options, logger } = deps;
  const client = deps.client!;
  const warehouse = deps.warehouse!;
  const clock = deps.clock ?? { now: () => Date.now() };
  const { source, plan } = file;
  const { idColumn, key } = context;
  const fileSha = await sha256File(source.path);
  // Batches of an earlier costsync (before push_rows) go on by row range: the same file content,
  // mapping and connection give the same rows. costsync 0.1 keyed by the key: read those too.
  const [pushKey, legacyKey] = pushKeys(
    {
      base: options.baseUrl,
      connection: options.connectionId,
      fileSha,
      targets: plan.targets,
      vendor: options.vendor,
      version: summary.version,
      format: options.format,
      skipInvalid: options.skipInvalid,
    },
    options,
  );
  const [done] = await warehouse.query<{ last_row: number; batches: number }>('push/ledger_resume', [pushKey, legacyKey]);
  const resumeAfter = options.force ? 0 : done!.last_row;
  if (resumeAfter > 0)
    logger.info(
      `${source.path}: rows up to ${resumeAfter} were sent by an earlier costsync (${done!.batches} batch(es) in ingest_batches); going on from there`,
    );
  // Requests an earlier costsync recorded as cut by a stop, before push_rows: their rows may be held.
  const unanswered = (
    await warehouse.query<{ first_row: number | bigint; last_row: number | bigint }>('push/ledger_unanswered', [pushKey, legacyKey])
  ).map((r) => [Number(r.first_row), Number(r.last_row)] as const);
  const wasCut = (row: number) => unanswered.some(([first, last]) => row >= first && row <= last);

  const head = `{${options.format === null ? `"format":${JSON.stringify(`${options.vendor}.focus`)},` : `"format":${JSON.stringify(options.format)},`}"version":${JSON.stringify(summary.version)},"rows":[`;
  const occurrences = new OccurrenceCounter();
  let progressAt = clock.now();
  const waiting: Record<RowClass, Pending> = { new: emptyPending(), resend: emptyPending(), correction: emptyPending() };
  const now = () => new Date(clock.now()).toISOString();

  /**
   * One request's ledger rows, in one transaction: its answer (null: cut before it), what became of its
   * rows (the counts status shows), each row's values held or pending, and the corrections settled now.
   */
  const record = (
    batch: Pending,
    result: IngestResult | null,
    held: (string | null)[],
    pending: (string | null)[],
    answer: { response?: unknown; outcome?: BatchOutcome; settled?: number[] } = {},
  ) =>
    warehouse.transaction(async () => {
      await warehouse.run('push/ledger_record', [
        summary.pushId,
        pushKey,
        'focus',
        options.connectionId,
        source.path,
        fileSha,
        batch.fileRows[0]!,
        batch.fileRows.at(-1)!,
        batch.rows.length,
        result?.batch_id || null,
        result?.accepted ?? null,
        result?.row_count ?? null,
        result?.cost_line_item_count ?? null,
        result?.skipped ?? null,
        result === null ? null : JSON.stringify(result.errors),
        result === null ? null : JSON.stringify(answer.response ?? result),
        now(),
        options.source ?? 'default',
        true,
        answer.outcome === undefined ? null : JSON.stringify(answer.outcome),
      ]);
      await warehouse.run('push/rows_record', [
        key,
        JSON.stringify(batch.ids),
        JSON.stringify(held),
        JSON.stringify(pending),
        summary.pushId,
        now(),
      ]);
      const settled = answer.settled ?? [];
      if (settled.length > 0) {
        await warehouse.run('push/rows_settle', [
          key,
          JSON.stringify(settled.map((i) => batch.ids[i])),
          JSON.stringify(settled.map((i) => batch.values[i])),
          summary.pushId,
          now(),
        ]);
      }
    });

  /** A line every PROGRESS_EVERY_MS of a long push, so one running for minutes is never a silent one. */
  const progress = () => {
    if (clock.now() - progressAt < PROGRESS_EVERY_MS) return;
    progressAt = clock.now();
    logger.info(
      `${source.path}: ${summary.delivered} row(s) delivered so far, ${summary.alreadyDelivered} delivered before, of ${summary.valid} valid; ${summary.requests} request(s)`,
    );
  };

  const settle = async (cls: RowClass, batch: Pending, result: IngestResult, retried: boolean) => {
    const outcomes = settleBatch(cls, batch.rows.length, result, retried);
    const settledNow = options.settleCorrections ? outcomes.flatMap((o, i) => (!o.delivered && o.why === 'not-applied' ? [i] : [])) : [];
    // A row not delivered from a request that may have stored it (a resend, or an attempt whose answer was lost) stays pending.
    const pending = cls === 'resend' || cls === 'correction' || retried ? mayHold(cls, batch) : batch.ids.map(() => null);
    const outcome = batchOutcome(outcomes, settledNow.length);
    await record(
      batch,
      result,
      outcomes.map((o, i) => (o.delivered ? batch.values[i]! : null)),
      outcomes.map((o, i) => (o.delivered ? null : pending[i]!)),
      { outcome, settled: settledNow },
    );
    // The summary adds what ingest_batches records, so the push and status count alike by construction.
    summary.delivered += outcome.delivered;
    summary.refused += outcome.refused;
    summary.notApplied += outcome.not_applied;
    summary.settled += outcome.settled;
    summary.unconfirmed += outcome.unconfirmed;
    summary.batches += 1;
    summary.sent += batch.rows.length;
    summary.accepted += result.cost_line_item_count;
    progress();
    summary.skipped += result.skipped;
    summary.serverErrors += result.errors.length;
    const range = spanOf(source, batch.fileRows);
    const counts = new Map<string, number>();
    outcomes.forEach((o: RowOutcome, i) => {
      if (o.delivered) {
        if (o.how === 'corrected') summary.corrected += 1;
        if (o.how === 'held') summary.deliveredBefore += 1;
        // A server that keeps the last copy stores a row sent again in place of its id's: counted apart, as no new charge.
        if (o.how === 'stored' && batch.held[i] === true) summary.replacedHeld += 1;
        return;
      }
      if (o.why === 'not-applied' && options.settleCorrections) return;
      file.undelivered.set(batch.fileRows[i]!, o.reason);
      if (o.why === 'refused')
        logger.warn(`${source.path} ${placeOf(source.format, batch.fileRows[i]!)}: ${o.reason}`, { batchId: result.batch_id });
      else counts.set(o.reason, (counts.get(o.reason) ?? 0) + 1);
    });
    for (const [reason, n] of counts) logger.warn(`${range}: ${n} row(s) not delivered: ${reason}`, { batchId: result.batch_id });
    if (settledNow.length > 0) {
      logger.info(
        `${range}: ${settledNow.length} correction(s) the server did not apply recorded as settled, as --settle-corrections asks; pushed again with these values they count as delivered`,
      );
    }
    const held = outcomes.filter((o) => o.delivered && o.how === 'held').length;
    if (held > 0)
      logger.info(`${range}: the server skipped ${held} row(s) it already held with these values from an earlier request: delivered`, {
        batchId: result.batch_id,
      });
  };

  /**
   * What a request that gets no answer (a stop, a kill) may have stored: its rows' values, recorded as
   * pending before it is sent, so the next push takes a skip of them as delivered. Not a correction's:
   * a skip of one means the server kept the values it had, which its pending values (if any) may still be.
   */
  const mayHold = (cls: RowClass, batch: Pending) => batch.values.map((v, i) => (cls === 'correction' ? batch.before[i]! : v));

  /** Sends rows in one request (or halves, if the server finds it too large); false when the stop cut it. */
  const send = async (cls: RowClass, batch: Pending): Promise<boolean> => {
    summary.requests += 1;
    await warehouse.transaction(() =>
      warehouse.run('push/rows_record', [
        key,
        JSON.stringify(batch.ids),
        JSON.stringify(batch.ids.map(() => null)),
        JSON.stringify(mayHold(cls, batch)),
        summary.pushId,
        now(),
      ]),
    );
    const retriesBefore = client.stats?.retries ?? 0;
    let result: IngestResult;
    try {
      result = await client.ingestFocus(options.connectionId, `${head}${batch.rows.join(',')}]}`);
    } catch (error) {
      if (deps.signal?.aborted || (error instanceof ApiError && error.code === ClientErrorCode.ABORTED)) {
        // Sent, perhaps stored, never answered: the next push sends it again with the same ids, and a skip then means delivered.
        await record(
          batch,
          null,
          batch.ids.map(() => null),
          mayHold(cls, batch),
        );
        logger.warn(
          `${spanOf(source, batch.fileRows)}: the stop cut their request before its answer; whether the server stored them is unknown, so the next push sends them again with the same ids`,
        );
        return false;
      }
      if (isTooLarge(error) && batch.rows.length > 1) {
        const half = Math.ceil(batch.rows.length / 2);
        logger.warn(
          `${source.path}: the server refused ${batch.rows.length} rows in one request (${(error as Error).message}); sending halves`,
        );
        const part = (from: number, to?: number): Pending => ({
          rows: batch.rows.slice(from, to),
          fileRows: batch.fileRows.slice(from, to),
          ids: batch.ids.slice(from, to),
          values: batch.values.slice(from, to),
          before: batch.before.slice(from, to),
          held: batch.held.slice(from, to),
        });
        return (await send(cls, part(0, half))) && (await send(cls, part(half)));
      }
      if (error instanceof ApiError && error.statusCode === 400) {
        // The request refused as a whole (a server that refuses a request for one bad row, say): none of its rows is stored.
        await refuseAll(batch, error);
        return true;
      }
      throw error;
    }
    // Another attempt of this request was made (a lost answer, a 5xx): the server may hold its rows from it.
    await settle(cls, batch, result, (client.stats?.retries ?? 0) > retriesBefore);
    return true;
  };

  /** A request the server refused whole (400): recorded as answered, each of its rows refused with the server's words. */
  const refuseAll = async (batch: Pending, error: ApiError) => {
    const reason = `refused by the server with its whole request (${error.apiCode ?? 'HTTP 400'}): ${error.message}`;
    const none = batch.ids.map(() => null);
    const refused = {
      accepted: false,
      batch_id: '',
      row_count: batch.rows.length,
      cost_line_item_count: 0,
      skipped: batch.rows.length,
      errors: [error.message],
    };
    await record(batch, refused, none, none, {
      response: { status: 400, code: error.apiCode ?? null, message: error.message },
      outcome: { ...NO_ROWS, refused: batch.rows.length },
    });
    summary.batches += 1;
    summary.sent += batch.rows.length;
    summary.refused += batch.rows.length;
    summary.refusedWhole += batch.rows.length;
    if (!summary.requestRefusals.includes(error.message)) summary.requestRefusals.push(error.message);
    for (const row of batch.fileRows) file.undelivered.set(row, reason);
    logger.warn(`${spanOf(source, batch.fileRows)}: ${batch.rows.length} row(s) not delivered: ${reason}`);
  };

  const flush = async (cls: RowClass, full: boolean): Promise<boolean> => {
    const batch = waiting[cls];
    if (batch.rows.length === 0 || (full && batch.rows.length < options.batchSize)) return true;
    waiting[cls] = emptyPending();
    return send(cls, batch);
  };

  let row = 0;
  let stopped = false;
  await deps.reader.scan(
    validationSql(source, plan.targets, REQUIRED_INGEST_COLUMNS, true, context.identity),
    source.path,
    async (columns, rows) => {
      const [problems, , , , rowIds, values, json, idJson] = columns as ValidationColumns;
      const chunk: { row: number; id: string; json: string; values: string }[] = [];
      for (let i = 0; i < rows; i++) {
        row += 1;
        if (problems[i] !== null) continue;
        let id = file.groupIds.get(row) ?? (rowIds[i] as string | null);
        if (id === null) {
          // The content rule: every valid row counts, sent or not, so ids do not shift on resume.
          const content = String(idJson[i]);
          id = contentId(content, occurrences.next(content));
        }
        if (file.repeated.has(row)) continue;
        if (row <= resumeAfter) {
          summary.alreadyDelivered += 1;
          continue;
        }
        chunk.push({ row, id, json: String(json[i]), values: String(values[i]) });
      }
      if (chunk.length === 0) return true;
      const ledger = await ledgerEntries(
        warehouse,
        key,
        chunk.map((c) => c.id),
      );
      for (const c of chunk) {
        const entry = ledger.get(c.id) ?? (wasCut(c.row) ? { held: null, pending: c.values } : undefined);
        const cls = classifyRow(c.values, entry, options.force);
        if (cls === 'delivered') {
          summary.alreadyDelivered += 1;
          continue;
        }
        if (cls === 'settled') {
          summary.settled += 1;
          continue;
        }
        const batch = waiting[cls];
        batch.rows.push(withId(c.json, idColumn, c.id));
        batch.fileRows.push(c.row);
        batch.ids.push(c.id);
        batch.values.push(c.values);
        batch.before.push(entry?.pending ?? null);
        batch.held.push(entry?.held === c.values);
        if (!(await flush(cls, true)) || deps.signal?.aborted) {
          stopped = true;
          return false;
        }
      }
      return true;
    },
  );
  if (stopped || deps.signal?.aborted) return 'stopped';
  for (const cls of ['new', 'resend', 'correction'] as const) if (!(await flush(cls, false))) return 'stopped';
  return 'done';
}

/** The exit code for a finished push. */
export function pushExitCode(summary: PushSummary): ExitCode {
  if (summary.outcome === 'invalid' || summary.outcome === 'undelivered') return ExitCode.FAILED;
  if (summary.outcome === 'stopped') return ExitCode.STOPPED_EARLY;
  return ExitCode.OK;
}
