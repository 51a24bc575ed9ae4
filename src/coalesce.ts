/**
 * Runs `task` one call at a time, each call doing the latest work: a call that comes while a run
 * is under way waits for one more run after it, shared by every call that comes meanwhile. For work
 * that brings something up to date with the present (a state file, the state the warehouse carries), where
 * the runs in between would be wasted. A failed run rejects the calls that share it, not later ones.
 */
export function coalesce(task: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | null = null;
  let next: Promise<void> | null = null;
  const start = (): Promise<void> => {
    const run = task().finally(() => {
      if (running === run) running = null;
    });
    running = run;
    return run;
  };
  return () => {
    if (running === null) return start();
    next ??= running
      .catch(() => undefined)
      .then(() => {
        next = null;
        return start();
      });
    return next;
  };
}
