import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { addDays, utcDate } from '../../src/dates.js';
import { CLI, raw } from '../support/helpers.js';

describe('costsync emulator (CLI)', () => {
  it('prints its URL as the first line and serves the API until SIGTERM; --days sets how far back its data goes', async () => {
    const child = spawn(
      process.execPath,
      [
        CLI,
        'emulator',
        '--port',
        '0',
        '--seed',
        '3',
        '--rows-per-day',
        '10',
        '--days',
        '730',
        '--ingest-refuse-service',
        'Refused',
        '--ingest-skip-service',
        'Quiet',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const lines = createInterface({ input: child.stdout });
    const [first] = (await once(lines, 'line')) as [string];
    expect(first).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const res = await raw(first, '/api/v1/public/anomalies?limit=2');
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(2);
    // 729 days back is the first day of data; the day before has none.
    const day = (back: number) => addDays(utcDate(Date.now()), -back);
    const items = async (date: string) =>
      (await raw(first, `/api/v1/public/line-items?start_date=${date}&end_date=${date}&limit=5`)).body.data;
    expect(await items(day(729))).toHaveLength(5);
    expect(await items(day(730))).toHaveLength(0);
    // --ingest-refuse-service and --ingest-skip-service: rows of those services refused (named) and skipped (counted).
    const ingest = await raw(first, '/api/v1/public/ingest/focus/demo-connection', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        rows: ['Refused GPU', 'Quiet Storage', 'Compute'].map((ServiceName) => ({
          ChargePeriodStart: day(3),
          BilledCost: 1,
          ServiceName,
          ChargeCategory: 'Usage',
        })),
      }),
    });
    expect(ingest.body.data).toMatchObject({ accepted: true, row_count: 3, cost_line_item_count: 1, skipped: 2 });
    expect(ingest.body.data.errors).toEqual([
      { row: 0, column: null, message: 'ServiceName "Refused GPU" is not accepted on this connection (it starts with "Refused")' },
    ]);
    child.kill('SIGTERM');
    const [code] = (await once(child, 'exit')) as [number];
    expect(code).toBe(0);
  });

  it('exits 2 with a message naming the flag for bad values and unknown commands', () => {
    const bad = spawnSync(process.execPath, [CLI, 'emulator', '--error-rate', '7'], { encoding: 'utf8' });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/--error-rate must be a fraction from 0 to 1/);
    const unknown = spawnSync(process.execPath, [CLI, 'frobnicate'], { encoding: 'utf8' });
    expect(unknown.status).toBe(2);
    const keys = spawnSync(process.execPath, [CLI, 'emulator', '--keys', '/nonexistent/keys.json'], { encoding: 'utf8' });
    expect(keys.status).toBe(2);
    expect(keys.stderr).toMatch(/--keys \/nonexistent\/keys.json: cannot read the file/);
  });

  it('shows help with the emulator options', () => {
    const help = spawnSync(process.execPath, [CLI, 'emulator', '--help'], { encoding: 'utf8' });
    expect(help.status).toBe(0);
    for (const flag of ['--port', '--seed', '--rows-per-day', '--rate-limit', '--anomaly-order', '--error-rate', '--restate-every']) {
      expect(help.stdout).toContain(flag);
    }
  });
});
