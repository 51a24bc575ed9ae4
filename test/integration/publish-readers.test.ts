import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface, type Interface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { run, withEmulator, withTempDir, SPAN, syncCommand } from '../support/helpers.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };
const env = { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC' };
const FIXTURE = fileURLToPath(new URL('../fixtures/focus-1.2-ai-gateway.csv', import.meta.url));

// The syncs, pushes and queries run in this process (`run`): what matters is that the readers are other
// processes, holding the published file open while costsync writes.

/**
 * Another OS process (a notebook, a BI tool) that opens `db` read-only and keeps it open, answering
 * one SQL line at a time with its first value.
 */
async function readerProcess(db: string): Promise<{ value(sql: string): Promise<unknown>; close(): Promise<void> }> {
  const child: ChildProcess = spawn(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `
    import { DuckDBInstance } from '@duckdb/node-api';
    import { createInterface } from 'node:readline';
    const db = await DuckDBInstance.create(${JSON.stringify(db)}, { access_mode: 'READ_ONLY' });
    const c = await db.connect();
    console.log('open');
    for await (const line of createInterface({ input: process.stdin })) {
      try {
        const rows = (await c.runAndReadAll(line)).getRows();
        console.log(JSON.stringify({ value: String(rows[0]?.[0] ?? null) }));
      } catch (e) {
        console.log(JSON.stringify({ error: e.message }));
      }
    }
  `,
    ],
    { cwd: process.cwd(), stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const lines: Interface = createInterface({ input: child.stdout! });
  const next = () => new Promise<string>((resolve) => lines.once('line', resolve));
  const opened = await next();
  if (opened !== 'open') throw new Error(`reader did not open ${db}: ${opened}`);
  return {
    async value(sql) {
      const answer = next();
      child.stdin!.write(`${sql}\n`);
      const parsed = JSON.parse(await answer) as { value?: string; error?: string };
      if (parsed.error) throw new Error(parsed.error);
      return parsed.value;
    },
    async close() {
      child.stdin!.end();
      if (child.exitCode === null) await once(child, 'exit');
    },
  };
}

/** One value from a reader that opens `db`, reads and closes. */
async function readOnce(db: string, sql: string): Promise<unknown> {
  const reader = await readerProcess(db);
  try {
    return await reader.value(sql);
  } finally {
    await reader.close();
  }
}

const COUNT = 'SELECT count(*) FROM line_items';

describe('readers never wait', () => {
  it('a reader holding --db through a whole sync: the sync exits 0, readers mid-run see the previous snapshot, new readers after it the new one', async () => {
    let hold: (() => Promise<void>) | null = null;
    let lineItemRequests = 0;
    const seen: Record<string, unknown> = {};
    await withEmulator(
      {
        ...SPAN,
        rowsPerDay: 200,
        clock,
        beforeReply: async ({ route }) => {
          if (route === 'line-items' && ++lineItemRequests === 3 && hold) await hold();
        },
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
            hold = async () => {
              // Mid-run: a new reader and `costsync query` both open --db and see the last complete snapshot.
              seen.reader = await readOnce(db, COUNT);
              const query = await run(['query', COUNT, '--db', db, '--format', 'json']);
              seen.queryCode = query.code;
              seen.query = query.stdout;
            };
            lineItemRequests = 0;
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

  it('--publish-interval 0 publishes after every window, so a long run is readable while it runs', async () => {
    let hold: (() => Promise<void>) | null = null;
    let lineItemRequests = 0;
    let midRun: unknown;
    await withEmulator(
      {
        ...SPAN,
        rowsPerDay: 100,
        clock,
        beforeReply: async ({ route }) => {
          if (route === 'line-items' && ++lineItemRequests === 3 && hold) await hold();
        },
      },
      async ({ url }) => {
        await withTempDir(async (dir) => {
          const db = join(dir, 'c.duckdb');
          hold = async () => {
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
