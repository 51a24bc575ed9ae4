/**
 * The windowed streams, declared as data: their tables, columns, SQL and how to fetch a page.
 * Rollups page through the three `group_by` values, so both streams share one engine.
 */
import type { ApiClient } from '../api/client.js';
import { GROUP_BYS } from '../api/types.js';
import type { SpoolColumn } from '../storage/spool.js';
import type { StreamName, SyncContext } from './context.js';
import { checkLineItemsWindow, checkRollupsWindow, type Mismatch, type ProviderRollupExchange } from './reconcile.js';

export interface FetchedPage {
  records: Record<string, unknown>[];
  /** Cursor for the next page; null when the window is complete. */
  nextCursor: string | null;
}

export interface WindowedStreamSpec {
  name: Exclude<StreamName, 'anomalies'>;
  table: string;
  /** The column holding the record's date, checked against the window. */
  dateField: string;
  /** The field that identifies a record, for spotting duplicates; null: always deduplicate. */
  idField: string | null;
  /** How progress knows the plan's size: estimated from daily totals (line items), or a fixed number of pages a window. */
  size: { estimate: 'daily-totals'; amountField: string } | { pagesPerWindow: number };
  /** Whether cursors come from the server (and so can loop or expire). */
  serverCursors: boolean;
  /** The spec's fields, as spooled and loaded; any other field goes into `extra`. */
  columns: readonly SpoolColumn[];
  /** SQL files: the window's current row count, the change counts, and the replace (with and without dedupe). */
  sql: {
    count: string; diff: string; deleteWindow: string; insertWindow: string; insertUnique: string;
    /** For a full refresh: rows outside the synced dates, counted then deleted. */
    countOutside: string; deleteOutside: string;
  };
  fetchPage(client: ApiClient, window: { start: string; end: string }, cursor: string | null, shared?: ProviderRollupExchange): Promise<FetchedPage>;
  /** The check a fetched window must pass before it commits (see reconcile.ts), and what its two sides are. */
  check: {
    run(ctx: SyncContext, window: { start: string; end: string }, spoolDir: string): Promise<Mismatch[]>;
    sides: [string, string];
    /** This stream's checks fetch the provider rollups that the rollups stream then reuses. */
    deliversProviderRollups: boolean;
  };
}

export const LINE_ITEM_PAGE_LIMIT = 1000;

export const lineItemsStream: WindowedStreamSpec = {
  name: 'line_items',
  table: 'line_items',
  dateField: 'usage_date',
  idField: 'id',
  size: { estimate: 'daily-totals', amountField: 'net_amount_usd' },
  columns: [
    { name: 'id', type: 'VARCHAR' },
    { name: 'usage_date', type: 'DATE' },
    { name: 'provider_type', type: 'VARCHAR' },
    { name: 'provider_service', type: 'VARCHAR' },
    { name: 'net_amount_usd', type: 'DOUBLE' },
    { name: 'currency_original', type: 'VARCHAR' },
    { name: 'project_id', type: 'VARCHAR' },
    { name: 'user_email', type: 'VARCHAR' },
  ],
  serverCursors: true,
  sql: { count: 'sync/line_items_count_window', diff: 'sync/line_items_diff', deleteWindow: 'sync/line_items_delete_window', insertWindow: 'sync/line_items_insert_window', insertUnique: 'sync/line_items_insert_unique',
    countOutside: 'sync/line_items_count_outside', deleteOutside: 'sync/line_items_delete_outside' },
  check: { run: checkLineItemsWindow, sides: ['line items', 'provider rollup'], deliversProviderRollups: true },
  async fetchPage(client, window, cursor) {
    const page = await client.lineItems({ startDate: window.start, endDate: window.end, limit: LINE_ITEM_PAGE_LIMIT, cursor });
    return { records: page.data, nextCursor: page.hasMore ? page.nextCursor : null };
  },
};

export const rollupsStream: WindowedStreamSpec = {
  name: 'rollups',
  table: 'rollups_daily',
  dateField: 'date',
  idField: null,
  size: { pagesPerWindow: GROUP_BYS.length },
  columns: [
    { name: 'date', type: 'DATE' },
    { name: 'group_by', type: 'VARCHAR' },
    { name: 'provider_type', type: 'VARCHAR' },
    { name: 'service', type: 'VARCHAR' },
    { name: 'category', type: 'VARCHAR' },
    { name: 'cost_usd', type: 'DOUBLE' },
  ],
  serverCursors: false,
  sql: { count: 'sync/rollups_count_window', diff: 'sync/rollups_diff', deleteWindow: 'sync/rollups_delete_window', insertWindow: 'sync/rollups_insert_window', insertUnique: 'sync/rollups_insert_window',
    countOutside: 'sync/rollups_count_outside', deleteOutside: 'sync/rollups_delete_outside' },
  check: { run: checkRollupsWindow, sides: ['provider view', 'other view'], deliversProviderRollups: false },
  async fetchPage(client, window, cursor, shared) {
    // The "cursor" is the index of the next group_by.
    const index = cursor === null ? 0 : Number(cursor);
    const groupBy = GROUP_BYS[index]!;
    // The provider view the line-items check fetched after that window's last page, when there is one.
    const reused = groupBy === 'provider' && shared ? await shared.take(window) : null;
    const rows = reused ?? await client.rollups({ startDate: window.start, endDate: window.end, groupBy });
    const records = rows.map((r) => ({ ...r, group_by: groupBy }));
    return {
      records,
      nextCursor: index + 1 < GROUP_BYS.length ? String(index + 1) : null,
    };
  },
};
