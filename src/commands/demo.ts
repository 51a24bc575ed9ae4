/**
 * `costsync demo`: starts the emulator on a free loopback port with a raised rate limit, syncs 90
 * days into ./demo.duckdb (a fresh one each time), prints spend by provider and open anomalies, and
 * writes ./demo-report.html.
 */
import { rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { resolveSyncConfig } from '../config.js';
import { addDays, utcDate } from '../dates.js';
import { ExitCode } from '../errors.js';
import { createLogger } from '../log.js';
import { createProgress, summaryTable } from '../progress.js';
import { openReadOnly } from '../storage/duckdb.js';
import { runSync } from '../sync/runner.js';
import { formatTable } from '../table.js';
import { processIo, type CommandIo } from './common.js';

export interface DemoOptions {
  db: string;
  stateDir: string;
  days: number;
  rowsPerDay: number;
  /** Where the HTML spend report is written. */
  report: string;
}

export const DEMO_DEFAULTS: DemoOptions = {
  db: './demo.duckdb',
  stateDir: './state/demo',
  days: 90,
  rowsPerDay: 500,
  report: './demo-report.html',
};

export async function runDemo(options: Partial<DemoOptions> = {}, io: CommandIo = processIo()): Promise<ExitCode> {
  const o = { ...DEMO_DEFAULTS, ...options };
  const rate = 60_000;
  // Loaded here, not at the top: the emulator is a test double beside the product, never in a sync's module graph.
  const { DEMO_KEY, startEmulator } = await import('../emulator/index.js');
  const emulator = await startEmulator({ port: 0, rateLimit: rate, rowsPerDay: o.rowsPerDay, seed: 42 });
  try {
    for (const path of [o.db, `${o.db}.wal`, o.stateDir]) rmSync(path, { recursive: true, force: true });
    const until = utcDate(io.now());
    io.stdout(`Emulator at ${emulator.url} (key ${DEMO_KEY}); syncing ${o.days} days into ${o.db}\n`);
    // The same resolution as `costsync sync`, so the demo runs with the defaults a user gets.
    const config = resolveSyncConfig({
      flags: {
        'base-url': emulator.url,
        db: o.db,
        'state-dir': o.stateDir,
        'start-date': addDays(until, -(o.days - 1)),
        until,
        'rate-limit': rate,
      },
      env: { COSTSYNC_API_KEY: DEMO_KEY },
      file: {},
      nowMs: io.now(),
    });
    const logger = createLogger({ format: 'pretty', write: (l) => io.stderr(`${l}\n`) });
    const progress = createProgress({ live: io.isTTY, logger, write: io.stderr, requestsPerMinute: rate, now: io.now });
    const summary = await runSync({ config, logger, progress });
    progress.finish();
    io.stdout(`\n${summaryTable(summary.streams)}\n`);
    if (summary.outcome !== 'success') {
      io.stderr(`The demo sync did not finish: ${String((summary.error as Error | undefined)?.message ?? summary.outcome)}\n`);
      return ExitCode.FAILED;
    }
    const wh = await openReadOnly(o.db);
    const report = resolve(o.report);
    try {
      io.stdout(`\nSpend by provider, ${config.startDate}..${until}\n${formatTable(await wh.query('demo/spend_by_provider'))}\n`);
      io.stdout(`\nOpen anomalies (newest first)\n${formatTable(await wh.query('demo/open_anomalies'))}\n`);
      const { writeReport } = await import('../report/report.js');
      await writeReport(wh, { out: report, from: null, to: null, now: new Date(io.now()) });
    } finally {
      wh.close();
    }
    io.stdout(
      `\n${emulator.requestLog.total} requests to the emulator. Open ${join(o.db)} with DuckDB, or: costsync query --db ${join(o.db)} --list\n`,
    );
    io.stdout(`Spend report: ${report}\n`);
    return ExitCode.OK;
  } finally {
    await emulator.close();
  }
}
