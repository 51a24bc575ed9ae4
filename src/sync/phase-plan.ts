/**
 * What a run's phases around its sources would do, as the run's start and the dry run both ask them:
 * what an earlier run left for the start to finish (read from the outbox and the notifications), which
 * sources the seed looks for in a shared lake, and what the finish brings up to date.
 */
import type { SyncConfig } from '../config.js';
import { pending } from '../storage/outbox.js';
import type { OutboxStore } from '../storage/outbox.js';

/** What an earlier run left undone, for the start to finish first. */
export interface LeftUndone {
  /** Lake partitions (dates of a source's table) to write. */
  readonly partitions: number;
  /** Sources whose run tables the lake is to be given again. */
  readonly runTables: number;
  /** Iceberg commits and expiries in flight, to settle. */
  readonly icebergInFlight: number;
  /** Whether the working copy holds commits the published file lacks. */
  readonly publishDue: boolean;
  /** Notifications recorded and not yet sent. */
  readonly notifications: number;
}

export const NOTHING_LEFT: LeftUndone = { partitions: 0, runTables: 0, icebergInFlight: 0, publishDue: false, notifications: 0 };

/** What the outbox and the notifications of `store` hold undone. */
export async function leftUndone(store: Pick<OutboxStore, 'query'>): Promise<LeftUndone> {
  const count = async (...kinds: Parameters<typeof pending>[1][]) => (await pending(store, ...kinds)).length;
  const [{ n }] = (await store.query<{ n: number }>('notify/pending_count')) as [{ n: number }];
  return {
    partitions: await count('partition'),
    runTables: await count('run-tables'),
    icebergInFlight: await count('iceberg-commit', 'iceberg-expiry'),
    publishDue: (await count('publish', 'upload')) > 0,
    notifications: Number(n),
  };
}

/** The phases around the sources, as a person reads them (the dry run's lines, and the start's log). */
export interface PhasePlan {
  /** Sources the seed looks for in the lake (new to this warehouse, with a lake that others may share). */
  readonly seed: readonly string[];
  readonly resume: LeftUndone;
  /** What the finish brings up to date, in order. */
  readonly finish: readonly string[];
}

/** The plan of the phases around a run's sources. `carried`: the sources the warehouse carries state for. Pure. */
export function phasePlan(
  config: Pick<SyncConfig, 'format' | 'out' | 'catalog' | 'db' | 'notify' | 'metricsFile'>,
  sources: readonly { name: string; notify?: readonly string[] }[],
  carried: ReadonlySet<string>,
  resume: LeftUndone,
): PhasePlan {
  const lake =
    config.format === 'duckdb'
      ? null
      : config.catalog !== null
        ? `the Iceberg tables of ${config.catalog.url}`
        : `the lake at ${config.out}`;
  const webhooks = config.notify.length + sources.reduce((n, s) => n + (s.notify?.length ?? 0), 0);
  return {
    seed: lake === null ? [] : sources.filter((s) => !carried.has(s.name)).map((s) => s.name),
    // A run without a lake leaves a lake's backlog for the run that writes it.
    resume: lake === null ? { ...resume, partitions: 0, runTables: 0, icebergInFlight: 0 } : resume,
    finish: [
      ...(lake === null ? [] : [lake]),
      `the published warehouse ${config.db}`,
      ...(webhooks > 0 ? [`notifications to ${webhooks} webhook(s)`] : []),
      ...(config.metricsFile === undefined ? [] : [`the metrics file ${config.metricsFile}`]),
    ],
  };
}

/** What the start finishes first, in words: `12 lake partition(s), a publish of --db`, or null for nothing. Pure. */
export function leftUndoneText(left: LeftUndone, db: string): string | null {
  const parts = [
    ...(left.partitions > 0 ? [`${left.partitions} lake partition(s)`] : []),
    ...(left.runTables > 0 ? [`the lake's run tables of ${left.runTables} source(s)`] : []),
    ...(left.icebergInFlight > 0 ? [`${left.icebergInFlight} Iceberg commit(s) or expiry(ies) in flight`] : []),
    ...(left.publishDue ? [`a publish of ${db}`] : []),
    ...(left.notifications > 0 ? [`${left.notifications} notification(s)`] : []),
  ];
  return parts.length === 0 ? null : parts.join(', ');
}

/**
 * The plan's lines before and after the sources' (the dry run prints them). `resuming`: the streams whose
 * unfinished fetch a source's plan goes on with (`source/stream`), said with what was left. Pure.
 */
export function phasePlanLines(
  plan: PhasePlan,
  db: string,
  lake: string,
  resuming: readonly string[] = [],
): { before: string[]; after: string[] } {
  const outbox = leftUndoneText(plan.resume, db);
  const left = [
    ...(resuming.length > 0 ? [`the unfinished fetch of ${resuming.join(', ')} (resumed below)`] : []),
    ...(outbox === null ? [] : [outbox]),
  ];
  return {
    before: [
      `First, what an earlier run left undone: ${left.length === 0 ? 'nothing' : left.join('; ')}.`,
      ...(plan.seed.length > 0
        ? [
            `Sources this warehouse holds no state for (${plan.seed.join(', ')}) are read back from ${lake} first, if it holds their rows (moved from another runner).`,
          ]
        : []),
    ],
    after: [`Then written: ${plan.finish.join(', ')}.`],
  };
}
