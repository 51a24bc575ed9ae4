/** Counts of requests per route and status, for tests and benchmarks to read. */

export interface LoggedRequest {
  method: string;
  route: string;
  /** The query string, without its `?` (for --log-requests and the request benchmarks: which dates, which grouping). */
  query?: string;
  status: number;
  code: string | null;
  atMs: number;
  /** The workspace of the key that asked, once the key is known (per-key figures in benchmarks). */
  workspace?: string;
}

export class RequestLog {
  private readonly counts = new Map<string, number>();
  private readonly recentEntries: LoggedRequest[] = [];
  total = 0;

  constructor(private readonly keepRecent = 1000) {}

  record(entry: LoggedRequest): void {
    this.total += 1;
    const key = `${entry.route} ${entry.status}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    this.recentEntries.push(entry);
    if (this.recentEntries.length > this.keepRecent) this.recentEntries.shift();
  }

  /** Requests matching a route (e.g. `line-items`) and/or a status; all when both are absent. */
  count(filter: { route?: string; status?: number } = {}): number {
    let n = 0;
    for (const [key, value] of this.counts) {
      const [route, status] = key.split(' ');
      if (filter.route !== undefined && route !== filter.route) continue;
      if (filter.status !== undefined && Number(status) !== filter.status) continue;
      n += value;
    }
    return n;
  }

  /** `{route: {status: count}}` for printing. */
  summary(): Record<string, Record<string, number>> {
    const out: Record<string, Record<string, number>> = {};
    for (const [key, value] of this.counts) {
      const [route, status] = key.split(' ') as [string, string];
      (out[route] ??= {})[status] = value;
    }
    return out;
  }

  /** The last requests, oldest first (at most `keepRecent`). */
  recent(): readonly LoggedRequest[] {
    return this.recentEntries;
  }

  reset(): void {
    this.counts.clear();
    this.recentEntries.length = 0;
    this.total = 0;
  }
}
