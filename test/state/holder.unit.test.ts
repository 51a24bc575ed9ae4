import { describe, expect, it } from 'vitest';
import { exitedStat, liveness, startTicksOf, whyUnknown, type ProcessIdentity, type ProcessProbe } from '../../src/state/holder.js';

const me: ProcessIdentity = { host: 'node-1', pid: 100, bootId: 'boot-a', pidNs: 'pid:[1]', startTicks: 5000 };
const probe = (alive: Record<number, number | null>): ProcessProbe => ({
  isAlive: (pid) => pid in alive,
  startTicks: (pid) => alive[pid] ?? null,
});

describe('liveness of a lock or lease holder', () => {
  it('is gone only when host, boot and PID namespace match and the pid runs no more, or runs a process started at another time', () => {
    const holder = { host: 'node-1', pid: 42, bootId: 'boot-a', pidNs: 'pid:[1]', startTicks: 900 };
    expect(liveness(holder, me, probe({}), { legacy: false })).toBe('gone');
    expect(liveness(holder, me, probe({ 42: 900 }), { legacy: false })).toBe('alive');
    expect(liveness(holder, me, probe({ 42: 1234 }), { legacy: false })).toBe('gone');
  });

  it('is unknown on another host, another boot, another PID namespace, or without /proc', () => {
    const base = { host: 'node-1', pid: 42, bootId: 'boot-a', pidNs: 'pid:[1]' };
    for (const holder of [
      { ...base, host: 'node-2' },
      { ...base, bootId: 'boot-b' },
      { ...base, pidNs: 'pid:[2]' },
    ]) {
      expect(liveness(holder, me, probe({}), { legacy: true }), JSON.stringify(holder)).toBe('unknown');
    }
    expect(whyUnknown({ ...base, pidNs: 'pid:[2]' }, me)).toMatch(/another PID namespace/);
    expect(whyUnknown({ ...base, bootId: 'boot-b' }, me)).toMatch(/another boot/);
    const noProc = { host: 'node-1', pid: 100 };
    // A lease falls back to its TTL; a lock file (legacy) to the pid, as before.
    expect(liveness({ host: 'node-1', pid: 42 }, noProc, probe({}), { legacy: false })).toBe('unknown');
    expect(liveness({ host: 'node-1', pid: 42 }, noProc, probe({}), { legacy: true })).toBe('gone');
    expect(liveness({ host: 'node-1', pid: 42 }, me, probe({ 42: 1 }), { legacy: true })).toBe('alive');
  });

  it('reads the start time from /proc/<pid>/stat, whatever the command name holds', () => {
    const fields = Array.from({ length: 50 }, (_, i) => String(i + 3));
    expect(startTicksOf(`123 (node (x) y) ${fields.join(' ')}`)).toBe(22);
  });

  it('takes a process that exited and was never reaped (a zombie, in a container whose first process reaps nobody) for gone', () => {
    expect(exitedStat('123 (node) Z 1 123 123 0 -1')).toBe(true);
    expect(exitedStat('123 (a ) Z b) S 1 123 123 0 -1')).toBe(false);
    expect(exitedStat('123 (node) S 1 123 123 0 -1')).toBe(false);
    expect(exitedStat('123 (node) D 1 123 123 0 -1')).toBe(false);
  });
});
