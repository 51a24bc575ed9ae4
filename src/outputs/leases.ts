/**
 * The leases of a run that writes a warehouse or a lake in a bucket (see `state/lease.ts`): a probe
 * that refuses servers ignoring conditional writes, one lease per published warehouse and per lake
 * source, renewed while the run lasts.
 */
import type { Clock } from '../api/resilience.js';
import { CostsyncError, ExitCode, describeError } from '../errors.js';
import type { Logger } from '../log.js';
import { Lease } from '../state/lease.js';
import { isS3Url, loadBucket, parseS3Url } from './s3-url.js';

export interface Leases {
  check(): void;
  release(): Promise<void>;
}

/** What decides the leases: where the warehouse and the lake (null: none) are, and the lease flags. */
export interface LeaseConfig {
  db: string;
  out: string | null;
  lease: 'on' | 'off';
  leaseTtlMs: number;
}

/**
 * With the warehouse or the lake in a bucket (and `--lease on`): refuses a server that ignores
 * conditional writes, then takes a lease on the published warehouse and on each source of the lake,
 * renewed a third of the TTL apart. Null when nothing needs one. Used by `sync` and `push`.
 */
export async function takeLeases(
  config: LeaseConfig,
  sources: readonly string[],
  runId: string,
  clock: Clock,
  logger: Pick<Logger, 'warn'>,
  env: NodeJS.ProcessEnv = process.env,
): Promise<Leases | null> {
  const dbInBucket = isS3Url(config.db);
  const lakeInBucket = config.out !== null && isS3Url(config.out);
  if (config.lease === 'off' || (!dbInBucket && !lakeInBucket)) return null;
  const { conditionalWritesIgnored } = await import('../outputs/s3.js');
  const places: { bucket: string; key: string }[] = [];
  if (dbInBucket) {
    const { bucket, key } = parseS3Url(config.db, '--db');
    places.push({ bucket, key: `${key}.lease` });
  }
  if (lakeInBucket) {
    const { bucket, key } = parseS3Url(config.out!, '--out');
    const prefix = key === '' || key.endsWith('/') ? key : `${key}/`;
    for (const source of [...sources].sort()) places.push({ bucket, key: `${prefix}_costsync_lease.${source}.json` });
  }
  const first = await loadBucket(places[0]!.bucket, env);
  const ignored = await conditionalWritesIgnored(first, `${places[0]!.key}.probe-${runId}`);
  if (ignored !== null) {
    throw new CostsyncError(
      'CS_ERR_S3_NO_CONDITIONAL_WRITES',
      `The server of s3://${first.name} ignores conditional writes (${ignored}), so runners on different machines cannot be kept apart.`,
      {
        exitCode: ExitCode.USAGE,
        hint: 'Use a server that honours If-None-Match and If-Match (AWS S3, Ceph, MinIO, R2, GCS), or pass --lease off and keep runs apart by other means (a CronJob with concurrencyPolicy: Forbid).',
      },
    );
  }
  const held: Lease[] = [];
  const release = async () => {
    for (const lease of held.reverse()) await lease.release();
  };
  try {
    for (const place of places) {
      const bucket = place.bucket === first.name ? first : await loadBucket(place.bucket, env);
      held.push(
        await Lease.acquire(bucket, place.key, { ttlMs: config.leaseTtlMs, now: () => clock.now(), runId, notice: (m) => logger.warn(m) }),
      );
    }
  } catch (error) {
    await release().catch(() => undefined);
    throw error;
  }
  const timer = setInterval(
    () => {
      for (const lease of held) lease.renew().catch((e: unknown) => logger.warn(`could not renew the lease: ${describeError(e)}`));
    },
    Math.max(1000, config.leaseTtlMs / 3),
  );
  timer.unref();
  return {
    check: () => {
      for (const lease of held) lease.check();
    },
    release: async () => {
      clearInterval(timer);
      await release();
    },
  };
}
