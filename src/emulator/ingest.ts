/**
 * The emulator's FOCUS ingest: validates a request body and turns valid rows into line items.
 *
 * Its rules are written here from the API document's ingest tables (request body, ingest row,
 * ChargeCategory rules, extension columns), not imported from `push`'s checks: a test double that
 * shared the checks of the client under test could not catch their mistakes. Where the document
 * leaves a choice open, `IngestRules` lets a test pick each answer.
 */
import type { IngestResult } from '../api/types.js';
import { toDayNumber, utcDate } from '../dates.js';
import type { Dataset } from './dataset.js';
import { hashString } from './rng.js';

/** The body's `version` values the document allows. */
const VERSIONS = ['1', '1.1', '1.2'];
/** The ingest row's required columns. */
const REQUIRED_COLUMNS = ['ChargePeriodStart', 'BilledCost', 'ServiceName', 'ChargeCategory'] as const;
/** ChargeCategory by its lower-case spelling: the five canonical values, and the aliases with what they are stored as. */
const CHARGE_CATEGORIES: Readonly<Record<string, string>> = {
  usage: 'Usage',
  purchase: 'Purchase',
  tax: 'Tax',
  credit: 'Credit',
  adjustment: 'Adjustment',
  discount: 'Credit',
  refund: 'Credit',
  fee: 'Usage',
};

/**
 * What an invalid row does to its request (the document has `skipped` and per-row `errors` in the
 * result, and an `accepted` flag, but does not say when a batch is not accepted):
 * `skip` stores the valid rows and skips the others (accepted unless every row is invalid);
 * `reject-batch` stores nothing when any row is invalid (202, accepted false, every row skipped);
 * `refuse-request` answers 400 VALIDATION_ERROR naming the first problem.
 */
export type InvalidRows = 'skip' | 'reject-batch' | 'refuse-request';
/**
 * The shape of an element of `errors` (not shown in the document): `object` is
 * `{ row, column, message }` (row counted from 0, column null for the row as a whole); `string` is
 * one line such as `row 2, ChargeCategory: ...`.
 */
export type RowErrorShape = 'object' | 'string';
/**
 * What ChargePeriodStart and ChargePeriodEnd may hold. The document says "a calendar date string";
 * FOCUS 1.2, which the profile builds on, writes them as ISO 8601 date-times. `date-or-time`: either,
 * a date-time with its zone; `date`: only `YYYY-MM-DD`.
 */
export type ChargePeriodDates = 'date-or-time' | 'date';

/**
 * What a row whose line-item id was ingested before on the connection does (the document calls the
 * id "the deduplication key" without saying which row wins): `skip` keeps the first one and counts
 * the row as skipped; `replace` stores it in place of the earlier one and counts it as created.
 */
export type DuplicateRows = 'skip' | 'replace';

/**
 * Rows a server turns away for reasons of its own that no client check can foresee (a service it does
 * not know, a quota): `{ refuse }` names the row in `errors` with the message, as an invalid row;
 * `'skip'` skips it without a word, counted in `skipped` only.
 */
export type IngestVerdict = (row: Record<string, unknown>) => { refuse: string } | 'skip' | null;

/** A verdict by the row's ServiceName: refused when it starts with one of `refuse`, skipped with one of `skip`. Pure. */
export function serviceVerdict(refuse: readonly string[], skip: readonly string[]): IngestVerdict {
  return (row) => {
    const service = typeof row.ServiceName === 'string' ? row.ServiceName : '';
    const refused = refuse.find((prefix) => service.startsWith(prefix));
    if (refused !== undefined)
      return { refuse: `ServiceName "${service}" is not accepted on this connection (it starts with "${refused}")` };
    return skip.some((prefix) => service.startsWith(prefix)) ? 'skip' : null;
  };
}

export interface IngestRules {
  invalidRows: InvalidRows;
  duplicateRows: DuplicateRows;
  rowErrorShape: RowErrorShape;
  chargePeriodDates: ChargePeriodDates;
  verdict?: IngestVerdict | undefined;
}

export interface RowError {
  row: number;
  column: string | null;
  message: string;
}

/** A whole-request problem: answered with 400 VALIDATION_ERROR. */
export class IngestRequestError extends Error {}

/** The request holds more rows than the emulator takes (the document does not say the real limit). */
export class IngestTooLargeError extends IngestRequestError {}

export interface IngestContext {
  dataset: Dataset;
  connectionId: string;
  providerType: string;
  vendor: string;
  maxRows: number;
  batchId: string;
  rules: IngestRules;
}

/** Checks `format`, `version` and `rows`; throws IngestRequestError naming the problem. */
function checkRequest(body: unknown, vendor: string, maxRows: number): unknown[] {
  if (!isObject(body)) throw new IngestRequestError('the body must be a JSON object with a "rows" array');
  if (body.format !== undefined && body.format !== `${vendor}.focus`) {
    throw new IngestRequestError(`"format" must be "${vendor}.focus" when sent, got ${JSON.stringify(body.format)}`);
  }
  // The document writes the versions unquoted and gives no type: 1.2 and "1.2" are both taken.
  if (
    body.version !== undefined &&
    !((typeof body.version === 'string' || typeof body.version === 'number') && VERSIONS.includes(String(body.version)))
  ) {
    throw new IngestRequestError(`"version" must be one of ${VERSIONS.join(', ')} when sent, got ${JSON.stringify(body.version)}`);
  }
  if (!Array.isArray(body.rows)) throw new IngestRequestError('"rows" is required and must be an array of row objects');
  if (body.rows.length === 0) throw new IngestRequestError('"rows" is empty: send at least one row');
  if (body.rows.length > maxRows) {
    throw new IngestTooLargeError(`"rows" holds ${body.rows.length} rows; at most ${maxRows} per request: split the batch`);
  }
  return body.rows;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isNum(v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v);
}

const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME_RE = /^(\d{4}-\d{2}-\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-](\d{2}):(\d{2}))$/;

/** Epoch ms of midnight UTC of a real calendar date `YYYY-MM-DD`; null otherwise. */
function calendarDateMs(text: string): number | null {
  const m = DATE_RE.exec(text);
  if (!m) return null;
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  return new Date(ms).toISOString().startsWith(text) ? ms : null;
}

/** Epoch ms of a charge period bound as `dates` allows; null when it is not one. */
function chargePeriodMs(value: unknown, dates: ChargePeriodDates): number | null {
  if (typeof value !== 'string') return null;
  const date = calendarDateMs(value);
  if (date !== null || dates === 'date') return date;
  const m = DATE_TIME_RE.exec(value);
  if (!m || calendarDateMs(m[1]!) === null) return null;
  if (Number(m[2]) > 23 || Number(m[3]) > 59 || Number(m[4] ?? 0) > 59 || Number(m[5] ?? 0) > 23 || Number(m[6] ?? 0) > 59) return null;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? null : ms;
}

/** The document's ChargeCategory rules: canonical values and aliases, in any letter case; null when not one. */
function chargeCategory(value: unknown): string | null {
  return typeof value === 'string' ? (CHARGE_CATEGORIES[value.toLowerCase()] ?? null) : null;
}

/** The extension column names for a vendor word (`x_<vendor>_…`). */
function extensionColumns(vendor: string) {
  return {
    model: `x_${vendor}_model`,
    tokens: ['input', 'output', 'cache_read', 'cache_creation'].map((kind) => `x_${vendor}_tokens_${kind}`),
    tokensInput: `x_${vendor}_tokens_input`,
    tokensOutput: `x_${vendor}_tokens_output`,
    lineItemId: `x_${vendor}_line_item_id`,
  } as const;
}

/** The problems of one row, each naming its column (null: the row as a whole). */
function rowProblems(row: unknown, index: number, vendor: string, dates: ChargePeriodDates): RowError[] {
  const problems: RowError[] = [];
  const bad = (column: string | null, message: string) => problems.push({ row: index, column, message });
  if (!isObject(row)) {
    bad(null, 'row must be a JSON object');
    return problems;
  }
  const ext = extensionColumns(vendor);
  const present = (col: string) => row[col] !== undefined && row[col] !== null;
  for (const col of REQUIRED_COLUMNS) if (!present(col) || row[col] === '') bad(col, `${col} is required`);
  const periodRule =
    dates === 'date' ? 'must be a calendar date (YYYY-MM-DD)' : 'must be a calendar date or an ISO 8601 time with its zone';
  const start = chargePeriodMs(row.ChargePeriodStart, dates);
  if (present('ChargePeriodStart') && row.ChargePeriodStart !== '' && start === null) bad('ChargePeriodStart', periodRule);
  if (present('ChargePeriodEnd')) {
    const end = chargePeriodMs(row.ChargePeriodEnd, dates);
    if (end === null) bad('ChargePeriodEnd', periodRule);
    else if (start !== null && end < start) bad('ChargePeriodEnd', 'must not be before ChargePeriodStart');
  }
  if (present('BilledCost') && row.BilledCost !== '' && !isNum(row.BilledCost)) bad('BilledCost', 'must be a number');
  if (present('EffectiveCost') && !isNum(row.EffectiveCost)) bad('EffectiveCost', 'must be a number');
  if (present('ServiceName') && typeof row.ServiceName !== 'string') bad('ServiceName', 'must be a string');
  if (present('ChargeCategory') && row.ChargeCategory !== '' && chargeCategory(row.ChargeCategory) === null) {
    bad('ChargeCategory', 'must be Usage, Purchase, Tax, Credit or Adjustment (or Discount, Refund, Fee), in any letter case');
  }
  if (present('BillingCurrency') && !(typeof row.BillingCurrency === 'string' && /^[A-Za-z]{3}$/.test(row.BillingCurrency))) {
    bad('BillingCurrency', 'must be a three-letter currency code');
  }
  for (const col of ext.tokens)
    if (present(col) && !(isNum(row[col]) && row[col] >= 0)) bad(col, 'must be a token count (a number, not negative)');
  if (present(ext.lineItemId) && typeof row[ext.lineItemId] !== 'string') bad(ext.lineItemId, 'must be a string');
  if (present('Tags') && !isObject(row.Tags)) bad('Tags', 'must be a JSON object of tag names and values');
  return problems;
}

/** An `errors` element in the shape the rules ask for. */
function shapeError(e: RowError, shape: RowErrorShape): unknown {
  return shape === 'string' ? `row ${e.row}${e.column === null ? '' : `, ${e.column}`}: ${e.message}` : e;
}

/**
 * Validates every row; stores the valid ones as line items of the connection's provider (unless the
 * rules reject the batch). Rows whose line-item id was ingested before on this connection are
 * skipped or replace the earlier row, never duplicated.
 */
export function ingestFocus(body: unknown, ctx: IngestContext): IngestResult {
  const rows = checkRequest(body, ctx.vendor, ctx.maxRows);
  const { rules } = ctx;
  const verdicts = rows.map((row) => (isObject(row) ? (rules.verdict?.(row) ?? null) : null));
  const problems = rows.map((row, index) => {
    const found = rowProblems(row, index, ctx.vendor, rules.chargePeriodDates);
    const verdict = verdicts[index];
    if (found.length === 0 && verdict !== null && verdict !== 'skip') found.push({ row: index, column: null, message: verdict!.refuse });
    return found;
  });
  const errors = problems.flat();
  const invalid = problems.filter((p) => p.length > 0).length;
  if (invalid > 0 && rules.invalidRows === 'refuse-request') {
    const first = errors[0]!;
    const more = errors.length > 1 ? ` (and ${errors.length - 1} more problem${errors.length > 2 ? 's' : ''})` : '';
    throw new IngestRequestError(`row ${first.row}${first.column === null ? '' : `, ${first.column}`}: ${first.message}${more}`);
  }
  const result = (accepted: boolean, created: number, skipped: number): IngestResult => ({
    accepted,
    batch_id: ctx.batchId,
    row_count: rows.length,
    cost_line_item_count: created,
    skipped,
    errors: errors.map((e) => shapeError(e, rules.rowErrorShape)),
  });
  if (invalid > 0 && rules.invalidRows === 'reject-batch') return result(false, 0, rows.length);

  const ext = extensionColumns(ctx.vendor);
  let created = 0;
  let skipped = invalid;
  rows.forEach((value, index) => {
    if (problems[index]!.length > 0) return;
    if (verdicts[index] === 'skip') {
      skipped += 1;
      return;
    }
    const row = value as Record<string, unknown>;
    const startMs = chargePeriodMs(row.ChargePeriodStart, rules.chargePeriodDates)!;
    const date = utcDate(startMs);
    // EffectiveCost defaults to BilledCost when omitted.
    const amount = isNum(row.EffectiveCost) ? row.EffectiveCost : (row.BilledCost as number);
    const ownId = row[ext.lineItemId] as string | undefined;
    const dedupKey = `${ctx.connectionId}\u0000${ownId ?? `${ctx.batchId}:${index}`}`;
    const tags = isObject(row.Tags) ? row.Tags : {};
    const record = {
      id: `ing-${hashString(dedupKey).toString(16).padStart(8, '0')}-${hashString(`${dedupKey}#`).toString(16).padStart(8, '0')}`,
      usage_date: date,
      provider_type: ctx.providerType,
      provider_service: row.ServiceName as string,
      net_amount_usd: amount,
      currency_original: typeof row.BillingCurrency === 'string' ? row.BillingCurrency.toUpperCase() : 'USD',
      project_id: String(row.SubAccountId ?? row.BillingAccountId ?? 'unassigned'),
      user_email: typeof tags.user_email === 'string' ? tags.user_email : '',
      charge_category: chargeCategory(row.ChargeCategory),
      connection_id: ctx.connectionId,
      ...(row[ext.model] != null ? { model: row[ext.model] } : {}),
      ...(row[ext.tokensInput] != null ? { tokens_input: row[ext.tokensInput] } : {}),
      ...(row[ext.tokensOutput] != null ? { tokens_output: row[ext.tokensOutput] } : {}),
    };
    const stored = ctx.dataset.addIngested(
      toDayNumber(date),
      { record, micros: Math.round(amount * 1_000_000) },
      dedupKey,
      rules.duplicateRows === 'replace',
    );
    if (stored) created += 1;
    else skipped += 1;
  });
  // Not accepted only when every row was invalid; duplicates of earlier rows still count as accepted.
  return result(rows.length > invalid, created, skipped);
}
