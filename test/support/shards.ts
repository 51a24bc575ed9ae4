/** What the shard tests share: one config file for every shard, and the sources a warehouse synced. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SPAN, queryDb } from './helpers.js';

export const clock = { now: () => Date.parse('2025-07-01T06:00:00Z') };
export const NAMES = ['acme-eu', 'acme-us', 'acme-apac', 'globex', 'initech', 'umbrella', 'hooli', 'stark'];
export const ENV = { SHARD_TEST_KEY: 'demo-key', TZ: 'UTC' };

/** One config file for every shard: the sources, and {shard} in the warehouse's and the state's paths. */
export function writeConfig(dir: string, url: string, more: Record<string, unknown> = {}): string {
  const path = join(dir, 'costsync.config.json');
  writeFileSync(
    path,
    JSON.stringify({
      'base-url': url,
      db: join(dir, 'costs-{shard}.duckdb'),
      'state-dir': join(dir, 'state-{shard}'),
      'start-date': SPAN.startDate,
      until: SPAN.endDate,
      'rate-limit': 100_000,
      streams: 'line_items,rollups',
      sources: NAMES.map((name) => ({ name, 'api-key-env': 'SHARD_TEST_KEY' })),
      ...more,
    }),
  );
  return path;
}

export async function syncedSources(db: string): Promise<string[]> {
  const rows = await queryDb<{ source: string }>(db, "SELECT DISTINCT source FROM sync_runs WHERE outcome = 'success' ORDER BY 1");
  return rows.map((r) => r.source);
}
