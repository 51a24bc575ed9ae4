/**
 * Which shard syncs which source: `--shard I/N` (1-based, as CloudQuery's `--shard`) or `--shard-count N`
 * with I from a Kubernetes Indexed Job's `JOB_COMPLETION_INDEX` (0-based), and the split itself.
 */
import { createHash } from 'node:crypto';
import { ConfigError } from './errors.js';
import { check } from './settings.js';

/** One shard of N: `index` is 1-based. */
export interface Shard {
  index: number;
  count: number;
}

/** The most shards costsync accepts: far more than any source list needs, small enough to hash every source against each. */
export const MAX_SHARDS = 10_000;

/** The placeholder `--db`, `--state-dir` and `--out` may hold: the shard's 1-based index. */
export const SHARD_PLACEHOLDER = '{shard}';

/** A source's weight on one shard: the first 8 bytes of SHA-256 of `source\0shard`, as an unsigned integer. Pure. */
function weight(source: string, shard: number): bigint {
  return createHash('sha256').update(`${source}\0${shard}`).digest().readBigUInt64BE(0);
}

/**
 * The shard (1-based, of `count`) that syncs `source`, by rendezvous (highest random weight) hashing:
 * every shard weighs the source by a stable hash of the two, and the heaviest one owns it. A source's
 * owner depends on its name and `count` only, never on which other sources exist; going from N to N+1
 * shards moves only the sources the new shard now outweighs, about 1/(N+1) of them, and each of those to
 * the new shard. Pure.
 */
export function shardOf(source: string, count: number): number {
  let best = 1;
  let bestWeight = -1n;
  for (let shard = 1; shard <= count; shard++) {
    const w = weight(source, shard);
    // Ties (a 64-bit collision) go to the lower index, so every process agrees.
    if (w > bestWeight) {
      best = shard;
      bestWeight = w;
    }
  }
  return best;
}

/** The sources of `names` that `shard` syncs, in their order. Pure. */
export function sourcesOfShard<T extends string>(names: readonly T[], shard: Shard): T[] {
  return names.filter((name) => shardOf(name, shard.count) === shard.index);
}

const SHARD_FIX = 'Write --shard I/N with 1 <= I <= N (for example --shard 1/4), or --shard-count N in a Kubernetes Indexed Job.';

/**
 * The shard a run is, from `--shard I/N`, or from `--shard-count N` and the environment's
 * `JOB_COMPLETION_INDEX` (0-based, so I is it plus one); null when neither is given. Every bad value is
 * a ConfigError naming it and the fix. Pure.
 */
export function resolveShard(
  shard: { value: unknown; from: string } | undefined,
  shardCount: { value: unknown; from: string } | undefined,
  env: NodeJS.ProcessEnv,
): Shard | null {
  if (shard !== undefined && shardCount !== undefined) {
    throw new ConfigError(
      `${shard.from} and ${shardCount.from} are both given: a run is one shard, named one way.`,
      'Pass --shard I/N, or --shard-count N in a Kubernetes Indexed Job (I comes from JOB_COMPLETION_INDEX), not both.',
    );
  }
  if (shard !== undefined) {
    const text = String(shard.value).trim();
    const match = /^(\d+)\/(\d+)$/.exec(text);
    if (match === null) throw new ConfigError(`${shard.from} must be I/N, such as 2/4; got ${JSON.stringify(shard.value)}.`, SHARD_FIX);
    const index = Number(match[1]);
    const count = Number(match[2]);
    checkCount(shard.from, count);
    if (index < 1 || index > count) {
      throw new ConfigError(
        `${shard.from} ${text}: the shard index must be from 1 to ${count} (shards are numbered from 1, as CloudQuery's --shard).`,
        `${SHARD_FIX} A Kubernetes JOB_COMPLETION_INDEX counts from 0: pass --shard-count ${count} and costsync adds one.`,
      );
    }
    return { index, count };
  }
  if (shardCount !== undefined) {
    const count = check.int(shardCount.from, shardCount.value, 1, MAX_SHARDS, 4);
    const raw = env.JOB_COMPLETION_INDEX;
    if (raw === undefined || raw.trim() === '') {
      throw new ConfigError(
        `${shardCount.from} ${count} takes this shard's index from JOB_COMPLETION_INDEX, which is not set.`,
        'Run it in a Kubernetes Job with completionMode: Indexed (which sets JOB_COMPLETION_INDEX), or pass --shard I/N instead.',
      );
    }
    if (!/^\d+$/.test(raw.trim()) || Number(raw.trim()) >= count) {
      throw new ConfigError(
        `JOB_COMPLETION_INDEX must be a whole number from 0 to ${count - 1} for ${shardCount.from} ${count}; got ${JSON.stringify(raw)}.`,
        `Give the Job as many completions as --shard-count (completions: ${count}, parallelism: ${count}), or pass --shard I/N instead.`,
      );
    }
    return { index: Number(raw.trim()) + 1, count };
  }
  return null;
}

function checkCount(from: string, count: number): void {
  if (!Number.isSafeInteger(count) || count < 1 || count > MAX_SHARDS) {
    throw new ConfigError(`${from}: the number of shards must be a whole number from 1 to ${MAX_SHARDS}; got ${count}.`, SHARD_FIX);
  }
}

/**
 * `value` with `{shard}` replaced by the shard's index; a `{shard}` with no shard, or a setting other
 * than `--db`, `--state-dir` and `--out` that holds one, is a ConfigError. Pure.
 */
export function substituteShard(value: string, from: string, shard: Shard | null): string {
  if (!value.includes(SHARD_PLACEHOLDER)) return value;
  if (shard === null) {
    throw new ConfigError(
      `${from} (${value}) holds ${SHARD_PLACEHOLDER}, but this run is not a shard.`,
      `Pass --shard I/N (or --shard-count N in a Kubernetes Indexed Job), which puts the shard's number in place of ${SHARD_PLACEHOLDER}; or write the path without it.`,
    );
  }
  return value.replaceAll(SHARD_PLACEHOLDER, String(shard.index));
}
