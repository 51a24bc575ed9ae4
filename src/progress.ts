/**
 * What a person sees during a sync. On a terminal, a line per stream (per source and stream with
 * several sources, one summary line per stream past 8 lines): pages done of an estimated total (the
 * unit the rate limit spends), rows, rate, and an ETA that counts the rate limit. Elsewhere, a log line
 * per finished window, and with JSON logs a `progress` event every so often for schedulers.
 */
import type { Logger } from './log.js';
import type { ProgressListener, StreamName, StreamStats } from './sync/context.js';
import { estimateTotalPages, etaSeconds, smooth, type DayBasis } from './sync/estimate.js';

export { etaSeconds } from './sync/estimate.js';

interface StreamProgress {
  windows: number;
  windowsDone: number;
  pages: number;
  rows: number;
  usd: number;
  startedMs: number;
  /** Set when the stream finished: its rate stays its own. */
  doneMs: number | null;
  /** Known in advance (rollups), or estimated from `days`. */
  fixedPages: number | null;
  days: DayBasis[] | null;
  daysDone: number;
  pagesOfDaysDone: number;
  msPerPage: number | null;
  lastPageMs: number | null;
}

export interface ProgressOptions {
  /** Draw live lines (a terminal with the pretty format); otherwise log each window. */
  live: boolean;
  logger: Logger;
  write: (text: string) => void;
  requestsPerMinute: number;
  now?: () => number;
  /** With JSON logs, a `progress` event this often (ms); 0: none. */
  eventIntervalMs?: number;
  /** The run's sources, those waiting their turn (`--sources-at-once`) included. */
  sources?: number;
}

export interface Progress extends ProgressListener {
  /** Stops drawing and leaves the last lines on screen. */
  finish(): void;
  /** The figures of every stream now (what the lines and events show). */
  snapshot(): ProgressFigures[];
  /** Emits one progress event now (the timer does this every `eventIntervalMs`). */
  tick(): void;
}

export interface ProgressFigures {
  stream: string;
  pages: number;
  /** Estimated total pages; null while there is no basis ("estimating…"). */
  estimatedPages: number | null;
  rows: number;
  rowsPerSecond: number;
  /** Seconds left; null while estimating; 0 when done. */
  etaSeconds: number | null;
  done: boolean;
}

export function formatDuration(seconds: number): string {
  if (seconds < 90) return `${seconds}s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)}m`;
  return `${(seconds / 3600).toFixed(1)}h`;
}

/** The figures of one stream at `nowMs`. Pure. */
export function figures(stream: string, p: StreamProgress, nowMs: number, requestsPerMinute: number): ProgressFigures {
  const done = p.doneMs !== null;
  const elapsed = Math.max(1, (p.doneMs ?? nowMs) - p.startedMs);
  const total = done
    ? p.pages
    : (p.fixedPages ??
      (p.days === null
        ? null
        : estimateTotalPages(
            p.days,
            {
              rows: p.rows,
              usd: p.usd,
              pages: p.pages,
              daysDone: p.daysDone,
              pagesOfDaysDone: p.pagesOfDaysDone,
            },
            Math.max(0, p.windows - p.windowsDone),
          )));
  const left = total === null ? null : Math.max(0, total - p.pages);
  return {
    stream,
    pages: p.pages,
    estimatedPages: total,
    rows: p.rows,
    rowsPerSecond: Math.round((p.rows / elapsed) * 1000),
    done,
    etaSeconds: done ? 0 : left === null ? null : etaSeconds(left, p.msPerPage ?? 0, requestsPerMinute),
  };
}

/** One line of a stream's figures, without control characters. Pure. */
export function progressLine(f: ProgressFigures, width = 20): string {
  const total = f.estimatedPages;
  const filled = total === null || total === 0 ? (f.done ? width : 0) : Math.min(width, Math.round((f.pages / total) * width));
  const of = total === null ? '' : f.done ? `/${total}` : `/~${total.toLocaleString('en-US')}`;
  const eta = f.done ? 'done' : f.etaSeconds === null ? 'estimating…' : `ETA ${formatDuration(f.etaSeconds)}`;
  return `${f.stream.padEnd(11)} [${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${f.pages.toLocaleString('en-US')}${of} pages  ${f.rows.toLocaleString('en-US')} rows  ${f.rowsPerSecond.toLocaleString('en-US')} rows/s  ${eta}`;
}

/** Past this many lines (many sources), one summary line per stream. */
const MAX_LINES = 8;

/**
 * Sums per stream over sources (`<source>/<stream>` names): the summary lines. `sources` is the run's
 * number of sources: those not started yet (waiting their turn) count as not done, their pages are
 * estimated as the average of the others', and the ETA waits until every source has started. Pure.
 */
export function summarize(all: readonly ProgressFigures[], sources = 0): ProgressFigures[] {
  const byStream = new Map<string, ProgressFigures[]>();
  for (const f of all) {
    const stream = f.stream.includes('/') ? f.stream.split('/')[1]! : f.stream;
    byStream.set(stream, [...(byStream.get(stream) ?? []), f]);
  }
  return [...byStream].map(([stream, list]) => {
    const done = list.filter((f) => f.done).length;
    const total = Math.max(list.length, sources);
    const waiting = total - list.length;
    const estimating = list.some((f) => f.estimatedPages === null);
    const estimated = list.reduce((s, f) => s + (f.estimatedPages ?? 0), 0);
    return {
      stream: `${stream} (${done}/${total} sources done${waiting > 0 ? `, ${waiting} waiting` : ''})`,
      pages: list.reduce((s, f) => s + f.pages, 0),
      estimatedPages: estimating ? null : Math.round((estimated * total) / list.length),
      rows: list.reduce((s, f) => s + f.rows, 0),
      rowsPerSecond: list.reduce((s, f) => s + (f.done ? 0 : f.rowsPerSecond), 0),
      // Sources run side by side, each at its own budget: the slowest decides.
      etaSeconds: estimating || waiting > 0 ? null : Math.max(0, ...list.map((f) => f.etaSeconds ?? 0)),
      done: done === total,
    };
  });
}

export function createProgress(options: ProgressOptions): Progress {
  const now = options.now ?? (() => Date.now());
  const streams = new Map<StreamName, StreamProgress>();
  let drawn = 0;
  const timers: NodeJS.Timeout[] = [];

  const snapshot = () => [...streams].map(([name, p]) => figures(name, p, now(), options.requestsPerMinute));
  const sources = options.sources ?? 0;
  /** One line per source and stream; past MAX_LINES, or while sources wait their turn, one per stream. */
  const shown = (all: ProgressFigures[]) => {
    const started = new Set(all.map((f) => f.stream.split('/')[0])).size;
    return all.length > MAX_LINES || (sources > 1 && started < sources) ? summarize(all, sources) : all;
  };
  const lines = () => shown(snapshot()).map((f) => progressLine(f));
  const draw = () => {
    const text = lines();
    // Move up over the previous drawing, then rewrite it.
    options.write(`${drawn > 0 ? `\u001b[${drawn}F` : ''}${text.map((l) => `\u001b[2K${l}`).join('\n')}\n`);
    drawn = text.length;
  };
  const tick = () => {
    const all = snapshot();
    if (all.length > 0) options.logger.info('progress', { streams: shown(all) });
  };
  const get = (name: StreamName) => {
    let p = streams.get(name);
    if (!p) {
      p = {
        windows: 0,
        windowsDone: 0,
        pages: 0,
        rows: 0,
        usd: 0,
        startedMs: now(),
        doneMs: null,
        fixedPages: null,
        days: null,
        daysDone: 0,
        pagesOfDaysDone: 0,
        msPerPage: null,
        lastPageMs: null,
      };
      streams.set(name, p);
    }
    return p;
  };
  if (options.live) timers.push(setInterval(draw, 250));
  else if ((options.eventIntervalMs ?? 0) > 0) timers.push(setInterval(tick, options.eventIntervalMs));
  for (const t of timers) t.unref();

  return {
    planned(stream, info) {
      const p = get(stream);
      p.windows = info.windows;
      if (info.pages !== undefined) p.fixedPages = info.pages;
      if (info.days !== undefined) p.days = info.days;
      if (info.windows === 0) p.doneMs = now();
      if (!options.live)
        options.logger.info(
          `${stream}: ${info.resumed ? 'resuming' : 'syncing'} ${info.from}..${info.to} (${info.windows - (info.older ?? 0)} window(s)${info.older ? `, then ${info.older} of older dates that no longer equal the API` : ''})`,
          { stream, windows: info.windows, from: info.from, to: info.to, resumed: info.resumed, ...(info.older && { older: info.older }) },
        );
    },
    page(stream, info) {
      const p = get(stream);
      const t = now();
      const pages = info.pages ?? 1;
      // The pace between pages, waits after a 429 included, smoothed so the ETA does not jump.
      if (p.lastPageMs !== null) p.msPerPage = smooth(p.msPerPage, (t - p.lastPageMs) / pages);
      p.lastPageMs = t;
      p.pages += pages;
      p.rows += info.rows;
      p.usd += info.usd ?? 0;
    },
    windowDone(stream, info) {
      const p = get(stream);
      p.windowsDone += 1;
      p.daysDone += info.days ?? 0;
      p.pagesOfDaysDone += info.pages ?? 0;
      if (p.windowsDone >= p.windows) p.doneMs = now();
      if (!options.live)
        options.logger.info(`${stream} ${info.window}: +${info.inserted} ~${info.updated} -${info.deleted}`, {
          stream,
          window: info.window,
          inserted: info.inserted,
          updated: info.updated,
          deleted: info.deleted,
        });
    },
    snapshot,
    tick,
    finish() {
      for (const t of timers) clearInterval(t);
      if (options.live && streams.size > 0) draw();
    },
  };
}

/** The end-of-run table of what changed, per stream. */
export function summaryTable(streams: Partial<Record<StreamName, StreamStats>>): string {
  // `restated`: older dates the recheck found changed at the API, synced again / found (a stop leaves the rest for the next run).
  const head = ['stream', 'inserted', 'updated', 'deleted', 'restated', 'pages', 'requests', 'retries', '429s', 'warnings'];
  const rows = Object.entries(streams).map(([name, s]) =>
    [
      name,
      s.inserted,
      s.updated,
      s.deleted,
      s.olderChanged === 0 && s.olderSynced === 0 ? '-' : `${s.olderSynced}/${s.olderChanged}`,
      s.pages,
      s.requests,
      s.retries,
      s.rateLimited,
      s.warnings.length,
    ].map(String),
  );
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const fmt = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [fmt(head), ...rows.map(fmt)].join('\n');
}

/**
 * The end-of-run tables: one for a single source; one per source for a few (up to MAX_LINES); for
 * more, a count of outcomes, the sources that did not succeed, and one table of all sources together
 * (hundreds of tables would bury what matters). Pure.
 */
export function runSummaryText(
  sources: readonly { source: string; outcome: string; streams: Partial<Record<StreamName, StreamStats>> }[],
  streams: Partial<Record<StreamName, StreamStats>>,
): string {
  if (sources.length <= 1) return summaryTable(streams);
  if (sources.length <= MAX_LINES) return sources.map((s) => `${s.source}: ${s.outcome}\n${summaryTable(s.streams)}`).join('\n\n');
  const outcomes = new Map<string, string[]>();
  for (const s of sources) outcomes.set(s.outcome, [...(outcomes.get(s.outcome) ?? []), s.source]);
  const counts = [...outcomes].map(([outcome, names]) => `${names.length} ${outcome}`).join(', ');
  const others = [...outcomes]
    .filter(([outcome]) => outcome !== 'success')
    .map(([outcome, names]) => {
      const shown = names.slice(0, 20).join(', ');
      return `${outcome}: ${shown}${names.length > 20 ? `, and ${names.length - 20} more` : ''}`;
    });
  return [`${sources.length} sources: ${counts}`, ...others, '', `all ${sources.length} sources`, summaryTable(streams)].join('\n');
}
