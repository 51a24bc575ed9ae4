/**
 * The run's facts for monitoring: gathered from the warehouse's committed rows (the last finished run
 * of each source, open anomalies, the latest day's spend), printed by `costsync status --format json`
 * and written after every run as Prometheus text for node_exporter's textfile collector.
 */
import { readFile } from 'node:fs/promises';
import { writeFileAtomic } from '../durable-file.js';
import type { LakeFormat } from '../storage/duckdb.js';
import { storedKinds, type OutboxKind } from '../storage/outbox.js';

interface Queryable {
  query<T = Record<string, unknown>>(name: string, params?: string[]): Promise<T[]>;
}

export interface MetricFacts {
  runs: {
    source: string;
    run_id: string;
    outcome: string;
    started_s: number;
    ended_s: number | null;
    duration_s: number | null;
    requests: number;
    retries: number;
    rate_limited: number;
    warnings: number;
    notifications_sent: number;
    notification_failures: number;
    last_success_s: number | null;
  }[];
  streams: {
    source: string;
    stream: string;
    inserted: number;
    updated: number;
    deleted: number;
    older_changed: number;
    older_synced: number;
    responses: Record<string, number>;
  }[];
  openAnomalies: { source: string; severity: string; n: number }[];
  latestSpend: { source: string; provider: string; day_s: number; cost_usd: number }[];
  /** Derived outputs still to write (lake, manifest, publish, notify). */
  outboxPending: { output: string; n: number }[];
}

/**
 * Whose pending work the outbox figures count: the lake a run writes (null: none), read from its working
 * copy at its end; or `published`, the published file (status, a refused run), whatever lake wrote it.
 */
export type PendingScope = LakeFormat | null | 'published';

/** The outbox items counted as the lake's and the manifests' pending work. Pure. */
export function pendingKinds(scope: PendingScope): { lake: OutboxKind[]; manifest: OutboxKind[] } {
  const partitions: OutboxKind[] = ['partition', 'iceberg-commit', 'iceberg-expiry'];
  // A run with no lake still marks its run tables, for a lake a later run writes: nothing waits on this run.
  if (scope === null) return { lake: [], manifest: [] };
  // The file is published before the run's run tables reach the lake, so it always holds their mark.
  if (scope === 'published') return { lake: partitions, manifest: ['manifest'] };
  return { lake: [...partitions, 'run-tables'], manifest: scope === 'parquet' ? ['manifest'] : [] };
}

/** The facts of the warehouse, its pending work counted as `scope` says. */
export async function gatherMetrics(warehouse: Queryable, scope: PendingScope): Promise<MetricFacts> {
  const kinds = pendingKinds(scope);
  const streams = await warehouse.query<Omit<MetricFacts['streams'][number], 'responses'> & { responses: string }>('metrics/streams');
  return {
    runs: await warehouse.query('metrics/runs'),
    streams: streams.map((s) => ({ ...s, responses: JSON.parse(s.responses) as Record<string, number> })),
    openAnomalies: await warehouse.query('metrics/open_anomalies'),
    latestSpend: await warehouse.query('metrics/latest_spend'),
    outboxPending: await warehouse.query('metrics/outbox_pending', [
      storedKinds(kinds.lake).join(','),
      storedKinds(kinds.manifest).join(','),
    ]),
  };
}

// `locked`: a run refused because another held the lock or lease (exit 5); it writes the file all the same.
const OUTCOMES = ['success', 'stopped', 'failed', 'killed', 'locked'];
const SEVERITIES = ['low', 'medium', 'high', 'critical'];

function label(value: string): string {
  return value.replaceAll('\\', '\\\\').replaceAll('"', '\\"').replaceAll('\n', '\\n');
}

/** The facts in the Prometheus text exposition format (gauges: each describes the last run). Pure. */
export function prometheusText(facts: MetricFacts): string {
  const out: string[] = [];
  const metric = (name: string, help: string, samples: [Record<string, string>, number | null][]) => {
    const present = samples.filter(([, v]) => v !== null && Number.isFinite(v));
    if (present.length === 0) return;
    out.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`);
    for (const [labels, value] of present) {
      const l = Object.entries(labels)
        .map(([k, v]) => `${k}="${label(v)}"`)
        .join(',');
      out.push(`${name}${l ? `{${l}}` : ''} ${value}`);
    }
  };
  const runs = facts.runs;
  metric(
    'costsync_last_run_timestamp_seconds',
    'When the last run of the source ended (Unix time).',
    runs.map((r) => [{ source: r.source }, r.ended_s]),
  );
  metric(
    'costsync_last_success_timestamp_seconds',
    'When the last successful run of the source ended (Unix time).',
    runs.map((r) => [{ source: r.source }, r.last_success_s]),
  );
  metric(
    'costsync_last_run_duration_seconds',
    'How long the last run of the source took.',
    runs.map((r) => [{ source: r.source }, r.duration_s]),
  );
  metric(
    'costsync_last_run_outcome',
    "The last run's outcome: 1 for the outcome it had, 0 for the others.",
    runs.flatMap((r) => OUTCOMES.map((o): [Record<string, string>, number] => [{ source: r.source, outcome: o }, r.outcome === o ? 1 : 0])),
  );
  metric(
    'costsync_last_run_rows',
    'Rows the last run inserted, updated and deleted, per stream.',
    facts.streams.flatMap((s) =>
      (['inserted', 'updated', 'deleted'] as const).map((c): [Record<string, string>, number] => [
        { source: s.source, stream: s.stream, change: c },
        s[c],
      ]),
    ),
  );
  metric(
    'costsync_last_run_older_dates',
    'Older dates (outside the lookback) the last run found no longer equal to the API, and those it synced again, per stream.',
    facts.streams.flatMap((s) =>
      (['changed', 'synced'] as const).map((c): [Record<string, string>, number] => [
        { source: s.source, stream: s.stream, dates: c },
        Number(s[`older_${c}`]),
      ]),
    ),
  );
  metric(
    'costsync_last_run_requests',
    'Requests the last run made, by endpoint (stream) and HTTP status.',
    facts.streams.flatMap((s) =>
      Object.entries(s.responses).map(([status, n]): [Record<string, string>, number] => [
        { source: s.source, endpoint: s.stream, status },
        n,
      ]),
    ),
  );
  metric(
    'costsync_last_run_retries',
    'Requests the last run retried.',
    runs.map((r) => [{ source: r.source }, r.retries]),
  );
  metric(
    'costsync_last_run_rate_limited',
    'Responses 429 (rate limited) in the last run.',
    runs.map((r) => [{ source: r.source }, r.rate_limited]),
  );
  metric(
    'costsync_last_run_warnings',
    'Warnings the last run recorded.',
    runs.map((r) => [{ source: r.source }, r.warnings]),
  );
  metric(
    'costsync_last_run_notification_failures',
    'Notification events the last run could not send (they wait for the next run).',
    runs.map((r) => [{ source: r.source }, r.notification_failures]),
  );
  const open = new Map(facts.openAnomalies.map((a) => [`${a.source}\u0000${a.severity}`, a.n]));
  metric(
    'costsync_open_anomalies',
    'Anomalies still new or acknowledged, by severity.',
    runs.flatMap((r) =>
      SEVERITIES.map((s): [Record<string, string>, number] => [{ source: r.source, severity: s }, open.get(`${r.source}\u0000${s}`) ?? 0]),
    ),
  );
  metric(
    'costsync_latest_day_spend_usd',
    'Spend on the latest day with data, per provider, in US dollars.',
    facts.latestSpend.map((s) => [{ source: s.source, provider: s.provider }, s.cost_usd]),
  );
  metric(
    'costsync_latest_day_timestamp_seconds',
    'The latest day with data (Unix time of its start, UTC).',
    [...new Map(facts.latestSpend.map((s) => [s.source, s.day_s])).entries()].map(([source, day]) => [{ source }, day]),
  );
  metric(
    'costsync_outbox_pending',
    "Derived outputs committed but not yet in place (the run's lake's partitions, commits and run tables, a Parquet lake's manifests, the published warehouse, notifications); the next run with the same outputs finishes them.",
    facts.outboxPending.map((p) => [{ output: p.output }, p.n]),
  );
  return `${out.join('\n')}\n`;
}

/** Writes the metrics file atomically (a collector never reads half of it). */
export async function writeMetrics(warehouse: Queryable, path: string, lake: LakeFormat | null): Promise<void> {
  await writeFileAtomic(path, prometheusText(await gatherMetrics(warehouse, lake)), { mode: 0o644 });
}

/** The metrics that describe the last run only; the others (last success, anomalies, spend, outbox) outlive a refused run. */
const RUN_METRIC = /^costsync_last_run_/;

/** A metrics file's blocks (HELP, TYPE and samples) by metric name, in order. Pure. */
export function metricBlocks(text: string): Map<string, string[]> {
  const blocks = new Map<string, string[]>();
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const name = /^# (?:HELP|TYPE) (\S+)/.exec(line)?.[1] ?? /^([a-zA-Z_:][a-zA-Z0-9_:]*)/.exec(line)?.[1];
    if (name === undefined) continue;
    blocks.set(name, [...(blocks.get(name) ?? []), line]);
  }
  return blocks;
}

/**
 * The metrics file of a run refused at its start (outcome `locked`): the run's own gauges for each of its
 * sources, and what the previous file said of the rest, carried over as it was (the last success's
 * timestamp above all: an alert on its age must not fire, nor be silenced, because one run was refused). Pure.
 */
export function refusedRunText(previous: string | null, run: { sources: readonly string[]; startedS: number; endedS: number }): string {
  const own = metricBlocks(
    prometheusText({
      runs: run.sources.map((source) => ({
        source,
        run_id: '',
        outcome: 'locked',
        started_s: run.startedS,
        ended_s: run.endedS,
        duration_s: run.endedS - run.startedS,
        requests: 0,
        retries: 0,
        rate_limited: 0,
        warnings: 0,
        notifications_sent: 0,
        notification_failures: 0,
        last_success_s: null,
      })),
      streams: [],
      openAnomalies: [],
      latestSpend: [],
      outboxPending: [],
    }),
  );
  const lines = [...own].filter(([name]) => RUN_METRIC.test(name)).flatMap(([, block]) => block);
  for (const [name, block] of metricBlocks(previous ?? '')) if (!RUN_METRIC.test(name)) lines.push(...block);
  return `${lines.join('\n')}\n`;
}

/**
 * Writes the metrics file of a run refused by another's lock or lease, atomically, from the file already
 * there, or without one from `published` (the published warehouse's facts, which a refused run may read).
 */
export async function writeRefusedRunMetrics(
  path: string,
  run: { sources: readonly string[]; startedS: number; endedS: number },
  published: () => Promise<string | null> = async () => null,
): Promise<void> {
  const previous =
    (await readFile(path, 'utf8').catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return null;
      throw error;
    })) ?? (await published().catch(() => null));
  await writeFileAtomic(path, refusedRunText(previous, run), { mode: 0o644 });
}
