import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { midRunHook, readerProcess, readOnce } from '../support/readers.js';
import { run, withEmulator, withTempDir, SPAN, syncCommand } from '../support/helpers.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };
const env = { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC' };

// The syncs, pushes and queries run in this process (`run`): what matters is that the readers are other
// processes, holding the published file open while costsync writes.

const COUNT = 'SELECT count(*) FROM line_items';

describe('readers never wait', () => {
  it('a reader holding --db through a whole sync: the sync exits 0, readers mid-run see the previous snapshot, new readers after it the new one', async () => {
    const hook = midRunHook();
    const seen: Record<string, unknown> = {};
    await withEmulator(
      {
        ...SPAN,
        rowsPerDay: 200,
        clock,
        beforeReply: hook.beforeReply,
      },
      async ({ url }) => {
        await withTempDir(async (dir) => {
          const db = join(dir, 'c.duckdb');
          const args = (until: string) =>
            syncCommand(url, dir, [
              '--start-date',
              SPAN.startDate,
              '--until',
              until,
              '--window-days',
              '4',
              '--concurrency',
              '1',
              '--rate-limit',
              '100000',
              '--quiet',
            ]);
          expect((await run(args('2025-06-15'), env)).code).toBe(0);
          const holder = await readerProcess(db);
          try {
            expect(await holder.value(COUNT)).toBe(String(200 * 15));
            hook.midRun = async () => {
              // Mid-run: a new reader and `costsync query` both open --db and see the last complete snapshot.
              seen.reader = await readOnce(db, COUNT);
              const query = await run(['query', COUNT, '--db', db, '--format', 'json']);
              seen.queryCode = query.code;
              seen.query = query.stdout;
            };
            const second = await run(args(SPAN.endDate), env);
            expect(second.code).toBe(0);
            expect(seen.reader).toBe(String(200 * 15));
            expect(seen.queryCode).toBe(0);
            expect(JSON.parse(seen.query as string)).toEqual([{ 'count_star()': 200 * 15 }]);
            // The holder keeps its consistent old snapshot; a new open sees the new data.
            expect(await holder.value(COUNT)).toBe(String(200 * 15));
            expect(await readOnce(db, COUNT)).toBe(String(200 * 30));
            expect(await readOnce(db, 'SELECT publishes FROM sync_runs ORDER BY started_at DESC LIMIT 1')).toBe('1');
            expect(await readOnce(db, "SELECT count(*) FROM duckdb_tables() WHERE table_name LIKE '%stage%'")).toBe('0');
          } finally {
            await holder.close();
          }
        });
      },
    );
  });
});
