import { describe, expect, it } from 'vitest';
import type { ApiError } from '../../src/errors.js';
import { runSync, type RunSummary } from '../../src/sync/runner.js';
import { openReadOnly } from '../../src/storage/duckdb.js';
import { FAST_CLIENT, memoryLogger, testSyncConfig, withScriptedServer, withTempDir, type ScriptedReply } from '../support/helpers.js';

const clock = { now: () => Date.parse('2025-06-03T06:00:00Z'), sleep: async () => undefined };
const item = (id: string, date = '2025-06-02') => ({
  id,
  usage_date: date,
  provider_type: 'aws',
  provider_service: 'ec2',
  net_amount_usd: 1.5,
  currency_original: 'USD',
  project_id: 'p',
  user_email: 'u@x',
});
const page = (data: unknown[], meta: Record<string, unknown> = { has_more: false }) => ({ data, error: null, meta });

/**
 * A line-items-only sync of one day against scripted replies; the summary and the rows stored. The
 * check against rollups is off: the scripted server answers every request with the same reply.
 */
async function syncAgainst(replies: ScriptedReply[], timeouts: Record<string, number> = {}) {
  return withScriptedServer(replies, async (url, hits) =>
    withTempDir(async (dir) => {
      const config = testSyncConfig(url, dir, { streams: ['line_items'], startDate: '2025-06-02', until: '2025-06-02', reconcile: 'off' });
      const summary: RunSummary = await runSync({
        config,
        logger: memoryLogger(),
        clock,
        clientOptions: { ...FAST_CLIENT, retry: { retries: 2, minTimeoutMs: 1, maxTimeoutMs: 2 }, timeouts },
      });
      const wh = await openReadOnly(config.db);
      try {
        const [{ n }] = (await wh.sql<{ n: number }>('SELECT count(*)::INTEGER AS n FROM line_items')) as [{ n: number }];
        const [run] = await wh.sql<{ outcome: string; error: string | null }>('SELECT outcome, error FROM sync_runs');
        return { summary, rows: n, run: run!, hits: hits() };
      } finally {
        wh.close();
      }
    }),
  );
}

const errorOf = (s: RunSummary) => s.error as ApiError;

describe('a hostile or buggy server ends in a clear error or a recorded warning, never in wrong tables or a loop', () => {
  it('has_more true with no cursor: a clear error after bounded retries, nothing stored', async () => {
    const r = await syncAgainst([{ body: page([item('a')], { has_more: true }) }]);
    expect(r.summary.outcome).toBe('failed');
    expect(errorOf(r.summary).message).toMatch(/next_cursor/);
    expect(r.hits).toBeLessThanOrEqual(3);
    expect(r.rows).toBe(0);
    expect(r.run.outcome).toBe('failed');
  });

  it('records with missing or wrongly typed fields: refused at once, naming the field', async () => {
    const missing = await syncAgainst([{ body: page([{ ...item('a'), usage_date: undefined }]) }]);
    expect(errorOf(missing.summary).code).toBe('CS_ERR_BAD_RECORD');
    expect(errorOf(missing.summary).message).toMatch(/"usage_date"/);
    expect(missing.hits).toBe(1);
    const typed = await syncAgainst([{ body: page([{ ...item('a'), net_amount_usd: '12.5' }]) }]);
    expect(errorOf(typed.summary).message).toMatch(/"net_amount_usd" \(expected a finite number\)/);
    expect(typed.rows).toBe(0);
  });

  it('an envelope with both data and error, and a 200 whose body is HTML: malformed, retried, then a clear error', async () => {
    const both = await syncAgainst([{ body: { data: [item('a')], error: { code: 'INTERNAL_ERROR', message: 'oops' }, meta: {} } }]);
    expect(both.summary.outcome).toBe('failed');
    expect(errorOf(both.summary).code).toBe('CS_ERR_RETRIES_EXHAUSTED');
    expect(errorOf(both.summary).message).toMatch(/error in the envelope/);
    expect(both.rows).toBe(0);
    const html = await syncAgainst([{ body: '<html><body>Service Unavailable</body></html>', headers: { 'content-type': 'text/html' } }]);
    expect(errorOf(html.summary).message).toMatch(/not valid JSON/);
    expect(html.hits).toBe(3);
  });

  it('a page of 50 MB: stops reading past the limit, once, with a clear error', async () => {
    const r = await syncAgainst([{ hugeBytes: 50 * 1024 * 1024 }]);
    expect(errorOf(r.summary).code).toBe('CS_ERR_RESPONSE_TOO_LARGE');
    expect(errorOf(r.summary).message).toMatch(/larger than 33554432 bytes/);
    expect(r.hits).toBe(1);
  });

  it('a response that never finishes (slowloris): the request deadline ends it, retries are bounded', async () => {
    const r = await syncAgainst([{ trickleMs: 20 }], { totalMs: 300, bodyMs: 60_000 });
    expect(errorOf(r.summary).code).toBe('CS_ERR_RETRIES_EXHAUSTED');
    expect(errorOf(r.summary).message).toMatch(/request deadline/);
    expect(r.hits).toBe(3);
  });

  it('records dated outside the requested dates are dropped with a recorded warning', async () => {
    const r = await syncAgainst([{ body: page([item('in'), item('out', '2025-06-20')]) }]);
    expect(r.summary.outcome).toBe('success');
    expect(r.rows).toBe(1);
    expect(r.summary.warnings.join('\n')).toMatch(/1 record\(s\) dated outside the requested dates/);
  });

  it('an unknown severity or status is stored as sent, with a warning in the run summary', async () => {
    const alert = (id: string, severity: string, status: string) => ({
      id,
      provider_type: 'aws',
      service: 'ec2',
      detected_date: '2025-06-02T10:00:00Z',
      actual_cost: 10,
      expected_cost: 5,
      deviation_percent: 100,
      severity,
      alert_type: 'spike',
      status,
    });
    await withScriptedServer(
      [{ body: page([alert('x1', 'urgent', 'new'), alert('x2', 'high', 'escalated'), alert('x3', 'low', 'new')], {}) }],
      async (url) => {
        await withTempDir(async (dir) => {
          const config = testSyncConfig(url, dir, { streams: ['anomalies'] });
          const summary = await runSync({ config, logger: memoryLogger(), clock, clientOptions: FAST_CLIENT });
          expect(summary.outcome).toBe('success');
          expect(summary.warnings.join('\n')).toMatch(
            /2 alert\(s\) have a severity or status the spec does not list \(for example x1: urgent\/new\)/,
          );
          const wh = await openReadOnly(config.db);
          try {
            expect(await wh.sql('SELECT id, severity, status FROM anomalies ORDER BY id')).toEqual([
              { id: 'x1', severity: 'urgent', status: 'new' },
              { id: 'x2', severity: 'high', status: 'escalated' },
              { id: 'x3', severity: 'low', status: 'new' },
            ]);
            const [run] = await wh.sql<{ warnings: string }>('SELECT warnings::VARCHAR AS warnings FROM sync_runs');
            expect(run!.warnings).toMatch(/severity or status the spec does not list/);
          } finally {
            wh.close();
          }
        });
      },
    );
  });
});
