/**
 * Named crash points for the kill tests: `COSTSYNC_FAILPOINT=NAME:N` makes the process SIGKILL itself
 * the Nth time it reaches `NAME`, so a test can kill a run at an exact step (after a commit, before a
 * publish's rename) instead of at a time that lands somewhere different on every machine. Unset, each
 * point is one comparison. `NAME:N:stop` stops the run there instead, as a SIGTERM seen at that very
 * step would (the signal's handler runs before the point returns), so a test knows what came after.
 */

/** The points, as data: where each stands. */
export const FAILPOINTS = {
  open: 'right after the working copy is opened (DuckDB has replayed its WAL), before anything is written',
  'state-save': 'right after the state file is written',
  commit: 'right after a warehouse transaction commits',
  'lake-put': 'right after a lake file is put at its key',
  'iceberg-commit': 'right after an Iceberg snapshot is committed, before its outbox entries are cleared',
  publish: 'right before the published warehouse is renamed over --db (or uploaded)',
} as const;

export type FailpointName = keyof typeof FAILPOINTS;

/** `NAME:N[:stop]` as a point, a count and what happens there; null when unset or malformed (a test's typo must not crash a user's run). Pure. */
export function parseFailpoint(text: string | undefined): { name: FailpointName; at: number; stop: boolean } | null {
  const m = /^([a-z-]+):(\d+)(:stop)?$/.exec(text ?? '');
  if (m === null || !(m[1]! in FAILPOINTS) || Number(m[2]) < 1) return null;
  return { name: m[1] as FailpointName, at: Number(m[2]), stop: m[3] !== undefined };
}

const armed = parseFailpoint(process.env.COSTSYNC_FAILPOINT);
let hits = 0;

/** Reached `name`: dies here when the environment armed this point for this hit. */
export function failpoint(name: FailpointName): void {
  if (armed === null || armed.name !== name) return;
  if (++hits !== armed.at) return;
  if (!armed.stop) process.kill(process.pid, 'SIGKILL');
  // The SIGTERM handler, called now: a real signal's would run only once the event loop turns.
  else (process.emit as (event: string, signal: string) => boolean)('SIGTERM', 'SIGTERM');
}
