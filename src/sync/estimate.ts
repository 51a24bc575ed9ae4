/**
 * How many pages a stream's plan will take, before it is fetched. The API gives no count of line
 * items, but it gives their daily totals in dollars (the provider rollups), and the pages fetched so
 * far say what a line item averages; rows the warehouse already holds for a date (a re-sync, a
 * lookback) and the pages per day of windows already finished are better still. Small pure functions,
 * as dlt's incremental helpers are.
 */

/** What is known of one date of a plan before it is fetched. */
export interface DayBasis {
  date: string;
  /** The date's total in dollars from the provider rollups, when fetched. */
  usd: number | null;
  /** Line items the warehouse holds for the date (this source), when any. */
  storedRows: number | null;
}

/** What the pages fetched so far show. */
export interface Observed {
  rows: number;
  usd: number;
  pages: number;
  /** Days of windows fully fetched, and their pages (for pages per day). */
  daysDone: number;
  pagesOfDaysDone: number;
}

/** The requests a run is expected to make for a stream, told before it runs (`sync --dry-run`). */
export interface RequestEstimate {
  /** null when nothing tells (then `minRequests` is all that is known). */
  requests: number | null;
  minRequests: number;
}

export const ROWS_PER_PAGE = 1000;

/** Plans of at least this many windows (backfills) always spend one request on the estimate. */
export const BACKFILL_WINDOWS = 3;

/**
 * Whether the estimate should spend one provider-rollups request on the plan's dates: only when
 * something shows the estimate (`watched`: a progress listener; a library caller without one pays
 * nothing), then for a backfill of several windows (rollups beat the rows stored for a few of its
 * dates), and whenever nothing better is known however few the windows: a new plan with no stored
 * rows for any of its dates (a first run, a catch-up of new dates). Not for a resumed plan (its spend
 * is already under way), nor a nightly lookback, whose stored rows are the basis. Pure.
 */
export function wantsRollupTotals(windows: number, resumed: boolean, storedDates: number, watched = true): boolean {
  if (windows === 0 || !watched) return false;
  return windows >= BACKFILL_WINDOWS || (!resumed && storedDates === 0);
}

/**
 * The pages of the windows to fetch (each given by its dates): rows stored for a date, else its rollup
 * dollars at the dollars per row; null when some date has neither. A window takes its rows' pages, the
 * last one part full, and one request when it is empty. Pure.
 */
export function expectedPages(
  windows: readonly (readonly DayBasis[])[],
  usdPerRow: number | null,
  rowsPerPage: number = ROWS_PER_PAGE,
  saved?: readonly { page: number; fetched: boolean }[],
): number | null {
  let pages = 0;
  for (const [i, days] of windows.entries()) {
    const staged = saved?.[i];
    // A window an earlier run fetched whole asks nothing more; one it began asks for the pages after its last staged one.
    if (staged?.fetched === true) continue;
    let rows = 0;
    for (const day of days) {
      const n = rowsOfDay(day, usdPerRow);
      if (n === null) return null;
      rows += n;
    }
    pages += Math.max(1, Math.ceil(rows / rowsPerPage) - (staged?.page ?? 0));
  }
  return pages;
}

/**
 * The dollars a line item averages over a page's amounts, to price dates by their rollup totals;
 * null when the page holds no rows or no net cost (nothing to divide by). Pure.
 */
export function dollarsPerRow(amounts: readonly number[]): number | null {
  const usd = amounts.reduce((sum, a) => sum + (Number.isFinite(a) ? a : 0), 0);
  return amounts.length > 0 && usd > 0 ? usd / amounts.length : null;
}

/**
 * The rows expected on one date: stored rows, else the rollup total over the average amount of the
 * rows fetched so far; null when neither is known. Pure.
 */
export function rowsOfDay(day: DayBasis, usdPerRow: number | null): number | null {
  if (day.storedRows !== null && day.storedRows > 0) return day.storedRows;
  if (day.usd !== null && usdPerRow !== null && usdPerRow > 0) return Math.max(0, day.usd / usdPerRow);
  return null;
}

/**
 * The plan's total pages (fetched and left), or null with no basis at all ("estimating…"). Days
 * without their own basis take the pages per day of finished windows, else the average of the days
 * that have one. Never less than the pages already fetched. Pure.
 */
export function estimateTotalPages(days: readonly DayBasis[], observed: Observed, windows: number): number | null {
  const usdPerRow = observed.rows > 0 && observed.usd > 0 ? observed.usd / observed.rows : null;
  const perDay = days.map((d) => rowsOfDay(d, usdPerRow));
  const known = perDay.filter((r): r is number => r !== null);
  const pagesPerDay = observed.daysDone > 0 ? observed.pagesOfDaysDone / observed.daysDone : null;
  if (known.length === 0 && pagesPerDay === null) return null;
  const rowsPerKnownDay = known.length > 0 ? known.reduce((a, b) => a + b, 0) / known.length : null;
  let pages = 0;
  for (const rows of perDay) {
    if (rows !== null) pages += rows / ROWS_PER_PAGE;
    else if (pagesPerDay !== null) pages += pagesPerDay;
    else pages += rowsPerKnownDay! / ROWS_PER_PAGE;
  }
  // Each window ends with a part page.
  return Math.max(observed.pages, Math.ceil(pages + windows / 2));
}

/**
 * Seconds left for `pagesLeft` requests: at the smoothed observed pace, never faster than the rate
 * limit allows (the observed pace already includes waits after a 429). Pure.
 */
export function etaSeconds(pagesLeft: number, msPerPage: number, requestsPerMinute: number): number {
  const floorMs = 60_000 / requestsPerMinute;
  return Math.ceil((pagesLeft * Math.max(msPerPage, floorMs)) / 1000);
}

/** An exponentially weighted average: stable under jitter, following real changes of pace. Pure. */
export function smooth(previous: number | null, sample: number, weight = 0.15): number {
  return previous === null ? sample : previous + weight * (sample - previous);
}
