/**
 * Runs `fn` over `items` with at most `atMost` calls in flight (0, or at least the number of items:
 * all at once), each next item starting as soon as a call ends. The results come in the items' order.
 * On the first rejection no further item starts, and the returned promise rejects with it once the
 * calls in flight have ended.
 *
 * Not p-map: at a rejection it either rejects at once, the calls in flight still running (a run would
 * close the warehouse under them), or goes on starting every remaining item (`stopOnError: false`).
 */
export async function mapAtMost<T, R>(items: readonly T[], atMost: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  const lanes = atMost <= 0 ? items.length : Math.min(atMost, items.length);
  let next = 0;
  let failure: { error: unknown } | null = null;
  const lane = async (): Promise<void> => {
    while (failure === null && next < items.length) {
      const index = next++;
      try {
        results[index] = await fn(items[index]!, index);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: lanes }, lane));
  if (failure !== null) throw (failure as { error: unknown }).error;
  return results;
}
