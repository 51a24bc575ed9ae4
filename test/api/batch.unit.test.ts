import { describe, expect, it } from 'vitest';
import { batched } from '../../src/batch.js';

/** A queue whose turns start when the test says, and the loads it was given, with their keys. */
function gatedQueue() {
  const turns: Array<() => void> = [];
  const turn = <T>(fn: () => Promise<T>) =>
    new Promise<void>((resolve) => {
      turns.push(resolve);
    }).then(fn);
  const loads: string[][] = [];
  const load = async (keys: readonly string[]) => {
    loads.push([...keys]);
    return keys.map((k) => `${k}!`);
  };
  return { turn, turns, loads, load };
}

describe('batched', () => {
  it('answers every key asked for while a load waits for its turn with that one load, each its own answer', async () => {
    const { turn, turns, loads, load } = gatedQueue();
    const lookup = batched(turn, load);
    const answers = Promise.all(['a', 'b', 'a', 'c'].map(lookup));
    expect(turns.length).toBe(1);
    turns[0]!();
    expect(await answers).toEqual(['a!', 'b!', 'a!', 'c!']);
    expect(loads).toEqual([['a', 'b', 'a', 'c']]);
  });

  it('sends a key asked for once its load has started to the next load, which sees what happened before it', async () => {
    const { turn, turns, loads } = gatedQueue();
    let version = 0;
    let started!: () => void;
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    let finish!: () => void;
    const lookup = batched(turn, async (keys: readonly string[]) => {
      loads.push([...keys]);
      const seen = version;
      if (loads.length === 1) {
        started();
        await new Promise<void>((resolve) => {
          finish = resolve;
        });
      }
      return keys.map((k) => `${k}@${seen}`);
    });
    const first = lookup('a');
    turns[0]!();
    await running;
    version = 1;
    const second = lookup('b');
    expect(turns.length).toBe(2);
    finish();
    expect(await first).toBe('a@0');
    turns[1]!();
    expect(await second).toBe('b@1');
    expect(loads).toEqual([['a'], ['b']]);
  });

  it('rejects the calls that share a failed load, and the next load goes ahead', async () => {
    const { turn, turns } = gatedQueue();
    let fail = true;
    const lookup = batched(turn, async (keys: readonly string[]) => {
      if (fail) throw new Error('scan failed');
      return keys.map((k) => k.toUpperCase());
    });
    const one = lookup('a');
    const two = lookup('b');
    turns[0]!();
    await expect(one).rejects.toThrow('scan failed');
    await expect(two).rejects.toThrow('scan failed');
    fail = false;
    const three = lookup('c');
    turns[1]!();
    expect(await three).toBe('C');
  });
});
