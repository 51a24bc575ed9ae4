/**
 * Who holds a lock or a lease, told apart well enough to know when its process is gone. A host name
 * alone is not enough: containers with host networking, and VMs cloned from one image, share a host
 * name but not a process table, and after a reboot a recycled pid can look like a live holder. So a
 * holder is named by host, boot id, PID namespace, pid and the process's start time (Linux `/proc`);
 * "its process is gone" is concluded only when all of them say so.
 */
import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';

/** A process as written into a lock file or a lease object (the last three absent where `/proc` is). */
export interface ProcessIdentity {
  host: string;
  pid: number;
  /** `/proc/sys/kernel/random/boot_id`: a new one at every boot of a machine. */
  bootId?: string;
  /** `/proc/self/ns/pid`, for example `pid:[4026531836]`: processes of another namespace are invisible. */
  pidNs?: string;
  /** Field 22 of `/proc/<pid>/stat` (clock ticks after boot): a recycled pid has another. */
  startTicks?: number;
}

/** What liveness needs to know of processes on this machine; injected in tests. */
export interface ProcessProbe {
  isAlive(pid: number): boolean;
  /** The start time of `pid` in clock ticks after boot, or null when unknown (no `/proc`, or no such process). */
  startTicks(pid: number): number | null;
}

function readOr<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch {
    return undefined;
  }
}

/** Field 22 (starttime) of a `/proc/<pid>/stat` line; the command name (field 2) may hold spaces and parentheses. Pure. */
export function startTicksOf(stat: string): number | null {
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // `rest` starts at field 3 (state), so starttime (field 22) is its 20th entry.
  const ticks = Number(rest[19]);
  return Number.isFinite(ticks) ? ticks : null;
}

/**
 * Whether a `/proc/<pid>/stat` line is of a process that has exited but not been reaped (a zombie):
 * in a container whose first process reaps nobody, a SIGKILLed run stays one. Pure.
 */
export function exitedStat(stat: string): boolean {
  const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  return state === 'Z' || state === 'X';
}

export const systemProbe: ProcessProbe = {
  isAlive(pid) {
    try {
      process.kill(pid, 0);
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'EPERM';
    }
    const stat = readOr(() => readFileSync(`/proc/${pid}/stat`, 'utf8'));
    return stat === undefined || !exitedStat(stat);
  },
  startTicks(pid) {
    const stat = readOr(() => readFileSync(`/proc/${pid}/stat`, 'utf8'));
    return stat === undefined ? null : startTicksOf(stat);
  },
};

let self: ProcessIdentity | null = null;

/** This process, as it names itself in locks and leases (read once). */
export function selfIdentity(): ProcessIdentity {
  if (self !== null) return self;
  const bootId = readOr(() => readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim());
  const pidNs = readOr(() => readlinkSync('/proc/self/ns/pid'));
  const startTicks = systemProbe.startTicks(process.pid);
  self = {
    host: hostname(), pid: process.pid,
    ...(bootId ? { bootId } : {}), ...(pidNs ? { pidNs } : {}), ...(startTicks !== null ? { startTicks } : {}),
  };
  return self;
}

/**
 * - `gone`: the holder is a process of this machine, this boot and this PID namespace that no longer
 *   runs (or its pid now belongs to a process started at another time): safe to take over at once.
 * - `alive`: it is such a process and it still runs.
 * - `unknown`: another host, another boot (this machine rebooted, or another one with the same name),
 *   another PID namespace (a container sharing the volume or the host name), or no `/proc` to tell:
 *   only time (a lease's TTL) or a person can decide.
 *
 * `legacy`: a holder written without boot id and namespace (the previous version's files, or a machine
 * without `/proc`) on this host is judged by its pid alone, as before. Pure given `probe`.
 */
export function liveness(holder: ProcessIdentity, me: ProcessIdentity, probe: ProcessProbe, options: { legacy: boolean }): 'alive' | 'gone' | 'unknown' {
  if (holder.host !== me.host) return 'unknown';
  const described = holder.bootId !== undefined && holder.pidNs !== undefined;
  const known = me.bootId !== undefined && me.pidNs !== undefined;
  if (!described || !known) {
    if (!options.legacy || described) return 'unknown';
    return probe.isAlive(holder.pid) ? 'alive' : 'gone';
  }
  if (holder.bootId !== me.bootId || holder.pidNs !== me.pidNs) return 'unknown';
  if (!probe.isAlive(holder.pid)) return 'gone';
  if (holder.startTicks !== undefined) {
    const ticks = probe.startTicks(holder.pid);
    if (ticks !== null && ticks !== holder.startTicks) return 'gone';
  }
  return 'alive';
}

/** Why a holder is `unknown`, for messages. Pure. */
export function whyUnknown(holder: ProcessIdentity, me: ProcessIdentity): string {
  if (holder.host !== me.host) return `it runs on another host (${holder.host})`;
  if (holder.bootId === undefined || me.bootId === undefined) return 'this machine cannot tell whether its process runs (no /proc)';
  if (holder.bootId !== me.bootId) return 'it ran on another boot of this host name (another machine with the same name, or this one before a reboot)';
  if (holder.pidNs !== me.pidNs) return 'it runs in another PID namespace (another container with this host name or sharing this volume)';
  return 'it may still run';
}
