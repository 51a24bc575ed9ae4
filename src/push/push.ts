/**
 * `costsync push`: checks FOCUS files row by row, then sends the valid rows in batches through the
 * same client as `sync`, recording each answered batch in `ingest_batches`. Every row carries a
 * line-item id (the file's own, or a hash of its content), so a re-sent batch creates nothing twice;
 * the ledger lets an interrupted push go on from the first batch not yet answered.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import type { ApiClient } from '../api/client.js';
import type { IngestResult, IngestVersion } from '../api/types.js';
import { ApiError, ClientErrorCode, ExitCode, InternalError } from '../errors.js';
import { keyFingerprint } from '../fingerprint.js';
import { REQUIRED_INGEST_COLUMNS, extensionColumns } from '../focus/rules.js';
import type { Logger } from '../log.js';
import { newRunId } from '../run-id.js';
import { acquireLock, dbLockPath } from '../state/lock.js';
import type { Warehouse } from '../storage/duckdb.js';
import { HashSet52, hash52 } from '../sync/id-set.js';
import { lowestVersion, planColumns, type ColumnMapping, type ColumnPlan } from './columns.js';
import { validationCountsSql, validationSql, type FileReader, type SourceFile } from './reader.js';

export const DEFAULT_BATCH_SIZE = 500;

export interface PushOptions {
  connectionId: string;
  files: string[];
  mapping: ColumnMapping;
  /** `--version`; null picks the lowest that covers the columns used. */
  version: IngestVersion | null;
  /** `--format`; null sends `<vendor>.focus`. */
  format: string | null;
  vendor: string;
  batchSize: number;
  dryRun: boolean;
  skipInvalid: boolean;
  /** Send every batch again, even those the ledger says were answered. */
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
  rowsRead: number;
  valid: number;
  invalid: number;
  sent: number;
  /** Cost line items the server created. */
  accepted: number;
  /** Rows the server skipped (duplicates of rows it had, or rows it refused). */
  skipped: number;
  /** Rows not sent because they failed the checks. */
  rejected: number;
  /** Rows sent in earlier runs (per the ledger) and not sent again. */
  alreadySent: number;
  /**
   * Rows sent again because an earlier push's request carrying them was cut by a stop before its
   * answer, which the server then skipped as rows it had: that request had delivered them.
   */
  deliveredBefore: number;
  /** Valid rows whose ChargePeriodStart or ChargePeriodEnd has a time of day other than midnight UTC (sent as dates; warned). */
  offMidnight: number;
  batches: number;
  requests: number;
  serverErrors: number;
  ignoredColumns: Record<string, string[]>;
  outcome: 'success' | 'invalid' | 'stopped';
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

interface PreparedFile {
  source: SourceFile;
  plan: ColumnPlan;
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

/** Splits `_problems` (joined by chr(31), each "Column: reason") into column and reason. Pure. */
export function splitProblems(text: string): { column: string; reason: string }[] {
  return text.split('\u001f').map((p) => {
    const at = p.indexOf(': ');
    return at < 0 ? { column: '', reason: p } : { column: p.slice(0, at), reason: p.slice(at + 2) };
  });
}

/**
 * A row's line-item id when the file has none: a hash of the row's content and of how many
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

/**
 * How many rows of an answered request the server skipped as rows it already had from a request of
 * this push that a stop cut before its answer (the same rows, so the same ids): delivered then. The
 * server does not say which rows it skipped, so: the skipped rows beyond those its errors refuse, and
 * at most the cut rows not refused (an error that names no row may be any row's). None when the
 * request was not accepted, whose rows were skipped with it. Pure.
 */
export function skippedAsDelivered(result: IngestResult, fileRows: readonly number[], wasCut: (row: number) => boolean): number {
  if (!result.accepted || result.skipped <= 0) return 0;
  const named = new Set<number>();
  let unnamed = 0;
  for (const e of result.errors) {
    const at = (e as { row?: unknown } | null)?.row;
    if (typeof at === 'number' && Number.isInteger(at) && at >= 0 && at < fileRows.length) named.add(at);
    else unnamed += 1;
  }
  const cut = fileRows.filter((row, i) => wasCut(row) && !named.has(i)).length - unnamed;
  return Math.max(0, Math.min(cut, result.skipped - named.size - unnamed));
}

/** Adds the id member to a row's JSON object text. Pure. */
export function withId(json: string, idColumn: string, id: string): string {
  return `${json.slice(0, -1)}${json.length > 2 ? ',' : ''}"${idColumn}":${JSON.stringify(id)}}`;
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

export async function runPush(deps: PushDeps): Promise<PushSummary> {
  const { options, reader, logger } = deps;
  const clock = deps.clock ?? { now: () => Date.now() };
  const pushId = newRunId(clock.now());
  const idColumn = extensionColumns(options.vendor).lineItemId;
  const summary: PushSummary = {
    pushId,
    version: '1',
    rowsRead: 0,
    valid: 0,
    invalid: 0,
    sent: 0,
    accepted: 0,
    skipped: 0,
    rejected: 0,
    alreadySent: 0,
    deliveredBefore: 0,
    offMidnight: 0,
    batches: 0,
    requests: 0,
    serverErrors: 0,
    ignoredColumns: {},
    outcome: 'success',
  };

  // 1. Every file's columns, before reading any row: a missing column fails fast.
  const files: PreparedFile[] = [];
  const used = new Set<string>([idColumn]);
  for (const path of options.files) {
    const source = await reader.describe(path);
    const plan = planColumns(
      path,
      source.columns.map((c) => c.name),
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
    files.push({ source, plan });
  }
  summary.version = options.version ?? lowestVersion(used, options.vendor);

  // 2. Check every row of every file; nothing is sent until all are checked. A parallel count
  // first; only a file with problems (or a charge period with a time of day, for the first few) is read
  // again in order, to name their lines.
  const level = options.skipInvalid ? 'warn' : 'error';
  const offMidnight: string[] = [];
  for (const { source, plan } of files) {
    if (deps.signal?.aborted) break;
    const validation = validationSql(source, plan.targets, REQUIRED_INGEST_COLUMNS, false);
    const [counts] = await reader.all<{ rows: bigint | number; invalid: bigint | number; off_midnight: bigint | number }>(
      validationCountsSql(validation),
      source.path,
    );
    summary.rowsRead += Number(counts!.rows);
    summary.invalid += Number(counts!.invalid);
    summary.offMidnight += Number(counts!.off_midnight);
    const invalid = Number(counts!.invalid) > 0;
    if (!invalid && (Number(counts!.off_midnight) === 0 || offMidnight.length >= OFF_MIDNIGHT_EXAMPLES)) continue;
    let row = 0;
    await reader.scan(validation, source.path, (columns, rows) => {
      const [problems, offs] = columns as [unknown[], unknown[]];
      for (let i = 0; i < rows; i++) {
        row += 1;
        const text = problems[i];
        if (text === null || text === undefined) {
          const off = offs[i];
          if (off !== null && off !== undefined && offMidnight.length < OFF_MIDNIGHT_EXAMPLES)
            offMidnight.push(`${source.path}:${lineOf(source.format, row) ?? `row ${row}`} ${String(off)}`);
          continue;
        }
        for (const { column, reason } of splitProblems(String(text))) {
          deps.onProblem?.({ file: source.path, row, line: lineOf(source.format, row), column, reason, level });
        }
      }
      if (deps.signal?.aborted) return false;
      // Without problems to name, the first few examples are all the read is for.
      return invalid || offMidnight.length < OFF_MIDNIGHT_EXAMPLES;
    });
  }
  summary.valid = summary.rowsRead - summary.invalid;
  summary.rejected = summary.invalid;
  if (deps.signal?.aborted) {
    summary.outcome = 'stopped';
    return summary;
  }
  if (summary.invalid > 0 && !options.skipInvalid) {
    summary.outcome = 'invalid';
    return summary;
  }
  if (summary.offMidnight > 0) logger.warn(offMidnightLine(summary.offMidnight, offMidnight), { rows: summary.offMidnight });
  if (options.dryRun) return summary;

  // 3. Send.
  const { client, warehouse } = deps;
  if (!client || !warehouse) throw new InternalError('runPush: a client and a warehouse are needed to send (only a dry run does without).');
  const lock = acquireLock(dbLockPath(warehouse.path), `costsync push (${pushId})`, new Date(clock.now()));
  try {
    for (const file of files) {
      if (deps.signal?.aborted) {
        summary.outcome = 'stopped';
        break;
      }
      if ((await sendFile(file, deps, summary, idColumn)) === 'stopped') {
        summary.outcome = 'stopped';
        break;
      }
    }
  } finally {
    lock.release();
  }
  return summary;
}

async function sendFile(file: PreparedFile, deps: PushDeps, summary: PushSummary, idColumn: string): Promise<'done' | 'stopped'> {
  const { options, logger } = deps;
  const client = deps.client!;
  const warehouse = deps.warehouse!;
  const clock = deps.clock ?? { now: () => Date.now() };
  const { source, plan } = file;
  const fileSha = await sha256File(source.path);
  // Batches are comparable across runs when everything that shapes the rows is the same: the same
  // source, not the same key, so a rotated key goes on. costsync 0.1 keyed by the key: read those too.
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
      `${source.path}: rows up to ${resumeAfter} were sent before (${done!.batches} batch(es) in ingest_batches); going on from there`,
    );

  // Requests of this push cut by a stop before their answer: the server may hold their rows already.
  const unanswered = (
    await warehouse.query<{ first_row: number | bigint; last_row: number | bigint }>('push/ledger_unanswered', [pushKey, legacyKey])
  ).map((r) => [Number(r.first_row), Number(r.last_row)] as const);
  const wasCut = (row: number) => unanswered.some(([first, last]) => row >= first && row <= last);

  const head = `{${options.format === null ? `"format":${JSON.stringify(`${options.vendor}.focus`)},` : `"format":${JSON.stringify(options.format)},`}"version":${JSON.stringify(summary.version)},"rows":[`;
  const occurrences = new OccurrenceCounter();
  let batch: { rows: string[]; fileRows: number[] } = { rows: [], fileRows: [] };
  let stopped = false;

  /** A batch's ledger row: its answer's fields, or nulls for a request the stop cut before its answer. */
  const ledgerRow = (rows: string[], fileRows: number[], result: IngestResult | null) =>
    warehouse.transaction(() =>
      warehouse.run('push/ledger_record', [
        summary.pushId,
        pushKey,
        'focus',
        options.connectionId,
        source.path,
        fileSha,
        fileRows[0]!,
        fileRows.at(-1)!,
        rows.length,
        result?.batch_id ?? null,
        result?.accepted ?? null,
        result?.row_count ?? null,
        result?.cost_line_item_count ?? null,
        result?.skipped ?? null,
        result === null ? null : JSON.stringify(result.errors),
        result === null ? null : JSON.stringify(result),
        new Date(clock.now()).toISOString(),
        options.source ?? 'default',
      ]),
    );

  const record = async (rows: string[], fileRows: number[], result: IngestResult) => {
    const delivered = skippedAsDelivered(result, fileRows, wasCut);
    await ledgerRow(rows, fileRows, result);
    summary.batches += 1;
    summary.sent += rows.length;
    summary.accepted += result.cost_line_item_count;
    summary.skipped += result.skipped - delivered;
    summary.deliveredBefore += delivered;
    summary.serverErrors += result.errors.length;
    if (delivered > 0)
      logger.info(
        `${source.path} rows ${fileRows[0]}-${fileRows.at(-1)}: the server skipped ${delivered} row(s) it already had from a request an earlier push sent and a stop cut before its answer: delivered then`,
        { batchId: result.batch_id },
      );
    for (const e of result.errors) {
      const at = typeof (e as { row?: unknown }).row === 'number' ? fileRows[(e as { row: number }).row] : undefined;
      logger.warn(`${source.path}${at !== undefined ? ` row ${at}` : ''}: the server refused a row: ${JSON.stringify(e)}`, {
        batchId: result.batch_id,
      });
    }
    if (!result.accepted) logger.warn(`${source.path} rows ${fileRows[0]}-${fileRows.at(-1)}: batch ${result.batch_id} was not accepted`);
  };

  /** A request the stop cut: sent, perhaps stored, never answered. Recorded so the next push sends it again and knows why its rows may be skipped. */
  const recordCut = async (rows: string[], fileRows: number[]) => {
    await ledgerRow(rows, fileRows, null);
    logger.warn(
      `${source.path} rows ${fileRows[0]}-${fileRows.at(-1)}: the stop cut their request before its answer; whether the server stored them is unknown, so the next push sends them again with the same ids`,
    );
  };

  /** Sends rows in one request (or halves, if the server finds it too large); false when the stop cut it. */
  const send = async (rows: string[], fileRows: number[]): Promise<boolean> => {
    summary.requests += 1;
    let result: IngestResult;
    try {
      result = await client.ingestFocus(options.connectionId, `${head}${rows.join(',')}]}`);
    } catch (error) {
      if (deps.signal?.aborted || (error instanceof ApiError && error.code === ClientErrorCode.ABORTED)) {
        await recordCut(rows, fileRows);
        return false;
      }
      if (isTooLarge(error) && rows.length > 1) {
        const half = Math.ceil(rows.length / 2);
        logger.warn(`${source.path}: the server refused ${rows.length} rows in one request (${(error as Error).message}); sending halves`);
        return (await send(rows.slice(0, half), fileRows.slice(0, half))) && (await send(rows.slice(half), fileRows.slice(half)));
      }
      throw error;
    }
    await record(rows, fileRows, result);
    return true;
  };

  let row = 0;
  await deps.reader.scan(
    validationSql(source, plan.targets, REQUIRED_INGEST_COLUMNS, true, plan.ownIdColumn),
    source.path,
    async (columns, rows) => {
      const [problems, , json, idJson, ownId] = columns as [unknown[], unknown[], unknown[], unknown[], unknown[] | undefined];
      for (let i = 0; i < rows; i++) {
        row += 1;
        if (problems[i] !== null) continue;
        let text = String(json[i]);
        // The file's own id when it has one; else the content hash (every row counts, sent or not, so ids do not shift on resume).
        if (plan.ownIdColumn === null || ownId?.[i] === null || ownId?.[i] === undefined) {
          const content = String(idJson[i]);
          text = withId(text, idColumn, contentId(content, occurrences.next(content)));
        }
        if (row <= resumeAfter) {
          summary.alreadySent += 1;
          continue;
        }
        batch.rows.push(text);
        batch.fileRows.push(row);
        if (batch.rows.length >= options.batchSize) {
          const full = batch;
          batch = { rows: [], fileRows: [] };
          if (!(await send(full.rows, full.fileRows)) || deps.signal?.aborted) {
            stopped = true;
            return false;
          }
        }
      }
      return true;
    },
  );
  if (stopped || deps.signal?.aborted) return 'stopped';
  if (batch.rows.length > 0 && !(await send(batch.rows, batch.fileRows))) return 'stopped';
  return 'done';
}

/** The exit code for a finished push. */
export function pushExitCode(summary: PushSummary): ExitCode {
  if (summary.outcome === 'invalid') return ExitCode.FAILED;
  if (summary.outcome === 'stopped') return ExitCode.STOPPED_EARLY;
  return ExitCode.OK;
}
