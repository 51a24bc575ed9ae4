/**
 * Notifications to webhooks (Slack, Mattermost, Teams via a workflow, any JSON receiver). Events are
 * recorded in the working copy's `_costsync_notifications` in the same transaction as the change that
 * causes them; this sends what is pending after the commit and marks it sent only after a 2xx. The
 * webhook URL is a secret: it never appears in an error, a log line or the database (only its
 * fingerprint, as `target`).
 */
import { shortHash } from '../fingerprint.js';
import pRetry from 'p-retry';
import { undici } from '../cjs-libraries.js';
import { isLoopbackHost } from '../api/client.js';
import { ConfigError, CostsyncError, describeError } from '../errors.js';
import type { Warehouse } from '../storage/duckdb.js';
import { formatPercent, formatUsd } from '../money.js';

export const SEVERITY_RANK = { low: 1, medium: 2, high: 3, critical: 4 } as const;
export type NotifySeverity = keyof typeof SEVERITY_RANK;

/** Events per message; more wait for the next message of the same drain. */
export const EVENTS_PER_MESSAGE = 50;
/** Events spelled out in a message's text; the rest are "and N more" (all are in `events`). */
export const TEXT_LINES = 10;

export interface Webhook {
  /** A fingerprint of the URL: what the database and logs may hold. */
  id: string;
  url: string;
}

/** Checks a webhook URL (https, or http on loopback) without ever putting it in the message. */
export function parseWebhook(url: string, from: string): Webhook {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ConfigError(
      `${from}: a webhook URL is not a URL.`,
      'Pass the full https:// URL your receiver gave you (Slack, Mattermost, a Teams workflow).',
    );
  }
  if (parsed.protocol !== 'https:' && !(parsed.protocol === 'http:' && isLoopbackHost(parsed.hostname))) {
    throw new ConfigError(
      `${from}: a webhook URL must use https (plain http only on a loopback address); one uses ${parsed.protocol.replace(':', '')}.`,
      'Use the https:// URL of the receiver.',
    );
  }
  return { id: shortHash(url, 16), url };
}

export interface NotifyEvent {
  kind: 'anomaly' | 'severity_rose' | 'status_changed' | 'run_failed' | 'run_stopped' | 'reconcile' | 'restated' | 'test';
  source: string;
  [field: string]: unknown;
}

const usd = (v: unknown) => (typeof v === 'number' ? formatUsd(v) : '?');

/** One line of a message's text for an event. Pure. */
export function eventLine(e: NotifyEvent & { event_id?: string }): string {
  const where = `[${e.source}]`;
  switch (e.kind) {
    case 'anomaly':
    case 'severity_rose':
    case 'status_changed': {
      const dev = typeof e.deviation_percent === 'number' ? ` (${formatPercent(e.deviation_percent)})` : '';
      const what =
        e.kind === 'anomaly'
          ? 'new'
          : e.kind === 'severity_rose'
            ? `severity rose from ${String(e.previous_severity)}`
            : `status ${String(e.previous_status)} -> ${String(e.status)}`;
      return `${where} ${String(e.severity).toUpperCase()} anomaly (${what}): ${String(e.provider)} / ${String(e.service)}: ${usd(e.actual_cost)} vs ${usd(e.expected_cost)} expected${dev}, detected ${String(e.detected_at)}`;
    }
    case 'run_failed':
    case 'run_stopped':
      return `${where} costsync run ${String(e.run_id)} ${e.kind === 'run_failed' ? 'failed' : 'stopped early'} (exit ${String(e.exit_code)}): ${String(e.reason)}${e.fix ? ` Fix: ${String(e.fix)}` : ''}`;
    case 'reconcile':
      return `${where} data may be off: ${String(e.reason)}`;
    case 'restated':
      return `${where} ${String(e.changed)} older date(s) no longer equal the API (${String(e.dates)}); ${e.synced === e.changed ? `${String(e.synced)} synced again` : `at least ${String(e.synced)} synced again, the rest next run`}`;
    default:
      return `${where} ${String(e.text ?? 'test message from costsync: the webhook works')}`;
  }
}

/**
 * The message body: `text` (what Slack and Mattermost show) and, in the json format, `events`, each
 * with its stable `event_id` so a receiver can drop repeats. Pure.
 */
export function messageBody(events: (NotifyEvent & { event_id: string })[], format: 'json' | 'slack'): Record<string, unknown> {
  const lines = events.slice(0, TEXT_LINES).map(eventLine);
  if (events.length > TEXT_LINES) lines.push(`and ${events.length - TEXT_LINES} more`);
  const text = `costsync: ${events.length} event${events.length === 1 ? '' : 's'}\n${lines.map((l) => `• ${l}`).join('\n')}`;
  return format === 'slack' ? { text } : { text, events };
}

export interface SendOptions {
  format: 'json' | 'slack';
  /** Per attempt. */
  timeoutMs: number;
  retries: number;
  minBackoffMs: number;
  /** What becomes of the message when it fails, for the hint (default: the outbox sends it again next run). */
  afterFailure?: string;
}

/** What a failed send's hint says becomes of its events, when they wait in the outbox. */
const SENT_AGAIN = 'the events are sent again on the next run';

export const DEFAULT_SEND: SendOptions = { format: 'json', timeoutMs: 10_000, retries: 3, minBackoffMs: 1_000 };

/** POSTs a body to a webhook, retrying with backoff; an error never carries the URL. */
export async function postWebhook(target: Webhook, body: unknown, options: SendOptions): Promise<void> {
  await pRetry(
    async () => {
      let status: number;
      try {
        const res = await undici().request(target.url, {
          method: 'POST',
          body: JSON.stringify(body),
          headers: { 'content-type': 'application/json' },
          headersTimeout: options.timeoutMs,
          bodyTimeout: options.timeoutMs,
          signal: AbortSignal.timeout(options.timeoutMs),
        });
        status = res.statusCode;
        await res.body.dump();
      } catch (cause) {
        throw new CostsyncError(
          'CS_ERR_NOTIFY',
          `The webhook ${target.id} did not answer: ${(cause as Error).name}${(cause as { code?: string }).code ? ` (${(cause as { code: string }).code})` : ''}.`,
          {
            hint: `Check that the receiver is up; ${options.afterFailure ?? SENT_AGAIN}.`,
          },
        );
      }
      if (status < 200 || status >= 300) {
        throw new CostsyncError('CS_ERR_NOTIFY', `The webhook ${target.id} answered HTTP ${status}.`, {
          hint: `Check the webhook URL and the receiver; ${options.afterFailure ?? SENT_AGAIN}.`,
        });
      }
    },
    { retries: options.retries, minTimeout: options.minBackoffMs, factor: 2, randomize: true },
  );
}

/**
 * Sends one event straight to each webhook, outside the outbox (a test message; a run that could not
 * open the warehouse). One retry. Returns each webhook's fingerprint and, when it failed, why (no URL).
 */
export async function sendNow(
  urls: readonly string[],
  event: NotifyEvent & { event_id: string },
  format: 'json' | 'slack',
  afterFailure = 'this message is not kept: it is not sent again',
): Promise<{ id: string; error?: string }[]> {
  const results: { id: string; error?: string }[] = [];
  for (const url of new Set(urls)) {
    const target = parseWebhook(url, '--notify');
    try {
      await postWebhook(target, messageBody([event], format), { ...DEFAULT_SEND, retries: 1, afterFailure });
      results.push({ id: target.id });
    } catch (error) {
      results.push({ id: target.id, error: describeError(error, [url]) });
    }
  }
  return results;
}

/**
 * Sends every pending event to each target, a message at a time, marking each message's events sent
 * after the 2xx. A target that keeps failing keeps its events for the next run. Returns, per source,
 * events sent and sends failed.
 */
export async function drainNotifications(
  warehouse: Warehouse,
  targets: readonly Webhook[],
  options: SendOptions & { now: () => number; warn: (message: string) => void },
): Promise<Map<string, { sent: number; failed: number }>> {
  const counts = new Map<string, { sent: number; failed: number }>();
  const count = (source: string) => counts.get(source) ?? counts.set(source, { sent: 0, failed: 0 }).get(source)!;
  for (const target of targets) {
    for (;;) {
      const rows = await warehouse.query<{ event_id: string; source: string; kind: string; event: string }>('notify/pending', [
        target.id,
        EVENTS_PER_MESSAGE,
      ]);
      if (rows.length === 0) break;
      const events = rows.map((r) => ({ ...(JSON.parse(r.event) as NotifyEvent), event_id: r.event_id }));
      const ids = rows.map((r) => r.event_id).join(',');
      try {
        await postWebhook(target, messageBody(events, options.format), options);
      } catch (error) {
        const message = describeError(error, [target.url]);
        options.warn(`notification not sent (${rows.length} event(s) wait for the next run): ${message}`);
        await warehouse.transaction(() => warehouse.run('notify/mark_failed', [target.id, ids, message]), { publish: false });
        for (const r of rows) count(r.source).failed += 1;
        break;
      }
      await warehouse.transaction(() => warehouse.run('notify/mark_sent', [target.id, ids, new Date(options.now()).toISOString()]), {
        publish: false,
      });
      for (const r of rows) count(r.source).sent += 1;
    }
  }
  return counts;
}
