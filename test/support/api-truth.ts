/**
 * What the API holds, read from the emulator's own records (not through costsync), and every stored
 * column of line items, rollups and anomalies compared with it: the truth a warehouse must equal.
 */
import { ANOMALY_COLUMNS, LINE_ITEM_COLUMNS, MONEY_TYPE, ROLLUP_COLUMNS } from '../../src/api/fields.js';
import { GROUP_BYS } from '../../src/api/types.js';
import { addDays, toDayNumber } from '../../src/dates.js';
import type { Dataset } from '../../src/emulator/dataset.js';
import { queryDb } from './helpers.js';

/** A value as both sides are compared: numbers as numbers, timestamps as epoch ms, the rest as text; absent as null. */
function canonical(value: unknown, type: string): unknown {
  if (value === null || value === undefined) return null;
  if (type === 'DOUBLE' || type === MONEY_TYPE) return Number(value);
  if (type === 'TIMESTAMPTZ') return Date.parse(String(value));
  if (type === 'DATE') return String(value).slice(0, 10);
  return String(value);
}

/** Fields of `record` beyond `declared`, with sorted keys, as text ('{}' for none). */
function extraText(record: Record<string, unknown>, declared: readonly string[]): string {
  const keys = Object.keys(record)
    .filter((k) => !declared.includes(k))
    .sort();
  return JSON.stringify(Object.fromEntries(keys.map((k) => [k, record[k]])));
}

/** The stored `extra` JSON as the same text. */
function storedExtra(extra: unknown): string {
  if (extra === null || extra === undefined) return '{}';
  const parsed = (typeof extra === 'string' ? JSON.parse(extra) : extra) as Record<string, unknown>;
  return extraText(parsed, []);
}

/** A row's every column as one comparable text: the declared columns in order, then `extra`. */
function rowText(values: Record<string, unknown>, columns: readonly (readonly [string, string, unknown])[], extra: string): string {
  return JSON.stringify([...columns.map(([name, type]) => canonical(values[name], type)), extra]);
}

/** A line item's every column as one text (the API's record). */
export function lineItemText(record: Record<string, unknown>): string {
  return rowText(
    record,
    LINE_ITEM_COLUMNS,
    extraText(
      record,
      LINE_ITEM_COLUMNS.map(([name]) => name),
    ),
  );
}

/** Every stored line item of `db`: its source, date, id and every column as `lineItemText` writes the API's. */
export async function storedLineItems(db: string): Promise<{ source: string; date: string; id: string; text: string }[]> {
  const rows = await queryDb<Record<string, unknown>>(
    db,
    `SELECT * EXCLUDE (usage_date), strftime(usage_date, '%Y-%m-%d') AS usage_date FROM line_items`,
  );
  return rows.map((r) => ({
    source: String(r.source),
    date: String(r.usage_date),
    id: String(r.id),
    text: rowText(r, LINE_ITEM_COLUMNS, storedExtra(r.extra)),
  }));
}

/** The line items of `ds` dated `from`..`to`, by id, each as its every column's text. */
export function apiLineItems(ds: Dataset, from: string, to: string): Map<string, string> {
  const out = new Map<string, string>();
  const declared = LINE_ITEM_COLUMNS.map(([name]) => name);
  for (let d = from; d <= to; d = addDays(d, 1)) {
    const day = toDayNumber(d);
    for (let i = 0; i < ds.slots(day); i++) {
      const item = ds.itemAt(day, i);
      if (item) out.set(item.record.id, rowText(item.record, LINE_ITEM_COLUMNS, extraText(item.record, declared)));
    }
  }
  return out;
}

/** The rollups of `ds` for `from`..`to`, every grouping, by their key, each as its every column's text. */
export function apiRollups(ds: Dataset, from: string, to: string): Map<string, string> {
  const out = new Map<string, string>();
  const declared = ROLLUP_COLUMNS.map(([name]) => name);
  for (const groupBy of GROUP_BYS) {
    for (const row of ds.rollups(toDayNumber(from), toDayNumber(to), groupBy)) {
      const values = { ...row, group_by: groupBy };
      out.set(rollupKey(values), rowText(values, ROLLUP_COLUMNS, extraText(values, declared)));
    }
  }
  return out;
}

function rollupKey(row: Record<string, unknown>): string {
  return [row.date, row.group_by, row.provider_type, row.service, row.category]
    .map((v) => String(v ?? ''))
    .join('|')
    .replace(/T.*$/, '');
}

/** The anomalies of `ds` detected by `nowMs`, by id, each as its every column's text (its status as of `nowMs`). */
export function apiAnomalies(ds: Dataset, nowMs: number): Map<string, string> {
  const declared = ANOMALY_COLUMNS.map(([name]) => name);
  return new Map(
    ds.anomaliesAt(nowMs).map(({ anomaly }) => [anomaly.id, rowText(anomaly, ANOMALY_COLUMNS, extraText(anomaly, declared))] as const),
  );
}

/** What differs between two keyed row sets: keys one side lacks, and rows whose columns differ (both texts shown). */
export function differences(what: string, api: ReadonlyMap<string, string>, stored: ReadonlyMap<string, string>): string[] {
  const out: string[] = [];
  for (const [key, text] of api) {
    const held = stored.get(key);
    if (held === undefined) out.push(`${what} ${key}: missing from the warehouse`);
    else if (held !== text) out.push(`${what} ${key}: the warehouse holds ${held}, the API ${text}`);
  }
  for (const key of stored.keys()) if (!api.has(key)) out.push(`${what} ${key}: in the warehouse, not in the API`);
  return out;
}

/**
 * Every column of `source`'s line items and rollups dated `from`..`to` and of its anomalies in `db`,
 * against `ds` as of `nowMs`: the differences, or none. `anomaliesFrom` bounds the anomalies compared to
 * those detected on or after it (a sync stores those of its horizon).
 */
export async function storedAgainstApi(
  db: string,
  ds: Dataset,
  options: {
    source?: string;
    from: string;
    to: string;
    nowMs: number;
    /**
     * The anomalies compared: every one detected in `window` (dates, both included), and every held one detected
     * since `heldSince` (the window's start by default); every one the API has, by default.
     */
    anomalies?: { window: readonly [string, string]; heldSince?: string };
    /** The tables compared (all three by default). */
    tables?: readonly ('line_items' | 'rollups_daily' | 'anomalies')[];
  },
): Promise<string[]> {
  const tables = options.tables ?? ['line_items', 'rollups_daily', 'anomalies'];
  const source = options.source ?? 'default';
  const where = (date: string) => `source = '${source}' AND ${date} BETWEEN DATE '${options.from}' AND DATE '${options.to}'`;
  const read = async (
    sql: string,
    columns: readonly (readonly [string, string, unknown])[],
    key: (r: Record<string, unknown>) => string,
  ) => {
    const rows = await queryDb<Record<string, unknown>>(db, sql);
    return new Map(rows.map((r) => [key(r), rowText(r, columns, storedExtra(r.extra))] as const));
  };
  const out: string[] = [];
  if (tables.includes('line_items')) {
    const lineItems = await read(
      `SELECT * EXCLUDE (usage_date), strftime(usage_date, '%Y-%m-%d') AS usage_date FROM line_items WHERE ${where('usage_date')}`,
      LINE_ITEM_COLUMNS,
      (r) => String(r.id),
    );
    out.push(...differences('line item', apiLineItems(ds, options.from, options.to), lineItems));
  }
  if (tables.includes('rollups_daily')) {
    const rollups = await read(
      `SELECT * EXCLUDE (date), strftime(date, '%Y-%m-%d') AS date FROM rollups_daily WHERE ${where('date')}`,
      ROLLUP_COLUMNS,
      rollupKey,
    );
    out.push(...differences('rollup', apiRollups(ds, options.from, options.to), rollups));
  }
  if (tables.includes('anomalies')) {
    // Those detected in the window are all held; a held one detected since `heldSince` is as the API has it now.
    const [from, to] = options.anomalies?.window ?? ['0001-01-01', '9999-12-31'];
    const heldSince = options.anomalies?.heldSince ?? from;
    const detectedAt = ANOMALY_COLUMNS.findIndex(([n]) => n === 'detected_date');
    const dateOf = (text: string) => new Date((JSON.parse(text) as number[])[detectedAt]!).toISOString().slice(0, 10);
    const held = await read(
      `SELECT * EXCLUDE (detected_date), strftime(detected_date AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.%gZ') AS detected_date
       FROM anomalies WHERE source = '${source}'`,
      ANOMALY_COLUMNS,
      (r) => String(r.id),
    );
    const inWindow = (text: string) => dateOf(text) >= from && dateOf(text) <= to;
    const api = new Map(
      [...apiAnomalies(ds, options.nowMs)].filter(([id, text]) => inWindow(text) || (held.has(id) && dateOf(text) >= heldSince)),
    );
    const stored = new Map([...held].filter(([, text]) => inWindow(text) || dateOf(text) >= heldSince));
    out.push(...differences('anomaly', api, stored));
  }
  return out;
}
