import { describe, expect, it } from 'vitest';
import { deliveredText, doneLine, undeliveredLine } from '../../src/commands/push.js';
import { emptySummary, type PushSummary } from '../../src/push/push.js';

const summary = (over: Partial<PushSummary>): PushSummary => ({ ...emptySummary('p1'), ...over });

describe("push's last line says what the server did with the rows", () => {
  it('a --force push of rows the server holds says it stored none of them', () => {
    const s = summary({ rowsRead: 20, valid: 20, sent: 20, delivered: 20, deliveredBefore: 20, batches: 1 });
    expect(doneLine(s, true)).toBe(
      'Done: push p1: every row read is delivered (0 stored by the server now; 20 it held already and skipped (sent again by --force); 0 delivered before and not sent); 1 request(s) recorded in ingest_batches.',
    );
    expect(deliveredText(s, false)).toContain('20 it held already and skipped (sent again after a request whose answer never came)');
  });

  it('a --force push to a server that keeps the last copy says its rows took their own ids’ places, no new charges', () => {
    const s = summary({ delivered: 20, replacedHeld: 20, batches: 1 });
    expect(deliveredText(s, true)).toBe(
      '20 stored by the server now (20 in place of the same rows under their ids, sent again by --force: no new charges); 0 delivered before and not sent',
    );
  });

  it('counts stored rows, corrections among them, rows delivered before, and settled corrections', () => {
    const s = summary({ delivered: 7, corrected: 2, deliveredBefore: 1, alreadyDelivered: 30, settled: 3 });
    expect(deliveredText(s, false)).toBe(
      '6 stored by the server now (2 of them corrections); 1 it held already and skipped (sent again after a request whose answer never came); 30 delivered before and not sent; 3 correction(s) the server keeps its first values for, settled by --settle-corrections',
    );
    expect(doneLine(s, false)).toMatch(/^Done: push p1: every row read is delivered or settled \(/);
  });

  it('names why rows were not delivered, with the words of requests refused whole', () => {
    const s = summary({ rowsRead: 10, invalid: 1, refused: 2, refusedWhole: 2, requestRefusals: ['unknown connection.'] });
    expect(undeliveredLine(s)).toBe(
      '3 of 10 row(s) read were not delivered (1 failed the checks, 2 refused by the server); the server refused whole requests, saying "unknown connection"',
    );
  });
});
