import { describe, expect, it } from 'vitest';
import { coalesce } from '../../src/coalesce.js';

/** A task whose runs finish when the test says, counted. */
function gatedTask() {
  const gates: Array<{ resolve: () => void; reject: (e: Error) => void }> = [];
  const task = () =>
    new Promise<void>((resolve, reject) => {
      gates.push({ resolve, reject });
    });
  return { task, gates };
}

describe('coalesce', () => {
  it('runs at once when idle, and shares one more run among every call that comes while one is under way', async () => {
    const { task, gates } = gatedTask();
    const call = coalesce(task);
    const first = call();
    const second = call();
    const third = call();
    expect(gates.length).toBe(1);
    expect(second).toBe(third);
    gates[0]!.resolve();
    await first;
    await Promise.resolve();
    await Promise.resolve();
    expect(gates.length).toBe(2);
    gates[1]!.resolve();
    await second;
    expect(gates.length).toBe(2);
    const fourth = call();
    expect(gates.length).toBe(3);
    gates[2]!.resolve();
    await fourth;
  });

  it('rejects the calls sharing a failed run, and a later call runs afresh', async () => {
    const { task, gates } = gatedTask();
    const call = coalesce(task);
    const first = call();
    gates[0]!.reject(new Error('disk full'));
    await expect(first).rejects.toThrow('disk full');
    const again = call();
    expect(gates.length).toBe(2);
    gates[1]!.resolve();
    await expect(again).resolves.toBeUndefined();
  });

  it('runs the waiting call after a failed run', async () => {
    const { task, gates } = gatedTask();
    const call = coalesce(task);
    const first = call();
    const waiting = call();
    gates[0]!.reject(new Error('busy'));
    await expect(first).rejects.toThrow('busy');
    await Promise.resolve();
    await Promise.resolve();
    expect(gates.length).toBe(2);
    gates[1]!.resolve();
    await expect(waiting).resolves.toBeUndefined();
  });
});
