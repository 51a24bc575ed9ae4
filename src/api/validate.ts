/**
 * Checks the shapes the spec documents: the envelope, and each record's fields. Fields the spec
 * does not list are kept as they are. Pure functions; they throw ApiError naming the record and
 * field so a person can report the server's fault.
 */
import { ApiError, ClientErrorCode } from '../errors.js';
import { isCalendarDate } from '../dates.js';
import { fieldChecks, type FieldCheck } from '../storage/tables.js';
import type { Anomaly, Envelope, IngestResult, LineItem, LineItemPage, RollupRow } from './types.js';

export const BAD_RECORD = 'CS_ERR_BAD_RECORD';

/** Field checks as a list, built once: this runs for every record received. */
type Fields = readonly (readonly [string, FieldCheck])[];

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Parses a body into an envelope; a body that is not one is a malformed (retryable) response. */
export function parseEnvelope(text: string, path: string, statusCode: number): Envelope<unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (cause) {
    throw new ApiError(
      ClientErrorCode.MALFORMED_RESPONSE,
      `${path}: the response body is not valid JSON (${text.length} bytes, status ${statusCode})`,
      {
        path,
        statusCode,
        cause,
        hint: 'The server sent a broken or cut-off body; costsync retries such responses.',
      },
    );
  }
  if (!isObject(parsed) || !('data' in parsed || 'error' in parsed)) {
    throw new ApiError(
      ClientErrorCode.MALFORMED_RESPONSE,
      `${path}: the response is not a {data, error, meta} envelope (status ${statusCode})`,
      {
        path,
        statusCode,
        hint: 'Check that --base-url points at the Cost Data API.',
      },
    );
  }
  const meta = isObject(parsed.meta) ? parsed.meta : {};
  const error = parsed.error ?? null;
  if (error !== null && !(isObject(error) && typeof error.code === 'string')) {
    throw new ApiError(ClientErrorCode.MALFORMED_RESPONSE, `${path}: the envelope's "error" is not an object with a code`, {
      path,
      statusCode,
    });
  }
  return {
    data: parsed.data ?? null,
    error: error === null ? null : { code: String(error.code), message: String(error.message ?? '') },
    meta,
  };
}

/** Records of a page mostly share their date: remember the last valid one (a hot path, per field). */
let lastValidDate = '';
function isDate(v: unknown): boolean {
  if (v === lastValidDate) return true;
  if (typeof v !== 'string' || !isCalendarDate(v)) return false;
  lastValidDate = v;
  return true;
}

function badRecord(record: unknown, field: string, expected: string, what: string, index: number, path: string): never {
  throw new ApiError(
    BAD_RECORD,
    `${path}: ${what} #${index} has an invalid "${field}" (expected ${expected}): ${JSON.stringify(isObject(record) ? record[field] : record)?.slice(0, 80)}`,
    {
      path,
      hint: 'The server returned a record that does not match the API spec; report it to the API provider.',
    },
  );
}

function checkFields(record: unknown, fields: Fields, what: string, index: number, path: string): void {
  if (!isObject(record)) badRecord(record, '(record)', 'an object', what, index, path);
  const r = record;
  for (const [field, kind] of fields) {
    const v = r[field];
    switch (kind) {
      case 'string':
        if (typeof v !== 'string' || v === '') badRecord(record, field, 'a non-empty string', what, index, path);
        break;
      case 'string?':
        if (v !== undefined && v !== null && typeof v !== 'string') badRecord(record, field, 'a string', what, index, path);
        break;
      case 'number':
        if (typeof v !== 'number' || !Number.isFinite(v)) badRecord(record, field, 'a finite number', what, index, path);
        break;
      case 'date':
        if (!isDate(v)) badRecord(record, field, 'a YYYY-MM-DD date', what, index, path);
        break;
      case 'timestamp':
        if (typeof v !== 'string' || Number.isNaN(Date.parse(v))) badRecord(record, field, 'an ISO 8601 timestamp', what, index, path);
        break;
      case 'dim':
        if (v !== undefined && v !== null && typeof v !== 'string') badRecord(record, field, 'a string or null', what, index, path);
        break;
    }
  }
}

function checkArray(data: unknown, path: string, what: string): unknown[] {
  if (!Array.isArray(data)) {
    throw new ApiError(ClientErrorCode.MALFORMED_RESPONSE, `${path}: "data" should be an array of ${what}s`, { path });
  }
  return data;
}

// The fields and their checks are the table registry's (storage/tables.ts), declared with the columns they fill.
const LINE_ITEM_FIELDS: Fields = fieldChecks('line_items');
const ROLLUP_FIELDS: Fields = fieldChecks('rollups_daily');
const ANOMALY_FIELDS: Fields = fieldChecks('anomalies');
/** A rollup's dimensions: a grouping leaves the others out, and they are stored as null. */
const ROLLUP_DIMS: readonly string[] = ROLLUP_FIELDS.filter(([, check]) => check === 'dim').map(([field]) => field);

/**
 * A line-item page. `has_more` decides; when a server leaves it out, a non-empty cursor means
 * more. `has_more` true without a cursor cannot be followed and is an error.
 */
export function toLineItemPage(envelope: Envelope<unknown>, path: string): LineItemPage {
  const data = checkArray(envelope.data, path, 'line item');
  data.forEach((r, i) => checkFields(r, LINE_ITEM_FIELDS, 'line item', i, path));
  const rawCursor = envelope.meta.next_cursor;
  const nextCursor = typeof rawCursor === 'string' && rawCursor !== '' ? rawCursor : null;
  const rawHasMore = envelope.meta.has_more;
  const hasMore = typeof rawHasMore === 'boolean' ? rawHasMore : nextCursor !== null;
  if (hasMore && nextCursor === null) {
    throw new ApiError(
      ClientErrorCode.MALFORMED_RESPONSE,
      `${path}: meta.has_more is true but meta.next_cursor is missing, so the next page cannot be asked for`,
      {
        path,
        hint: 'The server sent an unusable page; report it to the API provider.',
      },
    );
  }
  return { data: data as LineItem[], nextCursor, hasMore, meta: envelope.meta };
}

export function toRollups(envelope: Envelope<unknown>, path: string): RollupRow[] {
  const data = checkArray(envelope.data, path, 'rollup row');
  data.forEach((r, i) => checkFields(r, ROLLUP_FIELDS, 'rollup row', i, path));
  return (data as Record<string, unknown>[]).map((r) => {
    const row = { ...r };
    for (const dim of ROLLUP_DIMS) row[dim] = r[dim] ?? null;
    return row;
  }) as RollupRow[];
}

export function toAnomalies(envelope: Envelope<unknown>, path: string): Anomaly[] {
  const data = checkArray(envelope.data, path, 'anomaly');
  data.forEach((r, i) => checkFields(r, ANOMALY_FIELDS, 'anomaly', i, path));
  return data as Anomaly[];
}

export function toIngestResult(envelope: Envelope<unknown>, path: string): IngestResult {
  const d = envelope.data;
  if (!isObject(d) || typeof d.accepted !== 'boolean') {
    throw new ApiError(ClientErrorCode.MALFORMED_RESPONSE, `${path}: the ingest result has no boolean "accepted"`, { path });
  }
  return {
    ...d,
    accepted: d.accepted,
    batch_id: String(d.batch_id ?? ''),
    row_count: Number(d.row_count ?? 0),
    cost_line_item_count: Number(d.cost_line_item_count ?? 0),
    skipped: Number(d.skipped ?? 0),
    errors: Array.isArray(d.errors) ? d.errors : [],
  };
}
