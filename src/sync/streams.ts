/**
 * The windowed streams, declared as data: their tables, columns, SQL and how to fetch a page.
 * Rollups page through the three `group_by` values, so both streams share one engine.
 */
import type { ApiClient } from '../api/client.js';
import { GROUP_BYS } from '../api/types.js';
import type { Column } from './columns.js';
import type { StreamName } from './context.js';

export interface FetchedPage {
  records: Record<string, unknown>[];
  /** Cursor for the next page; null when the window is complete. */
  nextCursor: string | null;
}

export interface WindowedStreamSpec {
  name: Exclude<StreamName, 'anomalies'>;
  table: string;
  stage: string;
  /** The column holding the record's date, checked against the window. */
  dateField: string;
  /** Whether cursors come from the server (and so can loop or expire). */
  serverCursors: boolean;
  columns: readonly Column[];
  sql: { diff: string; deleteWindow: string; insertWindow: string };
  fetchPage(client: ApiClient, window: { start: string; end: string }, cursor: string | null): Promise<FetchedPage>;
}

export const LINE_ITEM_PAGE_LIMIT = 1000;

export const lineItemsStream: WindowedStreamSpec = {
  name: 'line_items',
  table: 'line_items',
  stage: '_stage_line_items',
  dateField: 'usage_date',
  serverCursors: true,
  columns: [
    { name: 'id', kind: 'varchar' },
    { name: 'usage_date', kind: 'date' },
    { name: 'provider_type', kind: 'varchar' },
    { name: 'provider_service', kind: 'varchar' },
    { name: 'net_amount_usd', kind: 'double' },
    { name: 'currency_original', kind: 'varchar' },
    { name: 'project_id', kind: 'varchar' },
    { name: 'user_email', kind: 'varchar' },
  ],
  sql: { diff: 'sync/line_items_diff', deleteWindow: 'sync/line_items_delete_window', insertWindow: 'sync/line_items_insert_window' },
  async fetchPage(client, window, cursor) {
    const page = await client.lineItems({ startDate: window.start, endDate: window.end, limit: LINE_ITEM_PAGE_LIMIT, cursor });
    return { records: page.data, nextCursor: page.hasMore ? page.nextCursor : null };
  },
};

export const rollupsStream: WindowedStreamSpec = {
  name: 'rollups',
  table: 'rollups_daily',
  stage: '_stage_rollups_daily',
  dateField: 'date',
  serverCursors: false,
  columns: [
    { name: 'date', kind: 'date' },
    { name: 'group_by', kind: 'varchar' },
    { name: 'provider_type', kind: 'varchar' },
    { name: 'service', kind: 'varchar' },
    { name: 'category', kind: 'varchar' },
    { name: 'cost_usd', kind: 'double' },
  ],
  sql: { diff: 'sync/rollups_diff', deleteWindow: 'sync/rollups_delete_window', insertWindow: 'sync/rollups_insert_window' },
  async fetchPage(client, window, cursor) {
    // The "cursor" is the index of the next group_by.
    const index = cursor === null ? 0 : Number(cursor);
    const groupBy = GROUP_BYS[index]!;
    const rows = await client.rollups({ startDate: window.start, endDate: window.end, groupBy });
    return {
      records: rows.map((r) => ({ ...r, group_by: groupBy })),
      nextCursor: index + 1 < GROUP_BYS.length ? String(index + 1) : null,
    };
  },
};
