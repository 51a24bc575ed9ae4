import { describe, expect, it } from 'vitest';
import { serially } from '../../src/storage/write-queue.js';

/** A task that starts when called and ends when `finish` is called. */
function gate() {
  let finish: () => void = () => undefined;
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  return { done, finish: () => finish() };
}

describe('serially: the warehouse write queue', () => {
  it('runs one task at a time, in the order given', async () => {
    const queue = serially();
    const log: string[] = [];
    let running = 0;
    let most = 0;
    const gates = [gate(), gate(), gate()];
    const results = gates.map((g, i) =>
      queue(async () => {
        running += 1;
        most = Math.max(most, running);
        log.push(`start ${i}`);
        await g.done;
        log.push(`end ${i}`);
        running -= 1;
        return i;
      }),
    );
    // Finished out of order: each still waits for the one before.
    gates[2]!.finish();
    gates[1]!.finish();
    gates[0]!.finish();
    expect(await Promise.all(results)).toEqual([0, 1, 2]);
    expect(log).toEqual(['start 0', 'end 0', 'start 1', 'end 1', 'start 2', 'end 2']);
    expect(most).toBe(1);
  });

  it('gives a failure to its caller only, and goes on with the next task', async () => {
    const queue = serially();
    const failed = queue(async () => {
      throw new Error('statement failed');
    });
    const next = queue(async () => 'next ran');
    await expect(failed).rejects.toThrow('statement failed');
    expect(await next).toBe('next ran');
  });
});
