/**
 * What the kill tests share: an emulator whose requests a kill runner counts, in a temp directory (both
 * closed whatever the test does); runners with sources of their own in one config file; and the loop that
 * SIGKILLs run after run, then compares the warehouse with a clean run's.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { SCOPES } from '../../src/api/types.js';
import type { Emulator, EmulatorInput } from '../../src/emulator/server.js';
import { dbIn, killRunner, tableDigest, withEmulator, withTempDir, type KillPoint } from './helpers.js';

/** A sync's environment against the emulator: its demo key, in UTC. */
export const DEMO_ENV: Readonly<Record<string, string>> = { COSTSYNC_API_KEY: 'demo-key', TZ: 'UTC' };

export type KillRunner = ReturnType<typeof killRunner>;
export type KillResult = Awaited<ReturnType<KillRunner['run']>>;

/**
 * Kill points for a loop: COSTSYNC_KILLS, or `fallback` (3 in `npm test`, 12 in the slow tier by default;
 * vitest.config.ts sets COSTSYNC_SLOW_TIER there, `npm run test:chaos` sets COSTSYNC_KILLS to 30).
 */
export function killCount(fallback = process.env.COSTSYNC_SLOW_TIER === '1' ? 12 : 3): number {
  return Number(process.env.COSTSYNC_KILLS ?? fallback);
}

export interface KillRig {
  emulator: Emulator;
  url: string;
  dir: string;
  /** Runs the CLI and SIGKILLs it at a point; counts the emulator's requests (those `counts` picks). */
  runner: KillRunner;
}

/**
 * Runs `fn` with a kill runner (`env`, the demo key by default), an emulator from `input` whose requests
 * it counts (after the input's own `onRequest`), and a temp directory; both are closed even when `fn` throws.
 */
export async function withKillRig<T>(
  input: EmulatorInput,
  fn: (rig: KillRig) => Promise<T>,
  options: { env?: Record<string, string>; counts?: (entry: { route: string }) => boolean } = {},
): Promise<T> {
  const runner = killRunner(options.env ?? DEMO_ENV, options.counts);
  const own = input.onRequest;
  const onRequest: EmulatorInput['onRequest'] = (entry) => {
    own?.(entry);
    runner.onRequest(entry);
  };
  return await withEmulator({ ...input, onRequest }, (emulator) => withTempDir((dir) => fn({ emulator, url: emulator.url, dir, runner })));
}

/**
 * Kill point `i` of a loop: an even one at a random request from `requests[0]` on (`requests[1]` to pick
 * from), an odd one at a random failpoint of `steps` (the process start, a state write, a commit, a publish,
 * a lake put ...), reached from once to `times` times. One or two `rng()` a point; events, never delays.
 */
export function alternatingPoint(rng: () => number, i: number, requests: [number, number], steps: readonly [string, number][]): KillPoint {
  if (i % 2 === 0) return { atRequest: requests[0] + Math.floor(rng() * requests[1]) };
  const [name, times] = steps[Math.floor(rng() * steps.length)]!;
  return { failpoint: `${name}:${1 + Math.floor(rng() * times)}` };
}

/** Runs `run(i)` `kills` times, each run meant to be SIGKILLed: one the kill missed must exit 0. Returns how many were killed. */
export async function killRuns(kills: number, run: (i: number) => Promise<KillResult>): Promise<number> {
  let killed = 0;
  for (let i = 0; i < kills; i++) {
    const result = await run(i);
    if (result.signal === 'SIGKILL') killed += 1;
    else expect(result.code, result.stderr).toBe(0);
  }
  return killed;
}

/**
 * The crash loop: a run in `dir/clean` that finishes, `kills` runs in `dir/crashy` SIGKILLed at `point(i)`,
 * then one there that finishes (those two in this process: nothing kills them); more than half must have been killed. `args(sub)` is a run's command line
 * (after node) with its warehouse `c.duckdb` in `dir/sub`. Returns the clean run's tables (`tableDigest`).
 */
export async function cleanThenKilled(
  rig: KillRig,
  args: (sub: string) => string[],
  kills: number,
  point: (i: number) => KillPoint,
): Promise<Awaited<ReturnType<typeof tableDigest>>> {
  const clean = await rig.runner.finish(args('clean'));
  expect(clean.code, clean.stderr).toBe(0);
  const expected = await tableDigest(join(rig.dir, 'clean', 'c.duckdb'));
  const killed = await killRuns(kills, (i) => rig.runner.run(args('crashy'), point(i)));
  const last = await rig.runner.finish(args('crashy'));
  expect(last.code, last.stderr).toBe(0);
  expect(killed).toBeGreaterThan(kills / 2);
  return expected;
}

/** The emulator's keys for workspaces `names`: key `k-<name>` each, every scope. */
export function workspaceKeys(names: readonly string[]) {
  return { keys: names.map((w) => ({ key: `k-${w}`, scopes: [...SCOPES], plan: 'business' as const, workspace: w })), connections: [] };
}

/**
 * A config file in `dir` with a source per workspace of `names` at `url` (its key in `KEY_<NAME>`) and
 * no rate limit, and the environment that holds those keys, in UTC, with `env` added.
 */
export function sourcesConfig(dir: string, url: string, names: readonly string[], env: Record<string, string> = {}) {
  const config = join(dir, 'costsync.config.json');
  writeFileSync(
    config,
    JSON.stringify({
      'rate-limit': 100000,
      sources: names.map((w) => ({ name: w, 'base-url': url, 'api-key-env': `KEY_${w.toUpperCase()}` })),
    }),
  );
  return { config, env: { ...Object.fromEntries(names.map((w) => [`KEY_${w.toUpperCase()}`, `k-${w}`])), TZ: 'UTC', ...env } };
}

/** A sync of the config file's source `source`, with its warehouse (`c.duckdb`) and `state/` in `dir`, then `extra`. */
export function sourceSyncCommand(config: string, source: string, dir: string, extra: readonly string[] = []): string[] {
  return ['sync', '--config', config, '--source', source, '--db', dbIn(dir), '--state-dir', join(dir, 'state'), ...extra];
}
