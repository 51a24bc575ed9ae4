import { describe, expect, it } from 'vitest';
import { mapAtMost } from '../../src/at-most.js';
import { SOURCES_PER_CORE } from '../../src/settings.js';
import { sourcesAtOnce } from '../../src/sync/runner.js';

/** A call that ends when the test says so, counting how many are in flight. */
function gate() {
  let inFlight = 0;
  let most = 0;
  const started: number[] = [];
  const finish = new Map<number, (value: string) => void>();
  const fn = (item: number) =>
    new Promise<string>((resolve) => {
      inFlight += 1;
      most = Math.max(most, inFlight);
      started.push(item);
      finish.set(item, (value) => {
        inFlight -= 1;
        resolve(value);
      });
    });
  return { fn, started, end: (item: number) => finish.get(item)!(`r${item}`), most: () => most };
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('mapAtMost', () => {
  it("keeps at most N calls in flight, starts the next as one ends, and gives the results in the items' order", async () => {
    const g = gate();
    const all = mapAtMost([1, 2, 3, 4, 5], 2, g.fn);
    await turn();
    expect(g.started).toEqual([1, 2]);
    g.end(2);
    await turn();
    expect(g.started).toEqual([1, 2, 3]);
    g.end(3);
    g.end(1);
    await turn();
    expect(g.started).toEqual([1, 2, 3, 4, 5]);
    g.end(5);
    g.end(4);
    expect(await all).toEqual(['r1', 'r2', 'r3', 'r4', 'r5']);
    expect(g.most()).toBe(2);
  });

  it('0, or more than there are items, runs them all at once', async () => {
    for (const atMost of [0, 10]) {
      const g = gate();
      const all = mapAtMost([1, 2, 3], atMost, g.fn);
      await turn();
      expect(g.started).toEqual([1, 2, 3]);
      [3, 1, 2].forEach((i) => g.end(i));
      expect(await all).toEqual(['r1', 'r2', 'r3']);
    }
    expect(await mapAtMost([], 3, async () => 1)).toEqual([]);
  });

  it('a rejection starts no further item and rejects once the calls in flight have ended', async () => {
    const started: number[] = [];
    let endSecond: () => void = () => undefined;
    const all = mapAtMost([1, 2, 3, 4], 2, (item) => {
      started.push(item);
      if (item === 1) return Promise.reject(new Error('first failed'));
      return new Promise<number>((resolve) => {
        endSecond = () => resolve(item);
      });
    });
    let settled = false;
    all
      .catch(() => undefined)
      .finally(() => {
        settled = true;
      });
    await turn();
    expect(started).toEqual([1, 2]);
    expect(settled).toBe(false);
    endSecond();
    await expect(all).rejects.toThrow('first failed');
    expect(started).toEqual([1, 2]);
  });
});

describe('sourcesAtOnce', () => {
  it('is the setting when one is given, else SOURCES_PER_CORE for each core (at least one core)', () => {
    expect(sourcesAtOnce(7, 2)).toBe(7);
    expect(sourcesAtOnce(0, 2)).toBe(2 * SOURCES_PER_CORE);
    expect(sourcesAtOnce(0, 8)).toBe(8 * SOURCES_PER_CORE);
    expect(sourcesAtOnce(0, 0)).toBe(SOURCES_PER_CORE);
  });
});
