/**
 * Everything derived from committed rows, in one place: the Parquet lake (with `--format parquet`, on
 * disk or in a bucket), the published warehouse (a file or an object), notifications and the metrics
 * file. Each is recorded as pending in the commit that causes it (the outbox), so this only produces
 * it, and clears it once it is in place. An output that cannot be brought up to date is "behind": the
 * run goes on (the data is safe in the working copy), says so at the end, and fails (exit 1); the next
 * run finishes it first.
 */
import type { Clock } from '../api/resilience.js';
import { CostsyncError, ExitCode, describeError, errorFields, isFenced, isStopped } from '../errors.js';
import type { Logger } from '../log.js';
import type { LakeFormat, Warehouse } from '../storage/duckdb.js';
import { markMany } from '../storage/outbox.js';
import { DEFAULT_RETENTION_MS, icebergLake } from './iceberg.js';
import type { IcebergCatalog } from '../iceberg/catalog.js';
import { drainLake, fillLake, finishLake, finishRunTables, ownedBy } from './lake.js';
import { writeMetrics } from './metrics.js';
import { DEFAULT_SEND, drainNotifications, type SendOptions, type Webhook } from './notify.js';
import { logPublish, publish, type PublishDestination } from './publish.js';
import type { Bucket } from './s3.js';
import type { OutputTarget } from './target.js';

export interface DerivedOutputsOptions {
  warehouse: Warehouse;
  runId: string;
  clock: Clock;
  logger: Logger;
  /** The sources this runner owns (its objects in a shared lake). */
  sources: readonly string[];
  lake: OutputTarget | null;
  db: PublishDestination;
  publishIntervalMs: number;
  webhooks: readonly Webhook[];
  notifyFormat: SendOptions['format'];
  sendOptions?: Partial<SendOptions>;
  metricsFile?: string | undefined;
  secrets: readonly string[];
  /** Throws when this run may no longer write (its lease was taken over): called before every write. */
  guard?: () => void;
  /** How the lake is written (`--format`); parquet by default. */
  lakeFormat?: LakeFormat;
  /** `--iceberg-retention`. */
  icebergRetentionMs?: number;
  /** `--iceberg-maintenance` (on by default). */
  icebergMaintenance?: boolean;
  /** `--iceberg-repair`. */
  icebergRepair?: boolean;
  /** With `--catalog`: opens the REST catalog the Iceberg tables are committed through. */
  icebergCatalog?: (() => Promise<IcebergCatalog>) | undefined;
  /**
   * The run's stop: once aborted the lake starts nothing more (a file being written or uploaded is
   * abandoned) and what is pending stays in the outbox for the next run; the run is then `stopped`.
   */
  signal?: AbortSignal | undefined;
  /** The steps that write each output; the real ones by default (tests pass their own to check the order). */
  steps?: Partial<OutputSteps>;
}

/** What writes each output (every one reads committed rows and clears its outbox entries once in place). */
export interface OutputSteps {
  fillLake: typeof fillLake;
  drainLake: typeof drainLake;
  finishLake: typeof finishLake;
  finishRunTables: typeof finishRunTables;
  publish: typeof publish;
  drainNotifications: typeof drainNotifications;
  writeMetrics: typeof writeMetrics;
}

const REAL_STEPS: OutputSteps = { fillLake, drainLake, finishLake, finishRunTables, publish, drainNotifications, writeMetrics };

/** Errors that end the run at once (exit 5) rather than leaving an output behind. */

type OutputName = 'lake' | 'published warehouse';

/** The error a run ends with when outputs fell behind: which, why, and that nothing is lost. Pure. */
export function outputsBehindError(
  behind: ReadonlyMap<OutputName, { where: string; error: unknown }>,
  secrets: readonly string[],
): CostsyncError {
  const parts = [...behind].map(([name, b]) => `the ${name} at ${b.where} (${describeError(b.error, secrets).split('\n')[0]})`);
  const first = [...behind.values()][0]!.error;
  const fix = first instanceof CostsyncError ? first.hint : undefined;
  return new CostsyncError('CS_ERR_OUTPUT_BEHIND', `Could not bring ${parts.join(' and ')} up to date.`, {
    exitCode: ExitCode.FAILED,
    cause: first,
    hint: [fix, 'The data is safe in the working copy (in --state-dir), and the next run finishes what is pending first.']
      .filter(Boolean)
      .join(' '),
  });
}

/** Aborts the incomplete multipart uploads of exactly `key` (a killed publish's). */
async function abortUploadsOf(bucket: Bucket, key: string): Promise<number> {
  const uploads = (await bucket.incompleteUploads(key)).filter((u) => u.key === key);
  for (const u of uploads) await bucket.abortUpload(u.key, u.uploadId);
  return uploads.length;
}

export function derivedOutputs(o: DerivedOutputsOptions) {
  const { warehouse, clock, logger } = o;
  const iceberg =
    o.lakeFormat === 'iceberg'
      ? icebergLake({
          runId: o.runId,
          clock,
          sources: o.sources,
          retentionMs: o.icebergRetentionMs ?? DEFAULT_RETENTION_MS,
          maintenance: o.icebergMaintenance ?? true,
          repair: o.icebergRepair ?? false,
          notice: (m) => logger.warn(m),
          signal: o.signal,
          ...(o.icebergCatalog !== undefined && { catalog: o.icebergCatalog }),
        })
      : null;
  // The Iceberg lake fills and catches up in its first drain.
  const lakeSteps: Partial<OutputSteps> =
    iceberg === null
      ? {}
      : {
          fillLake: async () => undefined,
          drainLake: (wh, target) => iceberg.drain(wh, target),
          finishLake: (wh, target) => iceberg.finish(wh, target),
          finishRunTables: (wh, target) => iceberg.finishRunTables(wh, target),
        };
  const step: OutputSteps = { ...REAL_STEPS, ...lakeSteps, ...o.steps };
  let lastPublish = clock.now();
  /** When the Iceberg lake last committed in this run (its start: none yet). */
  let lastLakeCommit = clock.now();
  let compacted = false;
  const behind = new Map<OutputName, { where: string; error: unknown }>();
  const where = (name: OutputName) => (name === 'lake' ? o.lake!.url : o.db.kind === 'file' ? o.db.path : o.db.url);

  /** Outputs the stop left with work pending (in the outbox, for the next run). */
  const abandoned = new Set<OutputName>();
  const abandon = (name: OutputName) => {
    if (!abandoned.has(name))
      logger.info(`stopping: the ${name} at ${where(name)} is left as it is; what is pending is written by the next run`);
    abandoned.add(name);
  };
  /** Runs one output; a failure marks it behind (and it is not tried again until the end of the run). */
  const attempt = async (name: OutputName, fn: () => Promise<void>, retry = false) => {
    if (behind.has(name) && !retry) return;
    // A stop must end the process within seconds: a lake backfill's thousands of files wait for the next run.
    if (name === 'lake' && o.signal?.aborted === true) return abandon(name);
    try {
      o.guard?.();
      await fn();
      behind.delete(name);
    } catch (error) {
      if (isFenced(error)) throw error;
      if (isStopped(error) && o.signal?.aborted === true) return abandon(name);
      // With its own code: the run ends with CS_ERR_OUTPUT_BEHIND, whatever the cause.
      if (!behind.has(name))
        logger.warn(
          `the ${name} fell behind (the data is safe in the working copy): ${describeError(error, o.secrets)}`,
          errorFields(error, false),
        );
      behind.set(name, { where: where(name), error });
    }
  };
  // One publish at a time: sources commit side by side, and an upload to a bucket runs outside the
  // write queue, so two could otherwise overlap.
  let publishing: Promise<void> = Promise.resolve();
  const doPublish = () => {
    const next = publishing
      .catch(() => undefined)
      .then(async () => {
        const result = await step.publish(warehouse, o.db, { runId: o.runId, now: () => clock.now() });
        lastPublish = clock.now();
        compacted = result?.method === 'compact' && o.db.kind === 'file';
        logPublish(logger, result);
      });
    publishing = next;
    return next;
  };
  const lakeUnit = iceberg === null ? 'Parquet partition(s)' : 'date(s), counted once in each Iceberg table they changed';
  /** What the lake's drains wrote in this run, for the line that says the lake is up to date. */
  let lakeWritten = 0;
  /**
   * Whether the lake has been filled and caught up in this run: until it has, no drain runs, for a drain
   * that empties the outbox moves the lake's marks past what runs without it changed.
   */
  let filled = false;
  const fill = async () => {
    if (filled) return;
    await step.fillLake(warehouse, o.lake!, o.sources);
    filled = true;
  };
  const lake = async () => {
    await fill();
    const written = await step.drainLake(warehouse, o.lake!, o.signal, o.sources);
    lakeWritten += written;
    if (written > 0) logger.debug(`${o.lake!.url}: wrote ${written} ${lakeUnit}`);
  };
  // Pending notifications of every source (a killed run's too); a failure is a warning, never the run's.
  const notify = async () => {
    if (o.webhooks.length === 0) return;
    const counts = await step.drainNotifications(warehouse, o.webhooks, {
      ...DEFAULT_SEND,
      format: o.notifyFormat,
      ...o.sendOptions,
      now: () => clock.now(),
      warn: (m) => logger.warn(m),
    });
    await warehouse.transaction(async () => {
      for (const [source, c] of counts) await warehouse.run('notify/record_run', [o.runId, source, c.sent, c.failed]);
      await markMany(
        warehouse,
        [...counts.keys()].map((source) => ({ kind: 'run-tables', source })),
      );
    });
  };

  return {
    /** First finish what a killed or failed run left: scratch files and incomplete uploads, partitions, the publish. */
    async resume() {
      if (o.lake) {
        await attempt('lake', async () => {
          const aborted = await o.lake!.removeLeftovers(ownedBy(o.sources));
          if (aborted > 0) logger.info(`aborted ${aborted} incomplete upload(s) a killed run left in ${o.lake!.url}`);
          await lake();
        });
      }
      await attempt('published warehouse', async () => {
        if (o.db.kind === 'bucket') {
          const aborted = await abortUploadsOf(await o.db.bucket(), o.db.key);
          if (aborted > 0) logger.info(`aborted ${aborted} incomplete upload(s) of ${o.db.url} a killed run left`);
        }
        await doPublish();
      });
    },
    async afterCommit() {
      // An Iceberg lake commits on the publish's pace, not after every window: a runner's commits grow with
      // its run's length, not with its sources (a nightly's all go in at its end). A Parquet lake's files are
      // written as the windows commit.
      if (o.lake && (iceberg === null || clock.now() - lastLakeCommit >= o.publishIntervalMs)) {
        await attempt('lake', lake);
        lastLakeCommit = clock.now();
      }
      if (clock.now() - lastPublish >= o.publishIntervalMs) await attempt('published warehouse', doPublish);
    },
    /**
     * After the sources, first: the lake's last partitions, run tables and manifests. Returns the error
     * to record the run as failed with (its notification too) when an output fell behind, before
     * `deliver` sends the notifications and publishes the warehouse; null when none is behind.
     */
    async finishLake(): Promise<CostsyncError | null> {
      if (o.lake) {
        await attempt(
          'lake',
          async () => {
            await fill();
            lakeWritten += Number(
              (await step.finishLake(warehouse, o.lake!, {
                runId: o.runId,
                now: () => clock.now(),
                sources: o.sources,
                signal: o.signal,
              })) ?? 0,
            );
          },
          true,
        );
        if (!behind.has('lake') && !abandoned.has('lake'))
          logger.info(`the lake at ${o.lake.url} is up to date (this run wrote ${lakeWritten} ${lakeUnit})`);
      }
      return behind.size > 0 ? outputsBehindError(behind, o.secrets) : null;
    },
    /**
     * Then the notifications and the publish. Returns the error to record when the publish fell
     * behind (then `notify` sends that record's notification), else null.
     */
    async deliver(): Promise<CostsyncError | null> {
      await notify();
      await attempt('published warehouse', doPublish, true);
      return behind.has('published warehouse') ? outputsBehindError(behind, o.secrets) : null;
    },
    /**
     * After the publish, the lake's run tables: then the run's rows in the lake are those of the
     * warehouse and the published file. Not tried when the lake fell behind (they stay in the outbox).
     */
    async finishRunTables(): Promise<void> {
      if (o.lake) await attempt('lake', () => step.finishRunTables(warehouse, o.lake!, { sources: o.sources, signal: o.signal }));
    },
    /** Sends the pending notifications. */
    notify,
    /** Last, the metrics. Returns the error to end the run with when an output is behind, or null. */
    async end(): Promise<CostsyncError | null> {
      if (o.metricsFile !== undefined)
        await step.writeMetrics(warehouse, o.metricsFile, o.lake === null ? null : (o.lakeFormat ?? 'parquet'));
      return behind.size > 0 ? outputsBehindError(behind, o.secrets) : null;
    },
    /** With `--format iceberg`: each table's current metadata file (for the run's summary). */
    get lakeTables(): Record<string, string> | undefined {
      return iceberg?.tables();
    },
    /** With `--format iceberg`: each table's current snapshot, and where the tables are. */
    get lakeSnapshots(): { where: string | null; snapshots: Record<string, number | null> } | undefined {
      return iceberg === null ? undefined : { where: iceberg.where(), snapshots: iceberg.snapshots() };
    },
    /** The run's stop left an output with work pending: the run did not finish, whatever its sources did. */
    get abandoned(): boolean {
      return abandoned.size > 0;
    },
    /** The last publish rewrote the file compactly (free blocks had piled up): the working copy may take its place. */
    get compacted() {
      return compacted;
    },
  };
}
