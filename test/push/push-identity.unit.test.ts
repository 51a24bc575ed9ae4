import { describe, expect, it } from 'vitest';
import type { IngestResult } from '../../src/api/types.js';
import { ConfigError } from '../../src/errors.js';
import fc from 'fast-check';
import {
  assignGroupIds,
  chargeId,
  classifyRow,
  defaultKeyColumns,
  describeRule,
  errorRow,
  errorText,
  type GroupRow,
  ledgerKey,
  parseKeyColumns,
  parseRule,
  ruleText,
  settleBatch,
} from '../../src/push/identity.js';
import { repeatedIdReason, undeliveredPath } from '../../src/push/push.js';

const answer = (over: Partial<IngestResult>): IngestResult => ({
  accepted: true,
  batch_id: 'b1',
  row_count: 4,
  cost_line_item_count: 4,
  skipped: 0,
  errors: [],
  ...over,
});
const outcomes = (list: ReturnType<typeof settleBatch>) => list.map((o) => (o.delivered ? o.how : `${o.why}: ${o.reason}`));

describe('push identity: the key and the rule', () => {
  it('takes key columns in any letter case, or "default", and refuses unknown, repeated or id columns naming the fix', () => {
    expect(parseKeyColumns(' chargeperiodstart, SERVICENAME ,x_team', 'service')).toEqual(['ChargePeriodStart', 'ServiceName', 'x_team']);
    expect(parseKeyColumns('Default', 'acme')).toEqual(defaultKeyColumns('acme'));
    expect(parseKeyColumns('default,x_team', 'acme')).toEqual([...defaultKeyColumns('acme'), 'x_team']);
    expect(defaultKeyColumns('acme')).toContain('x_acme_model');
    expect(defaultKeyColumns('acme')).not.toContain('BilledCost');
    for (const [value, problem] of [
      ['ChargePeriodStart,Nope', '"Nope" is not a FOCUS 1.2 column'],
      ['ServiceName,servicename', '"ServiceName" is named twice'],
      ['ServiceName,,ChargeCategory', 'has an empty name'],
      ['x_service_line_item_id', 'is the line-item id'],
    ] as const) {
      const error = (() => {
        try {
          parseKeyColumns(value, 'service');
        } catch (e) {
          return e as ConfigError;
        }
        throw new Error(`accepted ${value}`);
      })();
      expect(error).toBeInstanceOf(ConfigError);
      expect(error.message).toContain(problem);
      expect(error.hint).toContain('"default"');
    }
  });

  it('records a rule as text and reads it back; names the default key briefly', () => {
    const rule = { kind: 'key' as const, columns: ['ChargePeriodStart', 'ServiceName'] };
    expect(parseRule(ruleText(rule))).toEqual(rule);
    expect(parseRule(ruleText({ kind: 'content' }))).toEqual({ kind: 'content' });
    expect(describeRule(rule, 'service')).toBe('the key columns ChargePeriodStart, ServiceName');
    expect(describeRule({ kind: 'key', columns: defaultKeyColumns('service') }, 'service')).toBe(
      'the default key columns (--key-columns default)',
    );
    expect(ledgerKey({ baseUrl: 'u', source: 's', connectionId: 'c', vendor: 'v' })).not.toBe(
      ledgerKey({ baseUrl: 'u', source: 's', connectionId: 'c2', vendor: 'v' }),
    );
  });

  it('classes a row against the ledger: delivered, new, a resend of a request without an answer, or a correction', () => {
    expect(classifyRow('v1', undefined, false)).toBe('new');
    expect(classifyRow('v1', { held: 'v1', pending: null }, false)).toBe('delivered');
    expect(classifyRow('v1', { held: 'v1', pending: null }, true)).toBe('resend');
    expect(classifyRow('v1', { held: null, pending: 'v1' }, false)).toBe('resend');
    expect(classifyRow('v2', { held: 'v1', pending: null }, false)).toBe('correction');
    // Other values a request without an answer may have stored: a skip would mean the server kept those.
    expect(classifyRow('v2', { held: null, pending: 'v1' }, false)).toBe('correction');
    expect(classifyRow('v2', { held: null, pending: null }, false)).toBe('new');
    // A correction the server kept its first values for, settled by the user: not sent while the row stays so.
    expect(classifyRow('v2', { held: 'v1', pending: null, settled: 'v2' }, false)).toBe('settled');
    expect(classifyRow('v3', { held: 'v1', pending: null, settled: 'v2' }, false)).toBe('correction');
  });

  it('names where the file and rows sharing an id go', () => {
    expect(undeliveredPath('/in/costs.csv.gz', 'csv', null)).toBe('/in/costs.undelivered.csv');
    expect(undeliveredPath('/in/costs.parquet', 'parquet', '/out')).toBe('/out/costs.undelivered.parquet');
    expect(undeliveredPath('/in/costs.undelivered.csv', 'csv', null)).toBe('/in/costs.undelivered.csv');
    expect(repeatedIdReason(['line 3'], 'acme')).toBe(
      'the same x_acme_line_item_id as line 3: the server keeps one row per id, so neither is sent; give each row its own id',
    );
    expect(repeatedIdReason(['line 2', 'line 3', 'line 4', 'line 9'], 'service')).toMatch(
      /^the same x_service_line_item_id as line 2, line 3, line 4 and 1 more: /,
    );
  });
});

describe('push identity: rows of one file that share a key', () => {
  const KEY = 'costsync-0123456789abcdef0123456789abcdef';
  const row = (at: number, text: string, ...numbers: (number | null)[]): GroupRow => ({
    row: at,
    order: [text, ...numbers],
    values: `${text}|${numbers.join('|')}`,
  });
  const idsOf = (rows: GroupRow[]) => {
    const given = assignGroupIds(KEY, rows);
    return rows.map((r) => given.get(r.row));
  };
  const id = (k: number) => chargeId(KEY, k);

  it('gives the first charge the key id a lone row has, and the others ids of their own', () => {
    expect(chargeId(KEY, 1)).toBe(KEY);
    // Pinned: ledgers hold these ids (an MD5 of the key's id and `#k`).
    expect(chargeId(KEY, 2)).toBe('costsync-903c184722cdf97dc65c396e89db0691');
    expect(new Set([1, 2, 3, 4].map((k) => chargeId(KEY, k))).size).toBe(4);
    expect(chargeId(KEY, 2)).toBe(chargeId(KEY, 2));
  });

  it('orders by what is not a number, then the numbers as numbers, missing first', () => {
    expect(idsOf([row(1, 'b', 1), row(2, 'a', 9), row(3, 'a', 10), row(4, 'a', null)])).toEqual([id(4), id(2), id(3), id(1)]);
    // Identical rows are as many charges, by their place.
    expect(idsOf([row(1, 'a', 2), row(2, 'a', 2)])).toEqual([id(1), id(2)]);
  });

  it('gives rows of the same content the same ids in any row order: identical rows as many charges', () => {
    const content = fc.tuple(fc.constantFrom('a', 'b', 'c'), fc.option(fc.integer({ min: -3, max: 3 }), { nil: null }));
    fc.assert(
      fc.property(fc.array(content, { minLength: 2, maxLength: 8 }), fc.array(fc.nat()), (contents, keys) => {
        const rows = contents.map(([t, n], i) => row(i + 1, t, n));
        const shuffled = rows
          .map((r, i) => ({ r, k: keys[i] ?? i }))
          .sort((a, b) => a.k - b.k)
          .map(({ r }, i) => ({ ...r, row: i + 1 }));
        const pairs = (rs: GroupRow[]) => {
          const given = assignGroupIds(KEY, rs);
          return rs.map((r) => `${r.values}:${given.get(r.row)}`).sort();
        };
        expect(pairs(shuffled)).toEqual(pairs(rows));
        expect(new Set(assignGroupIds(KEY, rows).values())).toEqual(new Set(rows.map((_, k) => id(k + 1))));
      }),
    );
  });

  it('a changed amount or a re-tag moves a row only past rows it now sorts beyond: the others keep their ids', () => {
    const before = [row(1, 'team=blue', 5), row(2, 'team=red', 6), row(3, 'team=red', 9)];
    const ids = idsOf(before);
    // 6 -> 7 passes nothing; blue -> green passes nothing.
    expect(idsOf([row(1, 'team=green', 5), row(2, 'team=red', 7), row(3, 'team=red', 9)])).toEqual(ids);
    // 6 -> 10 passes 9: those two swap ids (two corrections of the group's rows), blue keeps its own.
    expect(idsOf([row(1, 'team=blue', 5), row(2, 'team=red', 10), row(3, 'team=red', 9)])).toEqual([ids[0], ids[2], ids[1]]);
  });
});

describe('push identity: what an answer says about each row', () => {
  it('reads the row an error names in either shape, and its text without the request row', () => {
    expect(errorRow({ row: 2, column: 'BilledCost', message: 'x' }, 4)).toBe(2);
    expect(errorRow('row 3, ChargeCategory: bad', 4)).toBe(3);
    expect(errorRow({ row: '1' }, 4)).toBe(1);
    expect([errorRow({ row: 4 }, 4), errorRow({ row: -1 }, 4), errorRow('rows failed', 4), errorRow(null, 4)]).toEqual([
      null,
      null,
      null,
      null,
    ]);
    expect(errorText('row 3, ChargeCategory: bad')).toBe('ChargeCategory: bad');
    expect(errorText('row 1: unknown service')).toBe('unknown service');
    expect(errorText({ row: 0, column: 'Tags', message: 'not an object' })).toBe('Tags: not an object');
    expect(errorText({ code: 'E1' })).toBe('{"code":"E1"}');
  });

  it('delivers every row a request stored; names refused rows; a request not accepted delivers none', () => {
    expect(outcomes(settleBatch('new', 4, answer({}), false))).toEqual(['stored', 'stored', 'stored', 'stored']);
    expect(outcomes(settleBatch('correction', 4, answer({}), false))).toEqual(['corrected', 'corrected', 'corrected', 'corrected']);
    const refused = answer({ cost_line_item_count: 3, skipped: 1, errors: [{ row: 1, column: 'BilledCost', message: 'bad' }] });
    expect(outcomes(settleBatch('new', 4, refused, false))).toEqual([
      'stored',
      'refused: refused by the server: BilledCost: bad',
      'stored',
      'stored',
    ]);
    const rejected = outcomes(
      settleBatch('new', 4, answer({ accepted: false, cost_line_item_count: 0, skipped: 4, errors: ['row 0: no'] }), false),
    );
    expect(rejected[0]).toBe('refused: refused by the server: no');
    expect(rejected.slice(1)).toEqual(Array(3).fill('refused: the server did not accept the request (batch b1) that carried it'));
  });

  it('takes skips as held only where the class says so; otherwise names them unconfirmed, or corrections not applied', () => {
    const allSkipped = answer({ cost_line_item_count: 0, skipped: 4 });
    expect(outcomes(settleBatch('resend', 4, allSkipped, false))).toEqual(Array(4).fill('held'));
    // A request retried after a lost answer: its first attempt stored them.
    expect(outcomes(settleBatch('new', 4, allSkipped, true))).toEqual(Array(4).fill('held'));
    expect(outcomes(settleBatch('correction', 4, allSkipped, false))[0]).toBe(
      'not-applied: a correction the server did not apply: it keeps the values it stored first for this id',
    );
    expect(outcomes(settleBatch('new', 4, allSkipped, false))[0]).toMatch(/^unconfirmed: skipped by the server without a reason/);
    const someSkipped = answer({ cost_line_item_count: 3, skipped: 1 });
    expect(outcomes(settleBatch('new', 4, someSkipped, false))).toEqual(
      Array(4).fill('unconfirmed: the server skipped 1 of these 4 rows without naming them'),
    );
    // An error naming no row among resent rows: which was refused is not known.
    expect(outcomes(settleBatch('resend', 4, answer({ cost_line_item_count: 0, skipped: 4, errors: ['quota'] }), false))[0]).toMatch(
      /^unconfirmed/,
    );
  });

  it('confirms nothing from an answer whose counts do not add up to the rows sent', () => {
    for (const over of [{ row_count: 3 }, { cost_line_item_count: 5 }, { cost_line_item_count: -1 }]) {
      expect(outcomes(settleBatch('new', 4, answer(over), false))[0]).toMatch(
        /^unconfirmed: the server's answer does not account for the rows sent \(4 sent;/,
      );
    }
  });
});
