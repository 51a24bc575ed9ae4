import { describe, expect, it } from 'vitest';
import { formatPercent, formatUsd, isMoneyColumn } from '../../src/money.js';
import { formatTable } from '../../src/table.js';
import { eventLine } from '../../src/outputs/notify.js';
import { describeMismatches } from '../../src/sync/reconcile.js';

/** An anomaly event as notifications carry it; each test sets its costs. */
const ANOMALY = { kind: 'anomaly' as const, source: 'a', severity: 'high', provider: 'aws', service: 'ec2', detected_at: 'x' };

describe('money is printed one way everywhere', () => {
  it('two decimals, thousands grouped, the sign before the dollar', () => {
    expect(formatUsd(37158)).toBe('$37,158.00');
    expect(formatUsd(39723.675)).toBe('$39,723.68');
    expect(formatUsd(-12.5)).toBe('-$12.50');
    expect(formatUsd(-0.001)).toBe('$0.00');
    expect(formatUsd(3, { sign: true })).toBe('+$3.00');
    expect(formatUsd(1234.5, { bare: true })).toBe('1,234.50');
  });

  it('knows money columns by name, and not counts, percentages or prices', () => {
    for (const name of [
      'spend_usd',
      'cost_usd',
      'net_amount_usd',
      'actual_cost',
      'expected_cost',
      'change_usd',
      'cost_7d_avg',
      'BilledCost',
      'EffectiveCost',
      'x_amount',
    ]) {
      expect(isMoneyColumn(name), name).toBe(true);
    }
    for (const name of [
      'change_pct',
      'deviation_percent',
      'cost_line_item_count',
      'rows',
      'ListUnitPrice',
      'days_with_data',
      'provider',
      'ConsumedQuantity',
    ]) {
      expect(isMoneyColumn(name), name).toBe(false);
    }
  });

  it('a table prints money columns with two decimals and leaves other numbers alone', () => {
    const text = formatTable([
      { provider: 'gcp', spend_usd: 37158, days: 90 },
      { provider: 'aws', spend_usd: 39723.68, days: 90 },
    ]);
    const lines = text.split('\n');
    // The same form as the demo, summaries and the report: a $ in front (query's tables once printed money bare).
    expect(lines[2]).toBe('gcp       $37,158.00    90');
    expect(lines[3]).toBe('aws       $39,723.68    90');
  });

  it('percentages too: one decimal always, so one deviation never reads as both +132% and +132.0%', () => {
    expect(formatPercent(132)).toBe('+132.0%');
    expect(formatPercent(136.44)).toBe('+136.4%');
    expect(formatPercent(-90)).toBe('-90.0%');
    expect(formatPercent(1523.25)).toBe('+1,523.3%');
    expect(formatPercent(0)).toBe('0.0%');
    expect(formatPercent(-0.01)).toBe('0.0%');
    expect(formatPercent(null)).toBe('–');
    expect(formatPercent(Number.NaN)).toBe('–');
    expect(eventLine({ ...ANOMALY, actual_cost: 2320, expected_cost: 1000, deviation_percent: 132 })).toContain('expected (+132.0%)');
  });

  it('notifications and window warnings use the same form', () => {
    expect(eventLine({ ...ANOMALY, actual_cost: 1200, expected_cost: 800.5, deviation_percent: 50 })).toContain(
      '$1,200.00 vs $800.50 expected',
    );
    expect(describeMismatches([{ date: '2025-06-01', key: 'aws', left: 1000, right: null }], ['line items', 'provider rollup'])).toBe(
      '2025-06-01 aws: line items $1,000.00, provider rollup none',
    );
  });

  it('a restated event says how many older dates changed, which, and whether all were synced again', () => {
    const restated = { kind: 'restated' as const, source: 'eu', changed: 3, dates: '2025-06-01..2025-06-03' };
    expect(eventLine({ ...restated, synced: 3 })).toBe(
      '[eu] 3 older date(s) no longer equal the API (2025-06-01..2025-06-03); 3 synced again',
    );
    expect(eventLine({ ...restated, synced: 1 })).toMatch(/; at least 1 synced again, the rest next run$/);
  });
});
