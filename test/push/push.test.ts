import { copyFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SCOPES } from '../../src/api/types.js';
import type { KeysConfig } from '../../src/emulator/keys.js';
import { ExitCode } from '../../src/errors.js';
import { loadSql, openReadOnly } from '../../src/storage/duckdb.js';
import { pushArgs, pushSummary, queryDb, run, startCli, withEmulator, withTempDir, SPAN } from '../support/helpers.js';

const SAMPLE = fileURLToPath(new URL('../fixtures/focus_sample_1.0.csv', import.meta.url));
const FIXTURE = fileURLToPath(new URL('../fixtures/focus-1.2-ai-gateway.csv', import.meta.url));
const env = { COSTSYNC_API_KEY: 'demo-key' };
/** The `push finished` summary from JSON logs. */
const summaryOf = (stderr: string) => pushSummary(stderr) as Record<string, number>;

async function ledger(db: string) {
  const wh = await openReadOnly(db);
  try {
    return await wh.sql<{ first_row: number; last_row: number; accepted: boolean; cost_line_item_count: number }>(
      'SELECT first_row, last_row, accepted, cost_line_item_count FROM ingest_batches ORDER BY sent_at, first_row',
    );
  } finally {
    wh.close();
  }
}

describe('costsync push (CLI, emulator over HTTP)', () => {
  it('pushes the real-world FOCUS 1.0 export end to end: every row sent or rejected with its reason', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 5 }, async (emulator) => {
      await withTempDir(async (dir) => {
        const result = await run(pushArgs(emulator.url, dir, ['--connection', 'demo-connection', SAMPLE]), env);
        expect(result.code).toBe(ExitCode.OK);
        const s = summaryOf(result.stderr);
        expect(s.sent! + s.rejected!).toBe(s.rowsRead);
        expect(s).toMatchObject({ rowsRead: 1000, sent: 1000, accepted: 1000, rejected: 0, batches: 2, version: '1.2' });
        expect(result.stderr).toMatch(/column\(s\) Id are not FOCUS columns and are not sent/);
        expect(emulator.dataset.ingestedRecords()).toHaveLength(1000);
        const rows = await ledger(join(dir, 'p.duckdb'));
        expect(rows.map((r) => [r.first_row, r.last_row, r.accepted])).toEqual([
          [1, 500, true],
          [501, 1000, true],
        ]);
        // status shows the push.
        const status = JSON.parse(
          (await run(['status', '--db', join(dir, 'p.duckdb'), '--state-dir', join(dir, 'state'), '--log-format', 'json'])).stdout,
        );
        expect(status.pushes).toEqual([
          expect.objectContaining({
            kind: 'focus',
            connection_id: 'demo-connection',
            file: SAMPLE,
            batches: 2,
            rows_sent: 1000,
            created: 1000,
            delivered: 1000,
            refused: 0,
            unconfirmed: 0,
            unanswered: 0,
            batches_accepted: 2,
          }),
        ]);
      });
    });
  });

  it('pushes a realistic FOCUS 1.2 file with tokens, own ids and every category; a second push with --force creates nothing', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 5 }, async (emulator) => {
      await withTempDir(async (dir) => {
        const first = await run(pushArgs(emulator.url, dir, ['--connection', 'demo-connection', FIXTURE]), env);
        expect(first.code).toBe(ExitCode.OK);
        expect(summaryOf(first.stderr)).toMatchObject({ rowsRead: 30, sent: 30, accepted: 30, version: '1.2' });
        const records = emulator.dataset.ingestedRecords();
        expect(records).toHaveLength(30);
        expect(new Set(records.map((r) => r.charge_category))).toEqual(new Set(['Usage', 'Credit', 'Tax', 'Purchase', 'Adjustment']));
        expect(records.filter((r) => r.model === 'gpt-4.1')).toHaveLength(8);
        expect(records.find((r) => r.model === 'gpt-4.1')!.user_email).toMatch(/@acme\.example$/);

        const again = await run(pushArgs(emulator.url, dir, ['--connection', 'demo-connection', '--force', FIXTURE]), env);
        expect(again.code).toBe(ExitCode.OK);
        expect(summaryOf(again.stderr)).toMatchObject({ sent: 30, accepted: 0, skipped: 30 });
        // What the server did with the rows sent again is said: it stored none of them.
        expect(again.stderr).toContain(
          'every row read is delivered (0 stored by the server now; 30 it held already and skipped (sent again by --force); 0 delivered before and not sent)',
        );
        expect(emulator.dataset.ingestedRecords()).toHaveLength(30);
      });
    });
  });

  it('pushes a FOCUS 1.4 export (ServiceProviderName, no ProviderName, allocation and contract columns): every column sent, and it syncs back', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 5 }, async (emulator) => {
      await withTempDir(async (dir) => {
        const file = join(dir, 'focus-1.4.csv');
        const header =
          'BilledCost,ChargeCategory,ChargePeriodEnd,ChargePeriodStart,EffectiveCost,ServiceName,ServiceProviderName,HostProviderName,' +
          'AllocatedMethodId,AllocatedResourceId,AllocatedTags,ContractApplied,InvoiceDetailId,CommitmentProgramEligibilityDetails,SubAccountId';
        const row = (day: number, usd: string, service: string) =>
          `${usd},Usage,2025-06-${String(day + 1).padStart(2, '0')},2025-06-${String(day).padStart(2, '0')},${usd},${service},Acme Cloud,Acme Cloud,` +
          `even-split,res-${day},"{""team"":""ml""}","{""Elements"":[]}",inv-${day}-1,,proj-1`;
        writeFileSync(
          file,
          [header, row(3, '12.50', 'Acme GPU'), row(4, '7.25', 'Acme GPU'), row(5, '0.30', 'Acme Store')].join('\n') + '\n',
        );
        const pushed = await run(pushArgs(emulator.url, dir, ['--connection', 'demo-connection', file]), env);
        expect(pushed.code, pushed.stderr).toBe(ExitCode.OK);
        expect(summaryOf(pushed.stderr)).toMatchObject({ rowsRead: 3, sent: 3, accepted: 3 });
        // Every column is a FOCUS column of its version: none is left out as unknown.
        expect(pushed.stderr).not.toMatch(/not FOCUS columns/);
        expect(emulator.dataset.ingestedRecords().map((r) => r.net_amount_usd)).toEqual([12.5, 7.25, 0.3]);
        // Synced back, the rows read in every FOCUS version's view with the amounts pushed.
        const synced = await run(
          [
            'sync',
            '--base-url',
            emulator.url,
            '--db',
            join(dir, 'c.duckdb'),
            '--state-dir',
            join(dir, 's'),
            '--start-date',
            SPAN.startDate,
            '--until',
            SPAN.endDate,
            '--rate-limit',
            '100000',
            '--quiet',
          ],
          env,
        );
        expect(synced.code, synced.stderr).toBe(0);
        const back = await queryDb<{ service: string; usd: string }>(
          join(dir, 'c.duckdb'),
          "SELECT ServiceName AS service, sum(BilledCost)::VARCHAR AS usd FROM focus_1_4 WHERE ServiceName LIKE 'Acme %' GROUP BY ALL ORDER BY ALL",
        );
        expect(back).toEqual([
          { service: 'Acme GPU', usd: '19.7500000000' },
          { service: 'Acme Store', usd: '0.3000000000' },
        ]);
      });
    });
  });

  it('a batch retried after its response was lost creates no duplicate rows', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 5 }, async (emulator) => {
      await withTempDir(async (dir) => {
        // The server stores the first batch, then drops the connection before answering.
        emulator.faults.script('drop');
        const result = await run(pushArgs(emulator.url, dir, ['--connection', 'demo-connection', '--batch-size', '10', FIXTURE]), env);
        expect(result.code).toBe(ExitCode.OK);
        expect(emulator.requestLog.count({ route: 'ingest-focus' })).toBe(4);
        expect(emulator.dataset.ingestedRecords()).toHaveLength(30);
        const s = summaryOf(result.stderr);
        expect(s).toMatchObject({ sent: 30, accepted: 20, skipped: 10, batches: 3 });
      });
    });
  });

  it('--map takes the mapping as inline JSON, as its help says', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 1 }, async (emulator) => {
      await withTempDir(async (dir) => {
        const file = join(dir, 'bill.csv');
        writeFileSync(file, 'day,cost_usd,what\n2025-06-01,12.5,Build farm\n2025-06-02,3,Build farm\n');
        const map =
          '{"columns": {"day": "ChargePeriodStart", "cost_usd": "BilledCost", "what": "ServiceName"}, "constants": {"ChargeCategory": "Usage"}}';
        const result = await run(pushArgs(emulator.url, dir, ['--connection', 'demo-connection', '--map', map, file]), env);
        expect(result.code, result.stderr).toBe(ExitCode.OK);
        expect(summaryOf(result.stderr)).toMatchObject({ rowsRead: 2, sent: 2, accepted: 2 });
        expect(emulator.dataset.ingestedRecords().map((r) => [r.usage_date, r.provider_service, r.net_amount_usd])).toEqual([
          ['2025-06-01', 'Build farm', 12.5],
          ['2025-06-02', 'Build farm', 3],
        ]);
      });
    });
  });

  it('ChargePeriodStart date-times reach a server that takes only calendar dates; a time of day is warned once, naming the first rows', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 1, ingestChargePeriodDates: 'date' }, async (emulator) => {
      await withTempDir(async (dir) => {
        const file = join(dir, 'hourly.csv');
        const hours = Array.from(
          { length: 8 },
          (_, h) => `2025-06-03T${String(h + 1).padStart(2, '0')}:00:00Z,2025-06-04T00:00:00Z,1,GPU,Usage`,
        );
        writeFileSync(
          file,
          [
            'ChargePeriodStart,ChargePeriodEnd,BilledCost,ServiceName,ChargeCategory',
            '2025-06-01T00:00:00Z,2025-06-02T00:00:00Z,12.5,Build farm,Usage',
            '2025-06-02T02:00:00+02:00,2025-06-03T00:00:00Z,3,Build farm,Usage',
            ...hours,
          ].join('\n'),
        );
        const result = await run(pushArgs(emulator.url, dir, ['--connection', 'demo-connection', file]), env);
        expect(result.code, result.stderr).toBe(ExitCode.OK);
        expect(summaryOf(result.stderr)).toMatchObject({ rowsRead: 10, sent: 10, accepted: 10, skipped: 0, offMidnight: 8 });
        // 02:00+02:00 is midnight UTC: a date, and no warning.
        expect(emulator.dataset.ingestedRecords().map((r) => r.usage_date)).toEqual([
          '2025-06-01',
          '2025-06-02',
          ...hours.map(() => '2025-06-03'),
        ]);
        const warnings = result.stderr.split('\n').filter((l) => l.includes('time of day other than midnight UTC'));
        expect(warnings).toHaveLength(1);
        const { msg, level } = JSON.parse(warnings[0]!) as { msg: string; level: string };
        expect(level).toBe('warn');
        expect(msg).toMatch(/^8 row\(s\) have a ChargePeriodStart/);
        expect(msg).toContain(`${file}:4 ChargePeriodStart "2025-06-03T01:00:00Z"; ${file}:5 ChargePeriodStart "2025-06-03T02:00:00Z"`);
        expect(msg).toMatch(/:8 ChargePeriodStart "2025-06-03T05:00:00Z", and 3 more$/);
      });
    });
  });

  it('dry run sends nothing; invalid rows stop the push with exit code 1 unless --skip-invalid', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 5 }, async (emulator) => {
      await withTempDir(async (dir) => {
        const dry = await run(['push', '--dry-run', '--log-format', 'json', FIXTURE], {});
        expect(dry.code).toBe(ExitCode.OK);
        expect(summaryOf(dry.stderr)).toMatchObject({ rowsRead: 30, valid: 30, sent: 0 });
        expect(emulator.requestLog.count({})).toBe(0);

        const bad = join(dir, 'bad.csv');
        writeFileSync(
          bad,
          'ChargePeriodStart,BilledCost,ServiceName,ChargeCategory\n2025-06-01,1,Svc,Usage\n2025-06-01,twelve,Svc,Usage\n',
        );
        const refused = await run(pushArgs(emulator.url, dir, ['--connection', 'demo-connection', bad]), env);
        expect(refused.code).toBe(ExitCode.FAILED);
        expect(refused.stderr).toContain(`${bad}:3: BilledCost: not a finite number: twelve`);
        expect(refused.stderr).toMatch(/nothing was sent.*--skip-invalid/);
        expect(emulator.requestLog.count({})).toBe(0);

        const skipped = await run(pushArgs(emulator.url, dir, ['--connection', 'demo-connection', '--skip-invalid', bad]), env);
        expect(skipped.code).toBe(ExitCode.OK);
        expect(summaryOf(skipped.stderr)).toMatchObject({ rowsRead: 2, sent: 1, rejected: 1, accepted: 1 });
      });
    });
  });

  it('reports rows that fail the push as errors, and rows --skip-invalid leaves out as warnings', async () => {
    await withTempDir(async (dir) => {
      const bad = join(dir, 'bad.csv');
      writeFileSync(bad, 'ChargePeriodStart,BilledCost,ServiceName,ChargeCategory\n2025-06-01,1,Svc,Usage\n2025-06-01,twelve,Svc,Usage\n');
      const levels = (stderr: string) =>
        stderr
          .split('\n')
          .filter((l) => l.includes('BilledCost: not a finite number'))
          .map((l) => (JSON.parse(l) as { level: string }).level);
      const failed = await run(['push', '--dry-run', '--log-format', 'json', bad]);
      expect(failed.code).toBe(ExitCode.FAILED);
      expect(levels(failed.stderr)).toEqual(['error']);
      const skipped = await run(['push', '--dry-run', '--skip-invalid', '--log-format', 'json', bad]);
      expect(skipped.code).toBe(ExitCode.OK);
      expect(levels(skipped.stderr)).toEqual(['warn']);
      const pretty = await run(['push', '--dry-run', bad]);
      expect(pretty.stderr).toContain(`ERROR ${bad}:3: BilledCost: not a finite number: twelve`);
    });
  });

  it("a key bound to another connection, or without usage:write, stops at once with exit code 3; an unknown connection ends with the server's words", async () => {
    const keys: KeysConfig = {
      keys: [
        { key: 'bound-key', scopes: [...SCOPES], plan: 'business', connection_id: 'conn-a' },
        { key: 'any-key', scopes: [...SCOPES], plan: 'business' },
        { key: 'read-key', scopes: ['line_items:read'], plan: 'business' },
      ],
      connections: [
        { id: 'conn-a', provider_type: 'custom' },
        { id: 'conn-b', provider_type: 'custom' },
      ],
    };
    await withEmulator({ ...SPAN, rowsPerDay: 5, keys }, async (emulator) => {
      await withTempDir(async (dir) => {
        const bound = await run(pushArgs(emulator.url, dir, ['--connection', 'conn-b', '--batch-size', '5', FIXTURE]), {
          COSTSYNC_API_KEY: 'bound-key',
        });
        expect(bound.code).toBe(ExitCode.AUTH);
        expect(bound.stderr).toMatch(/FORBIDDEN/);
        expect(bound.stderr).toMatch(/bound to another connection/);
        expect(bound.stderr).not.toContain('bound-key');
        expect(emulator.requestLog.count({ route: 'ingest-focus' })).toBe(1);

        const scope = await run(pushArgs(emulator.url, dir, ['--connection', 'conn-a', FIXTURE]), { COSTSYNC_API_KEY: 'read-key' });
        expect(scope.code).toBe(ExitCode.AUTH);
        expect(scope.stderr).toMatch(/INVALID_SCOPE/);
        expect(scope.stderr).toMatch(/usage:write/);
        expect(emulator.dataset.ingestedRecords()).toHaveLength(0);

        // Each request is refused whole (400): the last line, the one a person reads, names why.
        // (A copy: the rows not delivered are listed beside the file.)
        const file = join(dir, 'focus.csv');
        copyFileSync(FIXTURE, file);
        const unknown = await run(pushArgs(emulator.url, dir, ['--connection', 'nope', '--batch-size', '20', file]), {
          COSTSYNC_API_KEY: 'any-key',
        });
        expect(unknown.code).toBe(ExitCode.FAILED);
        const last = (JSON.parse(unknown.stderr.trim().split('\n').at(-1)!) as { msg: string }).msg;
        expect(last).toMatch(
          /^Not done: 30 of 30 row\(s\) read were not delivered \(30 refused by the server\); the server refused whole requests, saying "[^"]*Unknown connection id "nope"[^.]*"\. They are in .*focus\.undelivered\.csv/,
        );
        expect(last.match(/Unknown connection id/g)).toHaveLength(1);
        // The rows are not at fault: the advice is the server's, not per-row fixes or Adjustment rows.
        expect(last).toMatch(/The server refused the requests themselves, not rows in them: fix what it said \(such as --connection/);
        expect(last).not.toMatch(/Adjustment/);
        // status says the same as the push: refused, not the server-side "skipped".
        expect(await queryDb(join(dir, 'p.duckdb'), loadSql('status/last_pushes'))).toEqual([
          expect.objectContaining({ connection_id: 'nope', rows_sent: 30, created: 0, delivered: 0, refused: 30, unconfirmed: 0 }),
        ]);
        expect(emulator.dataset.ingestedRecords()).toHaveLength(0);
      });
    });
  });

  it('push-otel sends a JSON document as it is, once, and records it; a file that is not JSON is refused with exit code 2', async () => {
    await withEmulator({ ...SPAN, rowsPerDay: 5 }, async (emulator) => {
      await withTempDir(async (dir) => {
        const doc = join(dir, 'usage.json');
        writeFileSync(doc, JSON.stringify({ resourceMetrics: [{ scopeMetrics: [] }] }));
        const otelArgs = (extra: string[]) => pushArgs(emulator.url, dir, extra, 'push-otel');
        expect((await run(otelArgs([doc]), env)).code).toBe(ExitCode.OK);
        const again = await run(otelArgs([doc]), env);
        expect(again.code).toBe(ExitCode.OK);
        expect(again.stderr).toMatch(/sent before.*--force/);
        expect(emulator.requestLog.count({ route: 'ingest-otel' })).toBe(1);
        expect((await run(otelArgs(['--force', doc]), env)).code).toBe(ExitCode.OK);
        expect(emulator.requestLog.count({ route: 'ingest-otel' })).toBe(2);
        const wh = await openReadOnly(join(dir, 'p.duckdb'));
        try {
          expect(await wh.sql('SELECT kind, file FROM ingest_batches')).toEqual([
            { kind: 'otel', file: doc },
            { kind: 'otel', file: doc },
          ]);
        } finally {
          wh.close();
        }
        const broken = join(dir, 'broken.json');
        writeFileSync(broken, '{"resourceMetrics": [');
        const refused = await run(otelArgs([broken]), env);
        expect(refused.code).toBe(ExitCode.USAGE);
        expect(refused.stderr).toMatch(/not a JSON document/);
      });
    });
  });

  it('SIGTERM while the server holds an answer cuts the request and exits 4 at once; the next push sends the cut batch again with the same ids', async () => {
    let ingests = 0;
    let hold = true;
    let held: (() => void) | null = null;
    let release: (() => void) | null = null;
    /** Whether the held answer went out: set once the test lets it go. */
    let letGo = false;
    let answeredToNobody: (() => void) | null = null;
    await withEmulator(
      {
        ...SPAN,
        rowsPerDay: 1,
        // The second batch reaches the API, which does not answer (as one taking minutes) until the test lets it go.
        beforeReply: async ({ route }) => {
          if (route !== 'ingest-focus' || ++ingests !== 2 || !hold) return;
          await new Promise<void>((resolve) => {
            release = resolve;
            held?.();
          });
          letGo = true;
        },
        onRequest: (e) => {
          if (e.route === 'ingest-focus' && ingests === 2) answeredToNobody?.();
        },
      },
      async (emulator) => {
        await withTempDir(async (dir) => {
          // Rows without ids of their own: push makes them from the content, the same each time.
          const file = join(dir, 'costs.csv');
          const lines = Array.from(
            { length: 40 },
            (_, i) => `${new Date(Date.UTC(2025, 5, 1 + i)).toISOString().slice(0, 10)},${i + 1}.5,Build farm,Usage`,
          );
          writeFileSync(file, ['ChargePeriodStart,BilledCost,ServiceName,ChargeCategory', ...lines].join('\n'));
          const args = pushArgs(emulator.url, dir, ['--connection', 'demo-connection', '--batch-size', '10', file]);
          const { child, result } = startCli(args, env);
          await new Promise<void>((resolve) => {
            held = resolve;
          });
          child.kill('SIGTERM');
          // The server holds its answer until the test lets it go, below: the push exits while it is still held, or never.
          const { code, stderr } = await result;
          expect(code, stderr).toBe(ExitCode.STOPPED_EARLY);
          expect(letGo, 'the push exited while the server still held its answer').toBe(false);
          // Named by the file's lines, as the checks name rows: data rows 11-20 are lines 12-21.
          expect(stderr).toMatch(/lines 12-21: the stop cut their request before its answer/);
          const db = join(dir, 'p.duckdb');
          expect(
            await queryDb(db, 'SELECT first_row, last_row, response IS NOT NULL AS answered FROM ingest_batches ORDER BY first_row'),
          ).toEqual([
            { first_row: 1, last_row: 10, answered: true },
            { first_row: 11, last_row: 20, answered: false },
          ]);
          // status tells the cut request apart from the answered ones.
          expect(await queryDb(db, loadSql('status/last_pushes'))).toEqual([
            expect.objectContaining({ batches: 2, unanswered: 1, batches_accepted: 1 }),
          ]);

          // The held request is answered to nobody: the server stored the cut batch after all.
          hold = false;
          const stored = new Promise<void>((resolve) => {
            answeredToNobody = resolve;
          });
          release!();
          await stored;
          expect(emulator.dataset.ingestedRecords()).toHaveLength(20);

          const rest = await run(args, env);
          expect(rest.code, rest.stderr).toBe(ExitCode.OK);
          // Rows 11-20 went again with the ids they had, so the server skipped them: delivered by the cut request.
          expect(summaryOf(rest.stderr)).toMatchObject({
            alreadyDelivered: 10,
            sent: 30,
            accepted: 20,
            skipped: 10,
            deliveredBefore: 10,
            delivered: 30,
          });
          const records = emulator.dataset.ingestedRecords();
          expect(records).toHaveLength(40);
          expect(new Set(records.map((r) => r.id)).size).toBe(40);
        });
      },
    );
  });

  it('a rotated key goes on from the ledger: nothing is sent twice', async () => {
    const keys: KeysConfig = {
      keys: [
        { key: 'old-key', scopes: [...SCOPES], plan: 'business' },
        { key: 'new-key', scopes: [...SCOPES], plan: 'business' },
      ],
      connections: [{ id: 'demo-connection', provider_type: 'custom' }],
    };
    await withEmulator({ ...SPAN, rowsPerDay: 1, keys }, async (emulator) => {
      await withTempDir(async (dir) => {
        const args = pushArgs(emulator.url, dir, ['--connection', 'demo-connection', FIXTURE]);
        expect((await run(args, { COSTSYNC_API_KEY: 'old-key' })).code).toBe(0);
        const sent = emulator.requestLog.count({ route: 'ingest-focus' });
        const rotated = await run(args, { COSTSYNC_API_KEY: 'new-key' });
        expect(rotated.code).toBe(0);
        expect(summaryOf(rotated.stderr)).toMatchObject({ sent: 0, alreadyDelivered: 30 });
        expect(emulator.requestLog.count({ route: 'ingest-focus' })).toBe(sent);
        // One ledger, keyed by the source: not one per key.
        const wh = await openReadOnly(join(dir, 'p.duckdb'));
        const [{ n }] = (await wh.sql<{ n: number }>('SELECT count(DISTINCT push_key)::INT AS n FROM ingest_batches')) as [{ n: number }];
        wh.close();
        expect(n).toBe(1);
      });
    });
  });
});
