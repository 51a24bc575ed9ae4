import { describe, expect, it } from 'vitest';
import { canonicalChargeCategory, extensionColumns, isCurrencyCode, parseFocusTime } from '../../src/focus/rules.js';

describe('FOCUS rules', () => {
  it('maps ChargeCategory values and aliases in any letter case', () => {
    expect(canonicalChargeCategory('usage')).toBe('Usage');
    expect(canonicalChargeCategory('PURCHASE')).toBe('Purchase');
    expect(canonicalChargeCategory('Discount')).toBe('Credit');
    expect(canonicalChargeCategory('refund')).toBe('Credit');
    expect(canonicalChargeCategory('FEE')).toBe('Usage');
    expect(canonicalChargeCategory('Rebate')).toBeNull();
  });

  it('parses calendar dates and ISO times, zone-less times as UTC', () => {
    expect(parseFocusTime('2024-10-01')).toBe(Date.parse('2024-10-01T00:00:00Z'));
    expect(parseFocusTime('2024-10-01 00:00:00')).toBe(Date.parse('2024-10-01T00:00:00Z'));
    expect(parseFocusTime('2024-10-01T05:00:00+02:00')).toBe(Date.parse('2024-10-01T03:00:00Z'));
    expect(parseFocusTime('2024-10-01T05:00:00.123Z')).toBe(Date.parse('2024-10-01T05:00:00.123Z'));
    expect(parseFocusTime('2024-02-30')).toBeNull();
    expect(parseFocusTime('yesterday')).toBeNull();
    expect(parseFocusTime('2024-10-01T25:00:00Z')).toBeNull();
  });

  it('names extension columns after the vendor word, and checks currency codes', () => {
    expect(extensionColumns('acme').lineItemId).toBe('x_acme_line_item_id');
    expect(isCurrencyCode('EUR')).toBe(true);
    expect(isCurrencyCode('EURO')).toBe(false);
  });
});
