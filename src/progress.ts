/**
 * What a person sees during a sync: on a terminal, a progress line per stream (windows, pages,
 * rows, rate, and an ETA that counts the rate limit); elsewhere, a log line per finished window.
 * At the end, a summary table of what changed.
 */
import type { Logger } from './log.js';
import type { ProgressListener, StreamName, StreamStats } from './sync/context.js';

interface StreamProgress {
  windows: number;
  windowsDone: number;
  pages: number;
  rows: number;
  startedMs: number;
}

export interface ProgressOptions {
  /** Draw live lines (a terminal with the pretty format); otherwise log each window. */
  live: boolean;
  logger: Logger;
  write: (text: string) => void;
  requestsPerMinute: number;
  now?: () => number;
}

export interface Progress extends ProgressListener {
  /** Stops drawing and leaves the last lines on screen. */
  finish(): void;
}

/** Seconds left for `pagesLeft` requests at the observed pace, never faster than the rate limit. Pure. */
export function etaSeconds(pagesLeft: number, observedMsPerPage: number, requestsPerMinute: number): number {
  const floorMs = 60_000 / requestsPerMinute;
  return Math.ceil((pagesLeft * Math.max(observedMsPerPage, floorMs)) / 1000);
}

function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds)) return '?';
  if (seconds < 90) return `${seconds}s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)}m`;
  return `${(seconds / 3600).toFixed(1)}h`;
}

export function createProgress(options: ProgressOptions): Progress {
  const now = options.now ?? (() => Date.now());
  const streams = new Map<StreamName, StreamProgress>();
  let drawn = 0;
  let timer: NodeJS.Timeout | null = null;

  const line = (name: StreamName, p: StreamProgress): string => {
    const width = 20;
    const filled = p.windows === 0 ? width : Math.round((p.windowsDone / p.windows) * width);
    const elapsed = Math.max(1, now() - p.startedMs);
    const rate = Math.round((p.rows / elapsed) * 1000);
    const pagesPerWindow = p.windowsDone > 0 ? p.pages / p.windowsDone : 1;
    const pagesLeft = Math.max(0, Math.round((p.windows - p.windowsDone) * pagesPerWindow));
    const eta = p.pages > 0 ? etaSeconds(pagesLeft, elapsed / p.pages, options.requestsPerMinute) : Infinity;
    return `${name.padEnd(11)} [${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${p.windowsDone}/${p.windows} windows  ${p.pages} pages  ${p.rows.toLocaleString('en-US')} rows  ${rate.toLocaleString('en-US')} rows/s  ETA ${p.windowsDone >= p.windows ? 'done' : formatDuration(eta)}`;
  };
  const draw = () => {
    const lines = [...streams].map(([name, p]) => line(name, p));
    // Move up over the previous drawing, then rewrite it.
    options.write(`${drawn > 0 ? `\u001b[${drawn}F` : ''}${lines.map((l) => `\u001b[2K${l}`).join('\n')}\n`);
    drawn = lines.length;
  };
  const get = (name: StreamName) => {
    let p = streams.get(name);
    if (!p) {
      p = { windows: 0, windowsDone: 0, pages: 0, rows: 0, startedMs: now() };
      streams.set(name, p);
    }
    return p;
  };
  if (options.live) timer = setInterval(draw, 250);
  timer?.unref();

  return {
    planned(stream, info) {
      const p = get(stream);
      p.windows = info.windows;
      if (!options.live) options.logger.info(`${stream}: ${info.resumed ? 'resuming' : 'syncing'} ${info.from}..${info.to} (${info.windows} window(s))`, { stream, ...info });
    },
    page(stream, info) {
      const p = get(stream);
      p.pages += 1;
      p.rows += info.rows;
    },
    windowDone(stream, info) {
      const p = get(stream);
      p.windowsDone += 1;
      if (!options.live) options.logger.info(`${stream} ${info.window}: +${info.inserted} ~${info.updated} -${info.deleted}`, { stream, ...info });
    },
    finish() {
      if (timer) clearInterval(timer);
      if (options.live && streams.size > 0) draw();
    },
  };
}

/** The end-of-run table of what changed, per stream. */
export function summaryTable(streams: Partial<Record<StreamName, StreamStats>>): string {
  const head = ['stream', 'inserted', 'updated', 'deleted', 'pages', 'requests', 'retries', '429s', 'warnings'];
  const rows = Object.entries(streams).map(([name, s]) => [
    name, s.inserted, s.updated, s.deleted, s.pages, s.requests, s.retries, s.rateLimited, s.warnings.length,
  ].map(String));
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const fmt = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [fmt(head), ...rows.map(fmt)].join('\n');
}
