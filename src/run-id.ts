/** Run ids shared by sync runs and pushes: sortable by start time, unique across processes. */

/** `YYYYMMDDHHmmss-<pid>-<random>` for a run that starts at `nowMs`. */
export function newRunId(nowMs: number): string {
  return `${new Date(nowMs)
    .toISOString()
    .replace(/[-:.TZ]/g, '')
    .slice(0, 14)}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
}
