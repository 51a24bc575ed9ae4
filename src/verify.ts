/**
 * `costsync verify`: reconciles the warehouse, per source. Per date and provider, line items against
 * the provider rollup; per date, the totals of the three rollup groupings against each other. With
 * `--focus`, the FOCUS rules of 1.2 (on the focus view), 1.3 and 1.4 (on their views).
 */
import { FOCUS_VERSIONS, type FocusColumn } from './focus/columns.js';
import { addDays } from './dates.js';
import { CostsyncError } from './errors.js';
import { addRange, formatRanges } from './plan/coverage.js';
import type { DateRange } from './state/store.js';
import type { ReadOnlyWarehouse } from './storage/duckdb.js';
import { loadSql } from './storage/duckdb.js';

export interface Difference {
  check: string;
  source: string;
  date: string;
  provider: string | null;
  left_usd: number;
  right_usd: number;
  difference_usd: number;
}

export interface VerifyReport {
  tolerance: number;
  /** Dates compared: line items against rollups, and rollup groupings against each other. */
  lineItemDates: number;
  rollupDates: number;
  differences: Difference[];
}

export async function verifyWarehouse(
  warehouse: ReadOnlyWarehouse,
  options: { tolerance: number; from?: string | null; to?: string | null },
): Promise<VerifyReport> {
  const dates = [options.from ?? null, options.to ?? null];
  const differences = (await warehouse.table(loadSql('verify/differences'), [options.tolerance, ...dates])).rows as unknown as Difference[];
  const [coverage] = (await warehouse.table(loadSql('verify/coverage'), dates)).rows as { line_item_dates: number; rollup_dates: number }[];
  return { tolerance: options.tolerance, lineItemDates: coverage!.line_item_dates, rollupDates: coverage!.rollup_dates, differences };
}

/** A range of dates a source's stream holds as synced (`synced_dates`), and how many of its days a verify's dates take in. */
export interface SyncedRange {
  source: string;
  stream: string;
  from_date: string;
  to_date: string;
  days_in_range: number;
}

/** The synced ranges of the warehouse, each with its days within `from`..`to` (null: open). */
export async function syncedRanges(warehouse: ReadOnlyWarehouse, from: string | null, to: string | null): Promise<SyncedRange[]> {
  return (await warehouse.table(loadSql('verify/synced_in_range'), [from, to])).rows as unknown as SyncedRange[];
}

/** Which dates, in words after "no date": `in 2025-01-01..2025-01-31`, `from 2025-01-01 on`, `through 2025-01-31`, or `at all`. Pure. */
function datesText(from: string | null, to: string | null): string {
  return from !== null && to !== null ? `in ${from}..${to}` : from !== null ? `from ${from} on` : to !== null ? `through ${to}` : 'at all';
}

/**
 * Per source, the days of `from`..`to` (the source's own first..last synced day where open) that no
 * synced range holds: dates a verify of that range did not compare, because they were never synced. Pure.
 */
export function unsyncedIn(ranges: readonly SyncedRange[], from: string | null, to: string | null): { source: string; dates: string }[] {
  const out: { source: string; dates: string }[] = [];
  for (const source of [...new Set(ranges.map((r) => r.source))].sort()) {
    const held = ranges
      .filter((r) => r.source === source)
      .reduce<DateRange[]>((all, r) => addRange(all, { from: r.from_date, to: r.to_date }), []);
    const lo = from ?? held[0]!.from;
    const hi = to ?? held.at(-1)!.to;
    // Walk the held ranges (sorted, merged) over lo..hi: what lies between them, and past them, was never synced.
    const missing: DateRange[] = [];
    let next = lo;
    for (const r of held) {
      if (next > hi || r.from > hi) break;
      if (r.to < next) continue;
      if (r.from > next) missing.push({ from: next, to: addDays(r.from, -1) });
      next = addDays(r.to, 1);
    }
    if (next <= hi) missing.push({ from: next, to: hi });
    if (missing.length > 0) out.push({ source, dates: formatRanges(missing) });
  }
  return out;
}

/** What a verify's summary adds about dates of its range never synced: `; not compared, as never synced: default 2025-06-11..2025-06-19`, or nothing. Pure. */
export function unsyncedText(unsynced: readonly { source: string; dates: string }[]): string {
  return unsynced.length === 0 ? '' : `; not compared, as never synced: ${unsynced.map((u) => `${u.source} ${u.dates}`).join('; ')}`;
}

/**
 * The error for a verify that compared nothing because the warehouse holds no synced date in its dates
 * (a mistyped date, a range before the first sync, an empty warehouse); null when some date there is
 * synced (then nothing was compared because nothing was spent, which is a true "no differences"). Pure.
 */
export function nothingSyncedError(
  ranges: readonly SyncedRange[],
  from: string | null,
  to: string | null,
  command: string,
): CostsyncError | null {
  if (ranges.some((r) => r.days_in_range > 0)) return null;
  const asked = datesText(from, to);
  if (ranges.length === 0)
    return new CostsyncError('CS_ERR_NOTHING_SYNCED', `${command} compared nothing: the warehouse holds no synced dates yet.`, {
      hint: 'Run costsync sync with the same --db first.',
    });
  const held = [...new Set(ranges.map((r) => r.source))]
    .map((source) => {
      const own = ranges.filter((r) => r.source === source && r.stream === 'line_items');
      const list = (own.length > 0 ? own : ranges.filter((r) => r.source === source)).map((r) => `${r.from_date}..${r.to_date}`);
      return `${source}: ${[...new Set(list)].join(', ')}`;
    })
    .join('; ');
  const sync = from !== null ? `costsync sync --since ${from}${to !== null ? ` --until ${to}` : ''}` : 'costsync sync';
  return new CostsyncError(
    'CS_ERR_NOTHING_SYNCED',
    `${command} compared nothing: no date ${asked} is synced (the warehouse holds ${held}).`,
    {
      hint: `Pick dates the warehouse holds, or sync those dates first: ${sync}.`,
    },
  );
}

/** One broken FOCUS rule: how many rows (or dates) break it in a source, and an example. */
export interface FocusViolation {
  rule: string;
  source: string;
  rows: number;
  example: string;
}

/**
 * A version's view against its declared columns: each present with its type, none beyond them but `x_`
 * extras (1.4's view has no ProviderName). `described`: the view's columns (empty: no such view). Pure.
 */
export function versionColumnViolations(
  view: string,
  version: string,
  declared: readonly FocusColumn[],
  described: readonly { name: string; type: string }[],
  rows = 0,
): FocusViolation[] {
  const out: FocusViolation[] = [];
  const found = new Map(described.map((c) => [c.name, c.type]));
  // A column missing or mistyped breaks the rule on every row of the view (`rows`: each view has the focus view's rows).
  const broken = (rule: string, example: string, on = rows) =>
    out.push({ rule: `FOCUS ${version}: ${rule}`, source: view, rows: on, example });
  if (described.length === 0) broken(`the view ${view} is missing`, view, 0);
  else {
    for (const c of declared) {
      const type = found.get(c.name);
      if (type === undefined) broken(`${c.name} is missing from ${view}`, c.name);
      else if (type !== c.type) broken(`${c.name} must be ${c.type}`, `${view}.${c.name} is ${type}`);
    }
    const known = new Set(declared.map((c) => c.name));
    for (const c of described)
      if (!known.has(c.name) && !c.name.startsWith('x_')) broken(`${c.name} is not a FOCUS ${version} column`, `${view}.${c.name}`);
  }
  return out;
}

/**
 * `costsync verify --focus`: the FOCUS 1.2 rules that apply to the focus view (sql/verify/focus.sql), and each
 * version's own: its view's columns (`versionColumnViolations`), then the rules of the columns 1.3 and 1.4 add.
 */
export async function verifyFocus(
  warehouse: ReadOnlyWarehouse,
  options: { tolerance: number },
): Promise<{ rows: number; violations: FocusViolation[] }> {
  const violations = (await warehouse.table(loadSql('verify/focus'), [options.tolerance])).rows as unknown as FocusViolation[];
  const [count] = await warehouse.sql<{ n: number }>('SELECT count(*)::BIGINT AS n FROM focus');
  const rows = Number(count!.n);
  const schema: FocusViolation[] = [];
  for (const { view, version, columns } of FOCUS_VERSIONS) {
    const described = await warehouse.sql<{ name: string; type: string }>(
      'SELECT column_name AS name, data_type AS type FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position',
      [view],
    );
    schema.push(...versionColumnViolations(view, version, columns, described, rows));
  }
  // The value rules bind to the views' columns: asked only of views that have them.
  const values = schema.length > 0 ? [] : ((await warehouse.table(loadSql('verify/focus_versions'))).rows as unknown as FocusViolation[]);
  return { rows, violations: [...violations, ...schema, ...values] };
}
