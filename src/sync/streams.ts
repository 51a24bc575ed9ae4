/**
 * The windowed streams, declared as data: their tables, columns, SQL, how to fetch a page, and the
 * requests a plan of windows takes (asked by `sync --dry-run`).
 * Rollups page through the three `group_by` values, so both streams share one engine.
 */
import type { Admit, ApiClient } from '../api/client.js';
import { GROUP_BYS } from '../api/types.js';
import type { SyncConfig } from '../config.js';
import { LINE_ITEMS, ROLLUPS_DAILY, type TableSpec } from '../storage/tables.js';
import type { Checks, StreamName, SyncContext } from './context.js';
import { expectedPages, wantsRollupTotals, type DayBasis, type RequestEstimate } from './estimate.js';
import { servedFrom, type HeldSpan } from './rollups-on-hand.js';
import { checkLineItemsWindow, checkRollupsWindow, type Mismatch, type WindowTotals } from './reconcile.js';

export interface FetchedPage {
  records: Record<string, unknown>[];
  /** Cursor for the next page; null when the window is complete. */
  nextCursor: string | null;
}

/** What is known of a stream's windows still to fetch, before the run: what the stream counts its requests from. */
export interface WindowsToFetch {
  /** Each window, as what is known of its dates (rows stored, the provider rollups' dollars). */
  days: readonly (readonly DayBasis[])[];
  /** The dollars a line item averages, to price dates by their rollup dollars; null: not known. */
  usdPerRow: number | null;
  /** The plan goes on from an unfinished one. */
  resumed: boolean;
  /** Per window, the pages an earlier run already staged of it and whether all are (a killed run's): not asked again. */
  saved?: readonly { page: number; fetched: boolean }[];
}

/** How a run checks its windows, from its settings. */
export interface RunChecks {
  /** Each window is checked against the API's rollups before it commits (`--reconcile` not off). */
  checked: boolean;
  /** The line items' checks fetch the provider rollups and the rollups stream takes them (both streams synced and checked). */
  providerRollupsShared: boolean;
  /** The span the recheck's rollups answer for (`RollupsOnHand`): windows inside it ask nothing for their rollups or checks. */
  held?: HeldSpan | null;
}

/** Whether `consumer` takes a window of these days from the recheck's rollups. Pure. */
function served(days: readonly DayBasis[], run: RunChecks, consumer: 'rollups' | 'check'): boolean {
  return run.held != null && days.length > 0 && servedFrom(run.held, consumer, days[0]!.date, days.at(-1)!.date);
}

/** Of `days`' windows, how many `consumer` takes from the recheck's rollups. Pure. */
function servedWindows(days: readonly (readonly DayBasis[])[], run: RunChecks, consumer: 'rollups' | 'check'): number {
  return days.filter((w) => served(w, run, consumer)).length;
}

/** How a run's settings check its windows: the run and its dry run alike. Pure. */
export function runChecks(config: Pick<SyncConfig, 'reconcile' | 'streams'>): RunChecks {
  const checked = config.reconcile !== 'off';
  return { checked, providerRollupsShared: checked && config.streams.includes('line_items') && config.streams.includes('rollups') };
}

export interface WindowedStreamSpec {
  name: Exclude<StreamName, 'anomalies'>;
  /** The table it fills: its name, date column and fields (storage/tables.ts). */
  table: TableSpec;
  /** The field that identifies a record, for spotting duplicates; null: always deduplicate. */
  idField: string | null;
  /** How progress knows the plan's size: estimated from daily totals (line items), or a fixed number of pages a window. */
  size: { estimate: 'daily-totals'; amountField: string } | { pagesPerWindow: number };
  /** Whether cursors come from the server (and so can loop or expire). */
  serverCursors: boolean;
  /**
   * Its pages are large (up to 1,000 records), so each takes one of the run's page slots. The rollups'
   * pages are small, and one may wait for the line items' check (the provider-rollup exchange): taking
   * a slot there could hold every slot while the line items wait for one.
   */
  takesPageSlot: boolean;
  /**
   * The stream's own SQL files: the change counts, and the replace (with and without dedupe); `moved`, for
   * records with an id, deletes the window's new ids stored at other dates. The window count and delete are the table spec's templates.
   */
  sql: { diff: string; insertWindow: string; insertUnique: string; moved?: string };
  /** `admit`: waited on once the request may go (the run's page slots; see `takesPageSlot`). */
  fetchPage(
    client: ApiClient,
    window: { start: string; end: string },
    cursor: string | null,
    shared?: Checks,
    admit?: Admit,
  ): Promise<FetchedPage>;
  /** The check a fetched window must pass before it commits (see reconcile.ts), and what its two sides are. */
  check: {
    run(ctx: SyncContext, window: { start: string; end: string }, windowTotals: WindowTotals): Promise<Mismatch[]>;
    /** The SQL that reads a window's totals back from its spool, when they were not gathered as its pages came (`paged`). */
    spoolTotals: string;
    /**
     * The fields whose amount per date and key the check compares, summed while the pages come so the check
     * need not read the spool. `distinctBy`, for a stream without ids: the fields its staging deduplicates
     * on (the last record of each wins), so a repeated record replaces rather than adds.
     */
    paged?: { keyField: string; amountField: string; distinctBy?: readonly string[] };
    sides: [string, string];
    /** This stream's checks fetch the provider rollups that the rollups stream then reuses. */
    deliversProviderRollups: boolean;
  };
  /**
   * The requests a run makes for `windows` (its pages, checks and estimate), and how that is known for a person
   * (null: from what was read of the dates). `sync --dry-run` asks the stream rather than restating it. Pure.
   */
  estimateRequests(windows: WindowsToFetch, run: RunChecks): RequestEstimate & { basis: string | null; endpoints?: string };
}

export const LINE_ITEM_PAGE_LIMIT = 1000;

export const lineItemsStream: WindowedStreamSpec = {
  name: 'line_items',
  table: LINE_ITEMS,
  idField: 'id',
  size: { estimate: 'daily-totals', amountField: 'net_amount_usd' },
  serverCursors: true,
  takesPageSlot: true,
  sql: {
    diff: 'sync/line_items_diff',
    insertWindow: 'sync/line_items_insert_window',
    insertUnique: 'sync/line_items_insert_unique',
    moved: 'sync/line_items_delete_moved',
  },
  check: {
    run: checkLineItemsWindow,
    spoolTotals: 'sync/line_items_window_totals',
    sides: ['line items', 'provider rollup'],
    deliversProviderRollups: true,
    paged: { keyField: 'provider_type', amountField: 'net_amount_usd' },
  },
  async fetchPage(client, window, cursor, _shared, admit) {
    const page = await client.lineItems({
      startDate: window.start,
      endDate: window.end,
      limit: LINE_ITEM_PAGE_LIMIT,
      cursor,
      ...(admit ? { admit } : {}),
    });
    return { records: page.data, nextCursor: page.hasMore ? page.nextCursor : null };
  },
  estimateRequests({ days, usdPerRow, resumed, saved }, run) {
    const pages = expectedPages(days, usdPerRow, LINE_ITEM_PAGE_LIMIT, saved);
    const toFetch = days.length - (saved?.filter((w) => w.fetched).length ?? 0);
    // Each window's check fetches its provider rollups (one request), but an older date's, which the recheck's answer serves.
    const checks = run.checked ? days.length - servedWindows(days, run, 'check') : 0;
    // The run's progress display asks the provider rollups once for its own estimate (windowed.ts, `dayBasis`).
    const storedDates = days.flat().filter((d) => d.storedRows !== null && d.storedRows > 0).length;
    const estimate = wantsRollupTotals(days.length, resumed, storedDates) ? 1 : 0;
    return {
      requests: pages === null ? null : pages + checks + estimate,
      minRequests: toFetch + checks + estimate,
      basis: null,
      // Counted with this stream, though they go to the rollups endpoint: a reader of the API's logs looks for them there.
      ...(checks + estimate > 0 && {
        endpoints: `${checks + estimate} of them to the rollups endpoint: ${[checks > 0 ? `${checks} for the windows' checks` : '', estimate > 0 ? '1 for the progress estimate' : ''].filter(Boolean).join(', ')}`,
      }),
    };
  },
};

export const rollupsStream: WindowedStreamSpec = {
  name: 'rollups',
  table: ROLLUPS_DAILY,
  idField: null,
  size: { pagesPerWindow: GROUP_BYS.length },
  serverCursors: false,
  takesPageSlot: false,
  sql: { diff: 'sync/rollups_diff', insertWindow: 'sync/rollups_insert_window', insertUnique: 'sync/rollups_insert_window' },
  check: {
    run: checkRollupsWindow,
    spoolTotals: 'sync/rollups_window_totals',
    sides: ['provider view', 'other view'],
    deliversProviderRollups: false,
    // As sql/sync/rollups_staged.sql partitions its rows (a test holds the two together).
    paged: { keyField: 'group_by', amountField: 'cost_usd', distinctBy: ['date', 'group_by', 'provider_type', 'service', 'category'] },
  },
  async fetchPage(client, window, cursor, shared) {
    // The "cursor" is the index of the next group_by.
    const index = cursor === null ? 0 : Number(cursor);
    const groupBy = GROUP_BYS[index]!;
    // The recheck's answer when it spans the window; else the provider view the line-items check fetched after that window's last page.
    const onHand = shared?.onHand?.take('rollups', groupBy, window) ?? null;
    const exchange = shared?.providerRollups;
    const reused = onHand ?? (groupBy === 'provider' && exchange ? await exchange.take(window) : null);
    const rows = reused ?? (await client.rollups({ startDate: window.start, endDate: window.end, groupBy }));
    const records = rows.map((r) => ({ ...r, group_by: groupBy }));
    return {
      records,
      nextCursor: index + 1 < GROUP_BYS.length ? String(index + 1) : null,
    };
  },
  estimateRequests({ days, saved }, run) {
    // Its pages a window as `size` declares them, less the provider view when the line items' check fetched it (fetchPage),
    // and less the groupings an earlier run staged (a page a grouping, the provider view first).
    // (A stream sized otherwise would count its least, one a window.)
    const pages = 'pagesPerWindow' in this.size ? this.size.pagesPerWindow : 1;
    const perWindow = pages - (run.providerRollupsShared ? 1 : 0);
    const fromRecheck = servedWindows(days, run, 'rollups');
    const left = (i: number) => {
      const w = saved?.[i];
      if (w === undefined || w.page === 0) return perWindow;
      return w.fetched ? 0 : Math.max(0, pages - w.page);
    };
    const requests = days.reduce((n, w, i) => n + (served(w, run, 'rollups') ? 0 : left(i)), 0);
    return {
      requests,
      minRequests: requests,
      basis: `${perWindow} request(s) a window${run.providerRollupsShared ? ": the provider view comes with the line items' check" : ''}${fromRecheck > 0 ? `; ${fromRecheck === days.length ? 'all' : fromRecheck} from the recheck's answers` : ''}`,
    };
  },
};
