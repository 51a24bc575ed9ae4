// Readers of a run that publishes as it goes, in the slow tier (a `.slow.test.ts`):
// publish-readers.test.ts keeps a reader holding --db through a whole sync in `npm test`.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { midRunHook, readerProcess, readOnce } from '../support/readers.js';
import { run, withEmulator, withTempDir, SPAN, syncCommand } from '../support/helpers.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };
const env = { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC' };
const FIXTURE = fileURLToPath(new URL('../fixtures/focus-1.2-ai-gateway.csv', import.meta.url));
const COUNT = 'SELECT count(*) FROM line_items';

describe('readers never wait, while a run publishes', () => {
  it('--publish-interval 0 publishes after every window, so a long run is readable while it runs', async () => {
    const hook = midRunHook();
    let midRun: unknown;
    await withEmulator(
      {
        ...SPAN,
        rowsPerDay: 100,
        clock,
        beforeReply: hook.beforeReply,
      },
      async ({ url }) => {
        await withTempDir(async (dir) => {
          const db = join(dir, 'c.duckdb');
          hook.midRun = async () => {
            midRun = await readOnce(db, COUNT);
          };
          const result = await run(
            syncCommand(url, dir, [
              '--start-date',
              SPAN.startDate,
              '--until',
              SPAN.endDate,
              '--streams',
              'line_items',
              '--window-days',
              '5',
              '--concurrency',
              '1',
              '--publish-interval',
              '0',
              '--rate-limit',
              '100000',
              '--log-format',
              'json',
            ]),
            env,
          );
          expect(result.code).toBe(0);
          // 500 rows a window, one page each: the third request starts the third window.
          expect(midRun).toBe(String(2 * 500));
          const publishes = result.stderr
            .split('\n')
            .filter((l) => l.includes('"published '))
            .map((l) => JSON.parse(l));
          expect(publishes.length).toBe(6 + 1);
          for (const p of publishes) {
            expect(p.file).toBe(db);
            expect(p.bytes).toBeGreaterThan(0);
            expect(typeof p.seconds).toBe('number');
          }
          expect(await readOnce(db, 'SELECT publishes FROM sync_runs')).toBe('7');
        });
      },
    );
  });

  it('push publishes its ledger while a reader holds --db', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 20, clock }, async ({ url }) => {
      await withTempDir(async (dir) => {
        const db = join(dir, 'c.duckdb');
        const common = ['--base-url', url, '--db', db, '--state-dir', join(dir, 'state'), '--quiet'];
        expect(
          (await run(['sync', ...common, '--start-date', '2025-06-28', '--until', SPAN.endDate, '--rate-limit', '100000'], env)).code,
        ).toBe(0);
        const holder = await readerProcess(db);
        try {
          expect(await holder.value('SELECT count(*) FROM ingest_batches')).toBe('0');
          const push = await run(['push', ...common, '--connection', 'demo-connection', FIXTURE], env);
          expect(push.code).toBe(0);
          expect(await holder.value('SELECT count(*) FROM ingest_batches')).toBe('0');
          expect(Number(await readOnce(db, 'SELECT count(*) FROM ingest_batches'))).toBeGreaterThan(0);
          // The synced tables came through the push's publish unchanged.
          expect(await readOnce(db, COUNT)).toBe(await holder.value(COUNT));
        } finally {
          await holder.close();
        }
      });
    });
  });
});
