/**
 * Many callers' lookups answered by one load: a key asked for while a load waits for its turn joins
 * that load; one asked for once it has started waits for the next. `turn` runs a function when its
 * turn comes (a queue), so a load always sees the data as it is after the call that asked. For scans
 * each source would otherwise make alone: with hundreds of sources, one scan instead of hundreds.
 * `load` answers its keys in order. A failed load rejects the calls that share it, not later ones.
 */
export function batched<K, V>(
  turn: <T>(fn: () => Promise<T>) => Promise<T>,
  load: (keys: readonly K[]) => Promise<V[]>,
): (key: K) => Promise<V> {
  let open: { keys: K[]; answers: Promise<V[]> } | null = null;
  return (key) => {
    if (open === null) {
      const batch: { keys: K[]; answers: Promise<V[]> } = { keys: [], answers: Promise.resolve([]) };
      open = batch;
      batch.answers = turn(() => {
        // From here on, keys go to the next batch.
        if (open === batch) open = null;
        return load(batch.keys);
      });
    }
    const batch = open;
    const at = batch.keys.push(key) - 1;
    return batch.answers.then((answers) => answers[at]!);
  };
}
