import { describe, expect, it } from 'vitest';
import { HashSet52, IdHashes, hash52 } from '../../src/sync/id-set.js';

describe('IdHashes', () => {
  it('tells whether a hash was added twice, across growth, whatever the order', () => {
    const ids = new IdHashes(4);
    for (let i = 0; i < 50_000; i++) ids.add(hash52(`li-${(i * 7919) % 50_000}`));
    expect(ids.size).toBe(50_000);
    expect(ids.hasRepeat()).toBe(false);
    ids.add(hash52('li-123'));
    expect(ids.hasRepeat()).toBe(true);
    const zeros = new IdHashes();
    zeros.add(0);
    expect(zeros.hasRepeat()).toBe(false);
    zeros.add(0);
    expect(zeros.hasRepeat()).toBe(true);
    expect(new IdHashes().hasRepeat()).toBe(false);
  });

  it('spreads ids over 52 bits without collisions in a large sample', () => {
    const seen = new Set<number>();
    for (let i = 0; i < 200_000; i++) {
      const h = hash52(`li-20251201-${String(i).padStart(6, '0')}`);
      expect(Number.isInteger(h) && h >= 0 && h < 2 ** 52).toBe(true);
      seen.add(h);
    }
    expect(seen.size).toBe(200_000);
  });
});

describe('HashSet52', () => {
  it('tells repeats from new hashes, across growth', () => {
    const set = new HashSet52(4);
    for (let i = 0; i < 50_000; i++) expect(set.add(hash52(`li-${i}`))).toBe(true);
    expect(set.size).toBe(50_000);
    expect(set.add(hash52('li-123'))).toBe(false);
    expect(set.add(hash52('li-49999'))).toBe(false);
    expect(set.add(0)).toBe(true);
    expect(set.add(0)).toBe(false);
  });
});
