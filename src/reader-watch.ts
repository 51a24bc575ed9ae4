/**
 * Notices that the reader of a pipe on stdout or stderr went away (`sync 2>&1 | head -3`) while costsync
 * has nothing to write. Node learns of a closed pipe only when a write fails, and has no poll(2); GNU
 * tail's `-f` polls its own stdout for exactly this (coreutils 8.28 and later) and dies of SIGPIPE the
 * moment the reader closes. So one `tail -f /dev/null` per pipe, writing nothing, is the watch. Where
 * there is no such tail (macOS, busybox), the watch is off and the next write tells, as before.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fstatSync } from 'node:fs';

export type StdStream = 'stdout' | 'stderr';

/** What fstat says of a standard stream's descriptor. */
export interface StreamStat {
  which: StdStream;
  fd: number;
  fifo: boolean;
  /** The pipe's identity: two streams on one pipe (`2>&1 |`) are watched once. */
  dev: number;
  ino: number;
}

/** The pipes to watch: each FIFO once, with the streams it carries. Files, terminals and sockets are left out. Pure. */
export function pipesToWatch(stats: StreamStat[]): { fd: number; streams: StdStream[] }[] {
  const pipes = new Map<string, { fd: number; streams: StdStream[] }>();
  for (const s of stats.filter((st) => st.fifo)) {
    const key = `${s.dev}:${s.ino}`;
    const pipe = pipes.get(key);
    if (pipe) pipe.streams.push(s.which);
    else pipes.set(key, { fd: s.fd, streams: [s.which] });
  }
  return [...pipes.values()];
}

/** How the watching tail ended: SIGPIPE means the reader went away; anything else means tail cannot watch here. Pure. */
export function readerGone(signal: NodeJS.Signals | null): boolean {
  return signal === 'SIGPIPE';
}

/** This process's stdout and stderr, as fstat sees them (a descriptor fstat cannot read is left out). */
export function standardStreams(): StreamStat[] {
  const stats: StreamStat[] = [];
  for (const [which, fd] of [
    ['stdout', 1],
    ['stderr', 2],
  ] as const) {
    try {
      const st = fstatSync(fd);
      stats.push({ which, fd, fifo: st.isFIFO(), dev: st.dev, ino: st.ino });
    } catch {
      // A closed descriptor: nothing to watch.
    }
  }
  return stats;
}

/**
 * Watches each pipe among `stats` and calls `onGone` with its streams once its reader goes away. Returns
 * the function that ends the watch (called also when this process exits, so a pipe is never held open
 * after costsync is done; tail's `--pid` ends it within half a second if costsync is killed).
 */
export function watchReaders(stats: StreamStat[], onGone: (streams: StdStream[]) => void, start: typeof spawn = spawn): () => void {
  const children: ChildProcess[] = [];
  for (const pipe of pipesToWatch(stats)) {
    const child = start('tail', ['-f', '-s', '0.5', `--pid=${process.pid}`, '/dev/null'], {
      stdio: ['ignore', pipe.fd, 'ignore'],
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C' },
    });
    child.on('error', () => undefined); // no tail here: the next write tells
    child.on('exit', (_code, signal) => {
      if (readerGone(signal)) onGone(pipe.streams);
    });
    child.unref();
    children.push(child);
  }
  const end = () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill();
  };
  process.once('exit', end);
  return () => {
    process.removeListener('exit', end);
    end();
  };
}
