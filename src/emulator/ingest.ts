/** The emulator's FOCUS ingest: validates a request body and turns valid rows into line items. */
import { INGEST_VERSIONS, type IngestResult } from '../api/types.js';
import { toDayNumber, utcDate } from '../dates.js';
import { REQUIRED_INGEST_COLUMNS, canonicalChargeCategory, extensionColumns, isCurrencyCode, parseFocusTime } from '../focus/rules.js';
import type { Dataset } from './dataset.js';
import { hashString } from './rng.js';

export interface RowError {
  row: number;
  column: string | null;
  message: string;
}

/** A whole-request problem: answered with 400 VALIDATION_ERROR. */
export class IngestRequestError extends Error {}

export interface IngestContext {
  dataset: Dataset;
  connectionId: string;
  providerType: string;
  vendor: string;
  maxRows: number;
  batchId: string;
}

/** Checks `format`, `version` and `rows`; throws IngestRequestError naming the problem. */
function checkRequest(body: unknown, vendor: string, maxRows: number): Record<string, unknown>[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new IngestRequestError('the body must be a JSON object with a "rows" array');
  }
  const b = body as Record<string, unknown>;
  if (b.format !== undefined && b.format !== `${vendor}.focus`) {
    throw new IngestRequestError(`"format" must be "${vendor}.focus" when sent, got ${JSON.stringify(b.format)}`);
  }
  if (b.version !== undefined && !INGEST_VERSIONS.includes(String(b.version) as never)) {
    throw new IngestRequestError(`"version" must be one of ${INGEST_VERSIONS.join(', ')} when sent, got ${JSON.stringify(b.version)}`);
  }
  if (!Array.isArray(b.rows)) throw new IngestRequestError('"rows" is required and must be an array of row objects');
  if (b.rows.length === 0) throw new IngestRequestError('"rows" is empty: send at least one row');
  if (b.rows.length > maxRows) {
    throw new IngestRequestError(`"rows" holds ${b.rows.length} rows; at most ${maxRows} per request: split the batch`);
  }
  return b.rows as Record<string, unknown>[];
}

function isNum(v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v);
}

/**
 * Validates every row; stores the valid ones as line items of the connection's provider. Rows
 * whose line-item id was ingested before on this connection are skipped, not duplicated.
 */
export function ingestFocus(body: unknown, ctx: IngestContext): IngestResult {
  const rows = checkRequest(body, ctx.vendor, ctx.maxRows);
  const ext = extensionColumns(ctx.vendor);
  const errors: RowError[] = [];
  let created = 0;
  let skipped = 0;

  rows.forEach((row, index) => {
    const problems: RowError[] = [];
    const bad = (column: string | null, message: string) => problems.push({ row: index, column, message });
    if (typeof row !== 'object' || row === null || Array.isArray(row)) {
      bad(null, 'row must be a JSON object');
    } else {
      for (const col of REQUIRED_INGEST_COLUMNS) {
        if (row[col] === undefined || row[col] === null || row[col] === '') bad(col, `${col} is required`);
      }
      const start = typeof row.ChargePeriodStart === 'string' ? parseFocusTime(row.ChargePeriodStart) : null;
      if (row.ChargePeriodStart != null && start === null) bad('ChargePeriodStart', 'must be a calendar date or ISO 8601 time');
      if (row.ChargePeriodEnd != null) {
        const end = typeof row.ChargePeriodEnd === 'string' ? parseFocusTime(row.ChargePeriodEnd) : null;
        if (end === null) bad('ChargePeriodEnd', 'must be a calendar date or ISO 8601 time');
        else if (start !== null && end < start) bad('ChargePeriodEnd', 'must not be before ChargePeriodStart');
      }
      if (row.BilledCost != null && !isNum(row.BilledCost)) bad('BilledCost', 'must be a finite number');
      if (row.EffectiveCost != null && !isNum(row.EffectiveCost)) bad('EffectiveCost', 'must be a finite number');
      if (row.ServiceName != null && typeof row.ServiceName !== 'string') bad('ServiceName', 'must be a string');
      if (row.ChargeCategory != null && (typeof row.ChargeCategory !== 'string' || !canonicalChargeCategory(row.ChargeCategory))) {
        bad('ChargeCategory', 'must be Usage, Purchase, Tax, Credit or Adjustment (or Discount, Refund, Fee), in any case');
      }
      if (row.BillingCurrency != null && (typeof row.BillingCurrency !== 'string' || !isCurrencyCode(row.BillingCurrency))) {
        bad('BillingCurrency', 'must be a three-letter currency code');
      }
      for (const col of [ext.tokensInput, ext.tokensOutput, ext.tokensCacheRead, ext.tokensCacheCreation]) {
        if (row[col] != null && !(isNum(row[col]) && row[col] >= 0)) bad(col, 'must be a non-negative number');
      }
      if (row[ext.lineItemId] != null && typeof row[ext.lineItemId] !== 'string') bad(ext.lineItemId, 'must be a string');
      if (row.Tags != null && (typeof row.Tags !== 'object' || Array.isArray(row.Tags))) bad('Tags', 'must be a flat JSON object');
    }
    if (problems.length > 0) {
      errors.push(...problems);
      skipped += 1;
      return;
    }
    const startMs = parseFocusTime(row.ChargePeriodStart as string)!;
    const date = utcDate(startMs);
    const amount = isNum(row.EffectiveCost) ? row.EffectiveCost : (row.BilledCost as number);
    const ownId = row[ext.lineItemId] as string | undefined;
    const dedupKey = `${ctx.connectionId}\u0000${ownId ?? `${ctx.batchId}:${index}`}`;
    const tags = (row.Tags ?? {}) as Record<string, unknown>;
    const record = {
      id: `ing-${hashString(dedupKey).toString(16).padStart(8, '0')}-${hashString(`${dedupKey}#`).toString(16).padStart(8, '0')}`,
      usage_date: date,
      provider_type: ctx.providerType,
      provider_service: row.ServiceName as string,
      net_amount_usd: amount,
      currency_original: typeof row.BillingCurrency === 'string' ? row.BillingCurrency.toUpperCase() : 'USD',
      project_id: String(row.SubAccountId ?? row.BillingAccountId ?? 'unassigned'),
      user_email: typeof tags.user_email === 'string' ? tags.user_email : '',
      charge_category: canonicalChargeCategory(row.ChargeCategory as string),
      connection_id: ctx.connectionId,
      ...(row[ext.model] != null ? { model: row[ext.model] } : {}),
      ...(row[ext.tokensInput] != null ? { tokens_input: row[ext.tokensInput] } : {}),
      ...(row[ext.tokensOutput] != null ? { tokens_output: row[ext.tokensOutput] } : {}),
    };
    const stored = ctx.dataset.addIngested(toDayNumber(date), { record, micros: Math.round(amount * 1_000_000) }, dedupKey);
    if (stored) created += 1;
    else skipped += 1;
  });

  return {
    // False only when every row was invalid; duplicates of earlier rows still count as accepted.
    accepted: rows.length > new Set(errors.map((e) => e.row)).size,
    batch_id: ctx.batchId,
    row_count: rows.length,
    cost_line_item_count: created,
    skipped,
    errors,
  };
}
