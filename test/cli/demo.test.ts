import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runDemo } from '../../src/commands/demo.js';
import { tableDigest, withTempDir } from '../support/helpers.js';

describe('costsync demo', () => {
  it('syncs from its own emulator into a fresh database and shows spend and open anomalies', async () => {
    await withTempDir(async (dir) => {
      let stdout = '';
      const io = {
        env: {},
        stdout: (t: string) => {
          stdout += t;
        },
        stderr: () => undefined,
        isTTY: false,
        now: () => Date.now(),
      };
      const options = {
        db: join(dir, 'demo.duckdb'),
        stateDir: join(dir, 'state'),
        days: 20,
        rowsPerDay: 50,
        report: join(dir, 'demo-report.html'),
      };
      expect(await runDemo(options, io)).toBe(0);
      expect(await runDemo(options, io)).toBe(0);
      expect(existsSync(options.db)).toBe(true);
      expect((await tableDigest(options.db)).line_items!.rows).toBe(20 * 50);
      expect(stdout).toMatch(/Spend by provider/);
      // Money as everywhere else: $1,234.50.
      expect(stdout).toMatch(/aws\s+\$[\d,]+\.\d\d\b/);
      expect(stdout).toMatch(/Open anomalies/);
      expect(stdout).toContain(`Spend report: ${options.report}`);
      expect(readFileSync(options.report, 'utf8')).toMatch(/<svg[\s\S]*<svg[\s\S]*<svg/);
    });
  });
});
