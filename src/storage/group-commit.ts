/**
 * Group commit: pages that arrive while a transaction is running are appended together in the
 * next one. Each caller's promise resolves only once its own rows are committed, so progress is
 * still saved after the data it describes; but concurrent windows share one COMMIT (and one WAL
 * sync) instead of paying for one each.
 */
import type { DuckDBAppender } from '@duckdb/node-api';
import type { Warehouse } from './duckdb.js';

interface Pending {
  table: string;
  write: (appender: DuckDBAppender) => void;
}

export interface GroupCommitter {
  /** Appends rows in the next group transaction; resolves when that transaction has committed. */
  append(table: string, write: (appender: DuckDBAppender) => void): Promise<void>;
}

export function createGroupCommitter(warehouse: Warehouse): GroupCommitter {
  // The group still open to newcomers: its transaction is queued but has not started.
  let open: { items: Pending[]; committed: Promise<void> } | null = null;
  return {
    append(table, write) {
      if (open === null) {
        const group: { items: Pending[]; committed: Promise<void> } = { items: [], committed: Promise.resolve() };
        group.committed = warehouse.transaction(async () => {
          if (open === group) open = null;
          for (const item of group.items) await warehouse.append(item.table, item.write);
        });
        open = group;
      }
      open.items.push({ table, write });
      return open.committed;
    },
  };
}
