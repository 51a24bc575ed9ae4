/**
 * A window checks itself before it commits. The API gives two views of the same spend: line items
 * and daily rollups. A window's line items, summed per date and provider, must equal its
 * `group_by=provider` rollups fetched after the last page; a window's three rollup views must agree
 * per date. Disagreement means the source changed while costsync paged (an offset cursor over
 * restated data skips or repeats rows) or dropped rows: the window is fetched again.
 */
import type { RollupRow } from '../api/types.js';
import type { SyncContext } from './context.js';
import { formatUsd } from '../money.js';

export type ReconcileMode = 'on' | 'strict' | 'off';

/** Fetches of one window, the first included, before its last fetch is committed with a warning. */
export const MAX_FETCH_ATTEMPTS = 3;
/** Pause before fetching a disagreeing window again, times the attempt number. */
export const REFETCH_PAUSE_MS = 2_000;

/** An amount per date and key (a provider, or a `group_by`). */
export interface Total {
  date: string;
  key: string;
  amount: number;
}

/** The key of a date and a key field's value (null as ''), as the spool's totals query groups them. Pure. */
export function totalKey(date: string, key: unknown): string {
  return `${date}\u0000${typeof key === 'string' ? key : ''}`;
}

/** Totals kept by `totalKey`, as the check compares them. Pure. */
export function totalsOf(totals: ReadonlyMap<string, number>): Total[] {
  return [...totals].map(([k, amount]) => {
    const [date, key] = k.split('\u0000') as [string, string];
    return { date, key, amount };
  });
}

/**
 * A window's check totals gathered while its pages come, so the check need not read the spool back. Records
 * of a stream with ids (known unique) each add; records of a stream without them are keyed by the fields its
 * staging deduplicates on, and a later one replaces an earlier one, as the staging keeps the last (`put`).
 */
export class PagedTotals {
  private readonly sums = new Map<string, number>();
  private readonly latest = new Map<string, { key: string; amount: number }>();

  /** Adds an amount to its date and key (`totalKey`; a missing amount counts nothing, as SQL's sum skips NULL). */
  add(key: string, amount: unknown): void {
    this.sums.set(key, (this.sums.get(key) ?? 0) + (typeof amount === 'number' ? amount : 0));
  }

  /** The amount of the record whose deduplicating fields are `distinct`, replacing any earlier such record's. */
  put(distinct: string, key: string, amount: unknown): void {
    this.latest.set(distinct, { key, amount: typeof amount === 'number' ? amount : 0 });
  }

  get size(): number {
    return this.sums.size + this.latest.size;
  }

  totals(): Total[] {
    const sums = new Map(this.sums);
    for (const { key, amount } of this.latest.values()) sums.set(key, (sums.get(key) ?? 0) + amount);
    return totalsOf(sums);
  }
}

/** A date and key whose two amounts differ beyond rounding; null: the key is absent from that side. */
export interface Mismatch {
  date: string;
  key: string;
  left: number | null;
  right: number | null;
}

/**
 * Whether two sums of money are the same up to rounding: one cent, or one part in a million of
 * the larger (sums of many float amounts, a server that rounds each row). The emulator's rollups
 * are exact sums of micro-dollar amounts; the spec states no rounding. Pure.
 */
export function sameAmount(a: number, b: number): boolean {
  return Math.abs(a - b) <= 0.01 + 1e-6 * Math.max(Math.abs(a), Math.abs(b));
}

/**
 * The dates and keys where two views disagree, a key missing on one side counting as zero there
 * (so a provider with nothing on either side is no mismatch). Sorted by date and key. Pure.
 */
export function compareTotals(left: readonly Total[], right: readonly Total[]): Mismatch[] {
  const sum = (rows: readonly Total[]) => {
    const map = new Map<string, number>();
    for (const r of rows) map.set(totalKey(r.date, r.key), (map.get(totalKey(r.date, r.key)) ?? 0) + r.amount);
    return map;
  };
  const a = sum(left);
  const b = sum(right);
  const mismatches: Mismatch[] = [];
  for (const k of new Set([...a.keys(), ...b.keys()])) {
    const l = a.get(k);
    const r = b.get(k);
    if (sameAmount(l ?? 0, r ?? 0)) continue;
    const [date, key] = k.split('\u0000') as [string, string];
    mismatches.push({ date, key, left: l ?? null, right: r ?? null });
  }
  return mismatches.sort((x, y) => x.date.localeCompare(y.date) || x.key.localeCompare(y.key));
}

/** A short, readable list of mismatches for a warning (the first `max`, then how many more). Pure. */
export function describeMismatches(mismatches: readonly Mismatch[], names: [string, string], max = 5): string {
  const usd = (v: number | null) => (v === null ? 'none' : formatUsd(v));
  const shown = mismatches.slice(0, max).map((m) => `${m.date} ${m.key}: ${names[0]} ${usd(m.left)}, ${names[1]} ${usd(m.right)}`);
  return shown.join('; ') + (mismatches.length > max ? `; and ${mismatches.length - max} more` : '');
}

/**
 * The provider rollups a line-items check fetched, handed to the rollups stream so that a clean
 * window costs no extra request. The rollups stream takes a window's provider view once the
 * line-items check has fetched it (after the last page), or the line-items stream is done with the
 * window; it does not wait for the line-items commit, so the key's budget is not left idle meanwhile.
 */
export class ProviderRollupExchange {
  private readonly gates = new Map<string, { open: () => void; opened: Promise<void> }>();
  private readonly rows = new Map<string, RollupRow[]>();
  private markPlanned!: () => void;
  private readonly planned = new Promise<void>((resolve) => {
    this.markPlanned = resolve;
  });

  private static key(window: { start: string; end: string }): string {
    return `${window.start}..${window.end}`;
  }

  /** The line-items stream's windows still to fetch: the rollups stream waits for each. */
  expect(windows: readonly { start: string; end: string }[]): void {
    for (const w of windows) {
      let open!: () => void;
      const opened = new Promise<void>((resolve) => {
        open = resolve;
      });
      this.gates.set(ProviderRollupExchange.key(w), { open, opened });
    }
    this.markPlanned();
  }

  deliver(window: { start: string; end: string }, rows: RollupRow[]): void {
    this.rows.set(ProviderRollupExchange.key(window), rows);
    this.open(window);
  }

  /** The line-items window is committed (or will not be in this run). */
  open(window: { start: string; end: string }): void {
    this.gates.get(ProviderRollupExchange.key(window))?.open();
  }

  /** The line-items stream ended, whatever the outcome: nobody waits any longer. */
  openAll(): void {
    this.markPlanned();
    for (const gate of this.gates.values()) gate.open();
  }

  /** The provider view of `window` the line-items check fetched, once that window is done; null when there is none. */
  async take(window: { start: string; end: string }): Promise<RollupRow[] | null> {
    await this.planned;
    const key = ProviderRollupExchange.key(window);
    await this.gates.get(key)?.opened;
    const rows = this.rows.get(key) ?? null;
    this.rows.delete(key);
    return rows;
  }
}

/** A window's totals for its check: gathered while its pages came when exact, else read back from its spool. */
export type WindowTotals = () => Promise<readonly Total[]>;

/** Checks a fetched line-items window against its provider rollups: the recheck's for an older date, else fetched now (after the last page). */
export async function checkLineItemsWindow(
  ctx: SyncContext,
  window: { start: string; end: string },
  windowTotals: WindowTotals,
): Promise<Mismatch[]> {
  const rows =
    ctx.checks.onHand?.take('check', 'provider', window) ??
    (await ctx.client.rollups({ startDate: window.start, endDate: window.end, groupBy: 'provider' }));
  ctx.checks.providerRollups?.deliver(window, rows);
  const items = await windowTotals();
  const rollups = rows
    .filter((r) => r.date >= window.start && r.date <= window.end)
    .map((r) => ({ date: r.date, key: r.provider_type ?? '', amount: Number(r.cost_usd) }));
  return compareTotals(items, rollups);
}

/** Checks that a fetched rollups window's three views agree in total per date (provider against service and category). */
export async function checkRollupsWindow(
  _ctx: SyncContext,
  _window: { start: string; end: string },
  windowTotals: WindowTotals,
): Promise<Mismatch[]> {
  const totals = await windowTotals();
  const view = (groupBy: string) => totals.filter((t) => t.key === groupBy).map((t) => ({ date: t.date, key: 'total', amount: t.amount }));
  const provider = view('provider');
  return [
    ...compareTotals(provider, view('service')).map((m) => ({ ...m, key: 'provider vs service' })),
    ...compareTotals(provider, view('category')).map((m) => ({ ...m, key: 'provider vs category' })),
  ];
}
