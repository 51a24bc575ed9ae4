/**
 * `costsync verify --api`: the warehouse against what the API says now, per source, over the dates its
 * streams say they synced. The rollups endpoint answers a whole range per grouping with no pages, so a
 * source costs 3 requests (a range the server refuses is split in halves). Each stored rollup group is
 * compared with the API's (a group on one side only counts $0 on the other), and the line items' sum
 * per date and provider with the API's provider rollup. Writes nothing.
 */
import type { ApiClient } from './api/client.js';
import { GROUP_BYS, type GroupBy, type RollupRow } from './api/types.js';
import { addDays, toDayNumber } from './dates.js';
import { ApiError } from './errors.js';
import type { ReadOnlyWarehouse } from './storage/duckdb.js';

export interface ApiDifference {
  source: string;
  date: string;
  /** `provider`, `service`, `category` (a rollup group), or `line_items` (their sum against the provider rollup). */
  check: string;
  group: string;
  stored_usd: number;
  api_usd: number;
  difference_usd: number;
}

export interface ApiVerifyReport {
  tolerance: number;
  /** Per source: the dates compared (null: nothing synced to compare) and the requests made. */
  sources: { source: string; from: string | null; to: string | null; requests: number }[];
  differences: ApiDifference[];
  /** The commands that sync the differing dates again, one per source. */
  fixes: string[];
}

/** A rollup group as one key: its grouping and the dimension fields the server filled. Pure. */
export function groupKey(groupBy: string, row: Pick<RollupRow, 'provider_type' | 'service' | 'category'>): string {
  return (
    [row.provider_type, row.service, row.category]
      .map((v) => v ?? '')
      .join(' / ')
      .replace(/^( \/ )+|( \/ )+$/g, '') || '(none)'
  );
}

/** Amounts in micro-dollars, so sums and differences are exact at the API's precision. Pure. */
export function micros(amount: number | string): bigint {
  const [whole, fraction = ''] = (typeof amount === 'number' ? amount.toFixed(6) : amount).split('.');
  const sign = whole!.startsWith('-') ? -1n : 1n;
  return sign * (BigInt(whole!.replace('-', '') || '0') * 1_000_000n + BigInt(`${fraction}000000`.slice(0, 6)));
}

/**
 * Per date and group, the differences above `tolerance` between `stored` and `api` amounts (micro-dollars),
 * a key on one side only counting 0 on the other. Keys are `date|check|group`. Pure.
 */
export function compareAmounts(
  source: string,
  stored: ReadonlyMap<string, bigint>,
  api: ReadonlyMap<string, bigint>,
  tolerance: number,
): ApiDifference[] {
  const limit = micros(tolerance.toFixed(6));
  const out: ApiDifference[] = [];
  for (const key of new Set([...stored.keys(), ...api.keys()])) {
    const s = stored.get(key) ?? 0n;
    const a = api.get(key) ?? 0n;
    const diff = s - a;
    if ((diff < 0n ? -diff : diff) <= limit) continue;
    const [date, check, group] = key.split('|') as [string, string, string];
    out.push({ source, date, check, group, stored_usd: usd(s), api_usd: usd(a), difference_usd: usd(diff) });
  }
  return out.sort((x, y) => x.date.localeCompare(y.date) || x.check.localeCompare(y.check) || x.group.localeCompare(y.group));
}

const usd = (m: bigint) => Number(m) / 1_000_000;

function add(map: Map<string, bigint>, key: string, amount: bigint): void {
  map.set(key, (map.get(key) ?? 0n) + amount);
}

/** A stored amount per date and group (`verify/api_stored`): a rollup group, or line items per provider (`group_by` = `line_items`). */
export interface StoredAmount {
  date: string;
  group_by: string;
  provider_type: string | null;
  service: string | null;
  category: string | null;
  usd: string;
}

/** Which dates each comparison covers: rollup groups on `inRollups` dates, line items' sums on `inLineItems` dates. */
export interface ComparedDates {
  inRollups: (date: string) => boolean;
  inLineItems: (date: string) => boolean;
}

/** The amounts of both sides, keyed `date|check|group` (micro-dollars): rollup groups, and line items against provider rollups. Pure. */
export function amountsOf(
  stored: readonly StoredAmount[],
  api: ReadonlyMap<GroupBy, readonly RollupRow[]>,
  dates: ComparedDates,
): { stored: Map<string, bigint>; api: Map<string, bigint>; storedLines: Map<string, bigint>; apiLines: Map<string, bigint> } {
  const out = {
    stored: new Map<string, bigint>(),
    api: new Map<string, bigint>(),
    storedLines: new Map<string, bigint>(),
    apiLines: new Map<string, bigint>(),
  };
  for (const r of stored) {
    if (r.group_by === 'line_items') {
      if (dates.inLineItems(r.date)) add(out.storedLines, `${r.date}|line_items|${r.provider_type ?? '(none)'}`, micros(r.usd));
    } else if (dates.inRollups(r.date)) add(out.stored, `${r.date}|${r.group_by}|${groupKey(r.group_by, r)}`, micros(r.usd));
  }
  for (const [groupBy, rows] of api) {
    for (const row of rows) {
      if (groupBy === 'provider' && dates.inLineItems(row.date))
        add(out.apiLines, `${row.date}|line_items|${row.provider_type ?? '(none)'}`, micros(row.cost_usd));
      if (dates.inRollups(row.date)) add(out.api, `${row.date}|${groupBy}|${groupKey(groupBy, row)}`, micros(row.cost_usd));
    }
  }
  return out;
}

/** Every difference above `tolerance` between the stored amounts and the API's rollups (see `amountsOf`). Pure. */
export function differencesFromApi(
  source: string,
  stored: readonly StoredAmount[],
  api: ReadonlyMap<GroupBy, readonly RollupRow[]>,
  dates: ComparedDates,
  tolerance: number,
): ApiDifference[] {
  const a = amountsOf(stored, api, dates);
  return [...compareAmounts(source, a.stored, a.api, tolerance), ...compareAmounts(source, a.storedLines, a.apiLines, tolerance)];
}

/** The API's rollups of `groupBy` over `from..to`, in one request, or halves of the range when the server refuses it. */
export async function fetchRollups(client: ApiClient, from: string, to: string, groupBy: GroupBy, count: () => void): Promise<RollupRow[]> {
  count();
  try {
    return await client.rollups({ startDate: from, endDate: to, groupBy });
  } catch (error) {
    // A range too long for the server is a 400; anything else (the key, the URL) is the answer.
    if (from === to || !(error instanceof ApiError) || error.statusCode !== 400) throw error;
    const mid = addDays(from, Math.floor((toDayNumber(to) - toDayNumber(from)) / 2));
    return [
      ...(await fetchRollups(client, from, mid, groupBy, count)),
      ...(await fetchRollups(client, addDays(mid, 1), to, groupBy, count)),
    ];
  }
}

/** Compares each source's warehouse rows with the API's rollups (see the module's comment). */
export async function verifyAgainstApi(
  warehouse: ReadOnlyWarehouse,
  sources: readonly { name: string; client: ApiClient }[],
  options: {
    tolerance: number;
    from?: string | null;
    to?: string | null;
    fixCommand: (source: string, from: string, to: string) => string;
  },
): Promise<ApiVerifyReport> {
  const report: ApiVerifyReport = { tolerance: options.tolerance, sources: [], differences: [], fixes: [] };
  for (const { name, client } of sources) {
    const ranges = await warehouse.query<{ stream: string; first: string; last: string }>('verify/api_coverage', [name]);
    const within = (stream: string) => {
      const mine = ranges.filter((r) => r.stream === stream);
      return (date: string) =>
        mine.some((r) => date >= r.first && date <= r.last) &&
        (options.from == null || date >= options.from) &&
        (options.to == null || date <= options.to);
    };
    const inRollups = within('rollups');
    const inLineItems = within('line_items');
    const rollupRanges = ranges.filter((r) => r.stream === 'rollups');
    // One request a grouping covers the first to the last synced date; what falls in a gap is not compared.
    const lo = rollupRanges.map((r) => r.first).sort()[0] ?? null;
    const hi =
      rollupRanges
        .map((r) => r.last)
        .sort()
        .at(-1) ?? null;
    const from = options.from != null && lo !== null && options.from > lo ? options.from : lo;
    const to = options.to != null && hi !== null && options.to < hi ? options.to : hi;
    let requests = 0;
    if (from === null || to === null || from > to) {
      report.sources.push({ source: name, from: null, to: null, requests });
      continue;
    }
    const storedRows = await warehouse.query<StoredAmount>('verify/api_stored', [name, from, to]);
    const apiRows = new Map<GroupBy, RollupRow[]>();
    for (const groupBy of GROUP_BYS) apiRows.set(groupBy, await fetchRollups(client, from, to, groupBy, () => (requests += 1)));
    // Line items are compared where both streams synced the date (the API's provider rollups stand for them).
    const compared = { inRollups, inLineItems: (date: string) => inLineItems(date) && inRollups(date) };
    const found = differencesFromApi(name, storedRows, apiRows, compared, options.tolerance);
    report.sources.push({ source: name, from, to, requests });
    if (found.length === 0) continue;
    report.differences.push(...found);
    const dates = found.map((d) => d.date).sort();
    report.fixes.push(options.fixCommand(name, dates[0]!, dates.at(-1)!));
  }
  report.differences.sort((x, y) => x.date.localeCompare(y.date) || x.source.localeCompare(y.source) || x.check.localeCompare(y.check));
  return report;
}
