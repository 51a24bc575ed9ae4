/**
 * Three runners started at once, each with its own source and its warehouse published in the bucket,
 * committing to one bucket's Iceberg tables through a proxy that applies a conditional write and then
 * resets the connection instead of answering (the SDK sends it again, and the retry meets the object
 * the first try made). A clean round counts the conditional writes; then each round loses every
 * STRIDE-th of them, from a different offset, so every conditional write of a round (the probe, the
 * leases, each table's metadata creates, the published warehouses) has its answer lost in turn.
 * Every runner exits 0; every table equals each warehouse; no file a retained snapshot names is missing.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { workingCopyPath } from '../../src/storage/working-copy.js';
import { cli, spanFlags, tableDigest, withEmulator, withTempDir } from '../support/helpers.js';
import { icebergDifferences, icebergFileCheck } from '../support/iceberg.js';
import { lostAnswerProxy, useRgw } from '../support/s3.js';
import { sourcesConfig, workspaceKeys } from '../support/kill-loop.js';

const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };
const SPAN = { startDate: '2025-06-01', endDate: '2025-06-30' } as const;
const s3 = useRgw();
/** Rounds with lost answers: the Nth conditional write of a round is lost in the round whose offset is N mod STRIDE. */
const STRIDE = Number(process.env.COSTSYNC_LOST_STRIDE ?? 5);

describe('conditional writes whose answer was lost, three runners sharing a bucket (slow tier)', () => {
  it(`every conditional write lost in turn (every ${STRIDE}th of a round, ${STRIDE} rounds): all exit 0, every table exact, nothing a snapshot names missing`, async () => {
    const bucket = 'lost-runners';
    await s3.createBucket(bucket);
    const names = ['eu', 'us', 'apac'];
    const proxy = await lostAnswerProxy(s3.endpoint);
    try {
      await withEmulator(
        {
          ...SPAN,
          rowsPerDay: 30,
          clock,
          anomaliesPerDay: 1,
          restatement: { days: 30, changeRate: 0.3, deleteRate: 0.05, addRate: 0.1 },
          keys: workspaceKeys(names),
        },
        async (emulator) => {
          await withTempDir(async (dir) => {
            const { config, env } = sourcesConfig(dir, emulator.url, names, s3.env(proxy.endpoint));
            const db = (w: string) => `s3://${bucket}/wh/${w}.duckdb`;
            const state = (w: string) => join(dir, w, 'state');
            const runner = (w: string) =>
              cli(
                [
                  'sync',
                  '--config',
                  config,
                  '--source',
                  w,
                  '--db',
                  db(w),
                  '--state-dir',
                  state(w),
                  '--format',
                  'iceberg',
                  '--out',
                  `s3://${bucket}/lake`,
                  ...spanFlags(10, { span: SPAN, rateLimit: false }),
                  '--lookback-days',
                  '30',
                  '--iceberg-retention',
                  '0s',
                  '--log-format',
                  'json',
                ],
                env,
              );
            // Each table read through icebird per source takes seconds: the first and the last rounds compare every
            // table's rows, the others line items and the run table (a lost commit shows there; a lost file, in the file check).
            const round = async (label: string, everyTable: boolean, lose: (n: number) => boolean) => {
              proxy.lose(lose);
              const started = Date.now();
              const results = await Promise.all(names.map(runner));
              const ran = Date.now() - started;
              for (const [i, r] of results.entries())
                expect({ label, runner: names[i], code: r.code }, r.stderr).toEqual({ label, runner: names[i], code: 0 });
              for (const w of names) {
                const work = workingCopyPath(state(w), db(w));
                const diff = await icebergDifferences(work, `s3://${bucket}/lake`, {
                  sources: [w],
                  s3: s3.client,
                  ...(!everyTable && { tables: ['line_items', 'sync_runs'] }),
                });
                for (const [table, d] of Object.entries(diff))
                  expect({ label, w, table, ...d }).toEqual({ label, w, table, rows: d.rows, missing: 0, extra: 0 });
                await s3.download(bucket, `wh/${w}.duckdb`, join(dir, label, `${w}.duckdb`));
                expect(await tableDigest(join(dir, label, `${w}.duckdb`))).toEqual(await tableDigest(work));
              }
              await s3.download(bucket, 'lake/', join(dir, label, 'lake'));
              expect((await icebergFileCheck(join(dir, label, 'lake'), `s3://${bucket}/lake`)).missing).toEqual([]);
              console.log(`${label}: runners ${ran} ms, checks ${Date.now() - started - ran} ms`);
              return proxy.counts().conditional;
            };
            const writes = await round('clean', true, () => false);
            expect(writes).toBeGreaterThan(STRIDE * 3);
            for (let offset = 0; offset < STRIDE; offset++) {
              emulator.restate();
              const before = proxy.counts().lost;
              await round(`offset-${offset}`, offset === STRIDE - 1, (n) => n % STRIDE === offset);
              expect(proxy.counts().lost - before).toBeGreaterThan(0);
            }
            console.log(
              `lost-answers-runners: ${writes} conditional writes in the clean round, ${proxy.counts().lost} answers lost over ${STRIDE} rounds`,
            );
          });
        },
      );
    } finally {
      await proxy.close();
    }
  }, 600_000);
});
