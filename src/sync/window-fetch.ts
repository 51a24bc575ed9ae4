/**
 * A window's fetch, as steps over one small value (`Paging`): fetch a page, take what the engine needs
 * of its records, spool it, save the cursor after it, and once the window's last page is spooled,
 * check the window (windowed.ts then stores it). Each page is written durably to the spool before the
 * cursor after it is saved, so a crash redoes some pages, never loses or doubles a row.
 */
import { ApiError, CostsyncError } from '../errors.js';
import { DROPPED_MESSAGE } from '../api/resilience.js';
import { windowAdvanced, windowAsked, windowRestarted, type WindowProgress } from '../plan/windows.js';
import type { PlannedWindow } from '../state/store.js';
import { pageGlob, spoolPage, type Spool } from '../storage/spool.js';
import { tableNames } from '../storage/tables.js';
import { isDroppedRequest, warn, type SyncContext } from './context.js';
import { IdHashes, hash52 } from './id-set.js';
import { MAX_FETCH_ATTEMPTS, PagedTotals, REFETCH_PAUSE_MS, describeMismatches, totalKey, type Total } from './reconcile.js';
import type { FetchedPage, WindowedStreamSpec } from './streams.js';

/** Ids tracked per window to prove them unique; past this the window is simply deduplicated, so memory stays flat. */
export const MAX_TRACKED_IDS = 250_000;

/**
 * A window's cursor is saved once this many pages wait for it or this long passed since the last save,
 * whichever comes first, and at once after the last page, a stop or a failure. Each page is durable in
 * the spool before the cursor after it is saved either way, so a SIGKILL makes the next run fetch again
 * at most these pages (and the one in flight), at any rate limit; a save a page costs CPU that a fast
 * sync notices (a state file written for every page).
 */
export const CURSOR_SAVE_PAGES = 2;
export const CURSOR_SAVE_MS = 1000;

/** How many times a window restarts after the server refuses its cursor (expired). */
export const MAX_WINDOW_RESTARTS = 3;

/** A window's name in messages, its spool directory, and the spool's file operations. */
export interface WindowPlace {
  label: string;
  dir: string;
  spool: Spool;
}

/** A window whose pages are all spooled, its state saved as fetched: what its store needs to know. */
export interface FetchedWindow {
  /** The window as its state now says (fetched, and whether its ids are unique). */
  window: PlannedWindow;
  /** Rows fetched in this run; null when earlier runs fetched some (a resumed window). */
  rows: number | null;
  /** Why the window is stored although its two views disagree, if they do. */
  disagreement: string | null;
}

/** What the engine keeps of a fetched page once its records are looked at. */
export interface TakenPage {
  /** The page's spool file (storage/spool.ts). */
  data: Uint8Array;
  nextCursor: string | null;
  /** Records dated inside the window, and their amount (for progress). */
  rows: number;
  usd: number | undefined;
  /** Records dated outside the window (not stored; warned about). */
  outside: number;
  /** The server returned a cursor it had returned before. */
  loop: boolean;
}

export interface TakeOptions {
  spec: WindowedStreamSpec;
  /** The window's dates, and the cursor the page was asked for with. */
  window: { start: string; end: string; cursor: string | null };
  /** Cursors the server returned so far: the page's next one is added. */
  seenCursors: Set<string>;
  /** Hashes of the ids seen so far, the page's added (null: ids not tracked). */
  idHashes?: IdHashes | null;
  /** Amounts per date and the check's key (see `check.paged`), the page's added (null: not summed). */
  totals?: PagedTotals | null;
}

/**
 * Looks at a page's records once, synchronously: dates outside the window, a repeated cursor, the ids'
 * hashes, the rows and amount for progress, the check's totals, and what to spool (`spoolPage`).
 */
export function takePage(page: FetchedPage, { spec, window, seenCursors, idHashes = null, totals = null }: TakeOptions): TakenPage {
  const { dateField } = spec.table;
  const amountField = 'amountField' in spec.size ? spec.size.amountField : null;
  const paged = totals === null ? undefined : spec.check.paged;
  let outside = 0;
  let usd = 0;
  // The totals' keys of the date at hand, by the record's key: a page's records mostly share a date and a few keys.
  const keys = new Map<unknown, string>();
  let keysDate = '';
  for (const r of page.records) {
    const date = r[dateField];
    const inside = typeof date === 'string' && date >= window.start && date <= window.end;
    if (!inside) outside += 1;
    if (amountField !== null && typeof r[amountField] === 'number') usd += r[amountField];
    if (paged !== undefined && inside) {
      if (date !== keysDate) {
        keys.clear();
        keysDate = date;
      }
      const key = r[paged.keyField];
      let k = keys.get(key);
      if (k === undefined) {
        k = totalKey(date, key);
        keys.set(key, k);
      }
      if (paged.distinctBy === undefined) totals!.add(k, r[paged.amountField]);
      else totals!.put(JSON.stringify(paged.distinctBy.map((f) => r[f] ?? null)), k, r[paged.amountField]);
    }
  }
  let loop = false;
  if (page.nextCursor !== null && spec.serverCursors) {
    loop = page.nextCursor === window.cursor || seenCursors.has(page.nextCursor);
    seenCursors.add(page.nextCursor);
  }
  if (idHashes !== null && spec.idField !== null) {
    for (const r of page.records) idHashes.add(hash52(String(r[spec.idField])));
  }
  // As bytes: outside the JavaScript heap while the write waits on the disk.
  const data = spoolPage(page.records, spec.table.columns);
  return {
    data,
    nextCursor: page.nextCursor,
    rows: page.records.length - outside,
    usd: amountField === null ? undefined : usd,
    outside,
    loop,
  };
}

const EMPTY = new Uint8Array(0);

/** What a window's fetch knows between its pages. Invariant: for a stream with ids, not `unique` means no `idHashes` and no `totals`. */
export interface Paging {
  /** The cursor to send next, the pages spooled, and whether the last one came. */
  cursor: string | null;
  page: number;
  fetched: boolean;
  /** Rows fetched in this run; null when earlier runs fetched some (a resumed window). */
  rows: number | null;
  /** Cursors the server returned, to spot a loop. */
  seenCursors: Set<string>;
  /**
   * Hashes of the ids taken: no repeat shows the window's ids are unique, so the replace can skip
   * deduplication. Null once that is settled, or when it cannot be (the ids of pages before a resume are unknown).
   */
  idHashes: IdHashes | null;
  /** Every id came once so far. */
  unique: boolean;
  /**
   * The check's totals gathered while the pages come, exact while not null: from the window's first page
   * in this run, and for a stream with ids, while every id came once.
   */
  totals: PagedTotals | null;
}

/** Paging from a window's first page; `trackIds`: its ids are tracked to prove them unique. Pure. */
export function freshPaging(spec: WindowedStreamSpec, trackIds: boolean): Paging {
  return { ...tracking(spec, trackIds), cursor: null, page: 0, fetched: false, rows: 0, seenCursors: new Set() };
}

/** Paging from where a window's saved state says it got; past its first page, the earlier ids are unknown. Pure. */
export function resumedPaging(spec: WindowedStreamSpec, window: PlannedWindow): Paging {
  const first = window.page === 0;
  return {
    ...tracking(spec, first),
    cursor: window.cursor,
    page: window.page,
    fetched: window.fetched,
    rows: first && !window.fetched ? 0 : null,
    seenCursors: new Set(),
  };
}

function tracking(spec: WindowedStreamSpec, trackIds: boolean): Pick<Paging, 'idHashes' | 'unique' | 'totals'> {
  const track = trackIds && spec.idField !== null;
  // Without ids, records are summed as the staging deduplicates them (`distinctBy`), which needs no ids.
  const sums = spec.check.paged !== undefined && (track || (trackIds && spec.check.paged.distinctBy !== undefined));
  return { idHashes: track ? new IdHashes() : null, unique: track, totals: sums ? new PagedTotals() : null };
}

/** The paging after a taken page, and the window's progress to save once that page is spooled. Pure but for reading the id set. */
export function afterPage(paging: Paging, taken: Pick<TakenPage, 'nextCursor' | 'rows'>): { paging: Paging; progress: WindowProgress } {
  const page = paging.page + 1;
  const cursor = taken.nextCursor;
  const fetched = cursor === null;
  let { unique, totals, idHashes } = paging;
  // Every id came once, as far as the window's last page (or the tracking limit) tells.
  if (unique && ((idHashes?.size ?? 0) > MAX_TRACKED_IDS || (fetched && idHashes!.hasRepeat()))) {
    unique = false;
    totals = null;
  }
  if (!unique || fetched) idHashes = null;
  const rows = paging.rows === null ? null : paging.rows + taken.rows;
  return {
    paging: { ...paging, cursor, page, fetched, rows, unique, totals, idHashes },
    progress: { status: 'active', cursor, page, fetched, ...(fetched ? { unique } : {}) },
  };
}

/** Whether the cursor is saved after a page is written (see `CURSOR_SAVE_PAGES`). Pure. */
export function cursorSaveDue(unsaved: number, sinceSaveMs: number, fetched: boolean): boolean {
  return fetched || unsaved >= CURSOR_SAVE_PAGES || sinceSaveMs >= CURSOR_SAVE_MS;
}

/** Fetches a window's pages (those not spooled yet) and checks them; 'stopped' when a stop came first. */
export async function fetchWindow(
  spec: WindowedStreamSpec,
  ctx: SyncContext,
  window: PlannedWindow,
  place: WindowPlace,
): Promise<FetchedWindow | 'stopped'> {
  if (window.status === 'todo') await place.spool.clear(place.dir);
  else {
    // Pages written after the last saved cursor are fetched again: drop them first.
    if (!window.fetched) place.spool.dropPagesAfter(place.dir, window.page);
    // Pages an earlier version spooled, in the form this one reads.
    await place.spool.upgradePages(place.dir, spec.table.columns);
  }
  // Saved with the first page's progress; a window resumed mid-way keeps the time its first page was asked.
  const asked = windowAsked(window, new Date(ctx.clock.now()).toISOString());
  let at: AtPage = { window: asked, paging: resumedPaging(spec, asked) };
  const restarts = { left: MAX_WINDOW_RESTARTS };
  for (let attempt = 1; ; attempt++) {
    const paged = await fetchPages(spec, ctx, place, at, restarts);
    if (paged === 'stopped') return 'stopped';
    at = paged;
    const checked = await checkWindow(spec, ctx, at.window, place, at.paging, attempt);
    if (checked === 'stopped') return 'stopped';
    if (checked !== 'refetch') return { window: at.window, rows: at.paging.rows, disagreement: checked.disagreement };
    ctx.stats[spec.name].refetches += 1;
    await ctx.clock.sleep(REFETCH_PAUSE_MS * attempt, ctx.signal);
    if (ctx.shouldStop()) return 'stopped';
    at = await startOver(spec, ctx, at.window, place, true);
  }
}

/** A window as its state says, and the paging that goes on from it. */
interface AtPage {
  window: PlannedWindow;
  paging: Paging;
}

/** Drops what was fetched of the window, so it is fetched again from its first page. */
async function startOver(
  spec: WindowedStreamSpec,
  ctx: SyncContext,
  window: PlannedWindow,
  place: WindowPlace,
  trackIds: boolean,
): Promise<AtPage> {
  await place.spool.clear(place.dir);
  const restarted = windowRestarted(window, new Date(ctx.clock.now()).toISOString());
  await ctx.state.checkpoint({ stream: spec.name, window: restarted });
  return { window: restarted, paging: freshPaging(spec, trackIds) };
}

/**
 * Fetches the window's remaining pages: fetch and take a page, hand it to the spool writer, and fetch
 * the next while it is written (its cursor is known once the page is taken; the state takes that
 * cursor only after the page is on disk). The loop awaits the writer directly, so the next request
 * goes out before the page's write and save are done.
 */
async function fetchPages(
  spec: WindowedStreamSpec,
  ctx: SyncContext,
  place: WindowPlace,
  start: AtPage,
  restarts: { left: number },
): Promise<AtPage | 'stopped'> {
  let { paging } = start;
  const { window } = start;
  const writer = new SpoolWriter(spec, ctx, window, place);
  const spoolSlots = spec.takesPageSlot ? ctx.pace.spoolSlots : undefined;
  try {
    while (!paging.fetched) {
      await writer.lastButOne;
      writer.throwFailure();
      if (ctx.shouldStop()) return 'stopped';
      const got = await fetchAndTake(spec, ctx, window, paging);
      if ('error' in got) {
        const next = await afterFetchError(spec, ctx, place, { paging, writer, restarts, error: got.error });
        if (next === 'stopped') return 'stopped';
        paging = next.paging;
        writer.restarted(next.window);
        continue;
      }
      checkTaken(spec, ctx, place.label, got.taken);
      const { paging: next, progress } = afterPage(paging, got.taken);
      // Bytes waiting for the disk are bounded too: when the disk lags, windows wait here.
      const written = spoolSlots ? await spoolSlots.take() : () => undefined;
      writer.add(progress, got.taken, written);
      paging = next;
    }
  } finally {
    // However the loop ends, the pages taken are written and their cursor saved before anything else happens.
    await writer.end();
  }
  writer.throwFailure();
  return { window: writer.window, paging };
}

/** A page's request failed: 'stopped' when a stop cut it; the window started over when the server refused its cursor; else the error. */
async function afterFetchError(
  spec: WindowedStreamSpec,
  ctx: SyncContext,
  place: WindowPlace,
  { paging, writer, restarts, error }: { paging: Paging; writer: SpoolWriter; restarts: { left: number }; error: unknown },
): Promise<AtPage | 'stopped'> {
  await writer.idle();
  if (isDroppedRequest(error) && ctx.shouldStop()) return 'stopped';
  if (!(spec.serverCursors && paging.cursor !== null && isRejectedCursor(error) && restarts.left > 0)) throw error;
  restarts.left -= 1;
  const reason = (error as Error).message.replace(/^.*?: /, '');
  warn(ctx, spec.name, `${spec.name} ${place.label}: the server refused the saved cursor (${reason}); restarting the window`, {
    window: place.label,
  });
  // The pages before the restart were never seen, so uniqueness is not claimed.
  return startOver(spec, ctx, writer.window, place, false);
}

/**
 * Fetches the page at the paging's cursor and takes its records. The page holds one of the run's page
 * slots from when its source's limiter lets the request go (not while it waits there, or a few slots would
 * hold back every source) until its records are taken: what then waits on the disk is bytes outside the heap.
 */
async function fetchAndTake(
  spec: WindowedStreamSpec,
  ctx: SyncContext,
  window: PlannedWindow,
  paging: Paging,
): Promise<{ taken: TakenPage } | { error: unknown }> {
  let release = (): void => undefined;
  const slots = spec.takesPageSlot ? ctx.pace.pageSlots : undefined;
  const admit =
    slots &&
    (async () => {
      release = await slots.take();
      if (ctx.shouldStop()) {
        release();
        throw new CostsyncError('CS_ERR_ABORTED', DROPPED_MESSAGE);
      }
      return release;
    });
  try {
    let page: FetchedPage;
    try {
      page = await spec.fetchPage(ctx.client, window, paging.cursor, ctx.checks, admit);
    } catch (error) {
      return { error };
    }
    const { idHashes, totals, seenCursors } = paging;
    return {
      taken: takePage(page, {
        spec,
        window: { start: window.start, end: window.end, cursor: paging.cursor },
        seenCursors,
        idHashes,
        totals,
      }),
    };
  } finally {
    release();
  }
}

function isRejectedCursor(error: unknown): boolean {
  return error instanceof ApiError && error.statusCode === 400 && /cursor/i.test(error.message);
}

/** Warns of records dated outside the window; a cursor the server returned before ends the run. */
function checkTaken(spec: WindowedStreamSpec, ctx: SyncContext, label: string, taken: TakenPage): void {
  if (taken.outside > 0) {
    warn(
      ctx,
      spec.name,
      `${spec.name} ${label}: the server sent ${taken.outside} record(s) dated outside the requested dates; they were not stored`,
      { window: label },
    );
  }
  if (taken.loop) {
    throw new CostsyncError(
      'CS_ERR_CURSOR_LOOP',
      `${spec.name} ${label}: the server returned a cursor it had already returned, so paging would never end.`,
      { hint: 'This is a server fault; report it to the API provider. Progress up to the last good page is kept.' },
    );
  }
}

/**
 * Writes a window's pages to the spool in order while the next page is fetched, and saves the cursor
 * after them when a save is due (`cursorSaveDue`): at most one page is being written while the next is
 * fetched. A write's failure is kept, and thrown by the next step that waits for the writes.
 */
class SpoolWriter {
  /** Every page handed over, written and its cursor saved, in order; never rejects (see `failure`). */
  private writing: Promise<void> = Promise.resolve();
  /** The same, short of the last page. */
  private before: Promise<void> = this.writing;
  private failure: { error: unknown } | null = null;
  /** Pages written since the cursor was last saved, the progress after the last of them, and when it was saved. */
  private unsaved = 0;
  private latest: WindowProgress | null = null;
  private savedAt: number;

  constructor(
    private readonly spec: WindowedStreamSpec,
    private readonly ctx: SyncContext,
    /** The window as the state says, after the pages written so far. */
    public window: PlannedWindow,
    private readonly place: WindowPlace,
  ) {
    this.savedAt = ctx.clock.now();
  }

  /** The window started over from its first page (once every page handed over is written): `window` is its state now. */
  restarted(window: PlannedWindow): void {
    this.window = window;
    // The pages written before the restart are gone: their progress is never recorded.
    this.unsaved = 0;
    this.latest = null;
  }

  /** Records the progress after the last page written: the window's new value, in the state file. */
  private async record(): Promise<void> {
    const progress = this.latest!;
    this.unsaved = 0;
    this.latest = null;
    this.window = windowAdvanced(this.window, progress);
    await this.ctx.state.checkpoint({ stream: this.spec.name, window: this.window });
  }

  /** Settles once at most the last page handed over is being written (never rejects: see `throwFailure`). */
  get lastButOne(): Promise<void> {
    return this.before;
  }

  /** Waits until every page is written; throws a write's failure. */
  async idle(): Promise<void> {
    await this.writing;
    this.throwFailure();
  }

  throwFailure(): void {
    if (this.failure !== null) throw this.failure.error;
  }

  /**
   * Hands a taken page over: written after the pages before it, then its progress saved when due;
   * `written` is called once it is written or failed. The writer takes the page's bytes: the loop's
   * frame would otherwise keep them until the next page comes, and then only the write holds them.
   */
  add(progress: WindowProgress, taken: TakenPage, written: () => void): void {
    const { ctx, spec, place } = this;
    const spooled: { data: Uint8Array | null } = { data: taken.data };
    taken.data = EMPTY;
    const shown = { rows: taken.rows, window: place.label, ...(taken.usd !== undefined ? { usd: taken.usd } : {}) };
    this.before = this.writing;
    this.writing = this.writing.then(async () => {
      try {
        if (this.failure !== null) return;
        await place.spool.writePage(place.dir, progress.page, spooled.data!);
        spooled.data = null;
        this.latest = progress;
        this.unsaved += 1;
        if (cursorSaveDue(this.unsaved, ctx.clock.now() - this.savedAt, progress.fetched)) {
          await this.record();
          this.savedAt = ctx.clock.now();
        }
        ctx.stats[spec.name].pages += 1;
        ctx.progress.page?.(spec.name, shown);
      } catch (error) {
        this.failure ??= { error };
      } finally {
        spooled.data = null;
        written();
      }
    });
  }

  /** Every page written, and the cursor after the last one saved. */
  async end(): Promise<void> {
    await this.writing;
    if (this.unsaved > 0) await this.record();
  }
}

/**
 * Checks a fetched window against its other view: stored as it is (with why, when its views still
 * disagree after every fetch), or 'refetch'; 'stopped' when a stop cut the check's request.
 */
async function checkWindow(
  spec: WindowedStreamSpec,
  ctx: SyncContext,
  window: PlannedWindow,
  place: WindowPlace,
  paging: Paging,
  attempt: number,
): Promise<{ disagreement: string | null } | 'refetch' | 'stopped'> {
  if (ctx.checks.reconcile === 'off') return { disagreement: null };
  const { label } = place;
  let mismatches;
  try {
    const paged = paging.totals?.totals();
    const spooled = [pageGlob(place.dir), window.start, window.end];
    const windowTotals = async () => paged ?? (await ctx.warehouse.query<Total>(spec.check.spoolTotals, spooled, tableNames(spec.table)));
    mismatches = await spec.check.run(ctx, window, windowTotals);
  } catch (error) {
    // The window's pages are spooled and its cursor saved: the next run checks and stores it.
    if (isDroppedRequest(error) && ctx.shouldStop()) return 'stopped';
    throw error;
  }
  if (mismatches.length === 0) return { disagreement: null };
  const [left, right] = spec.check.sides;
  const detail = describeMismatches(mismatches, spec.check.sides);
  if (attempt >= MAX_FETCH_ATTEMPTS) {
    const disagreement = `${spec.name} ${label}: the ${left} and the ${right} still disagree after ${attempt} fetches (the source kept changing while costsync paged, or it drops rows); the last fetch was stored: ${detail}`;
    warn(ctx, spec.name, disagreement, { window: label, mismatches: mismatches.slice(0, 20) });
    return { disagreement };
  }
  ctx.logger.info(`${spec.name} ${label}: the ${left} and the ${right} disagree (${detail}); fetching the window again`, {
    stream: spec.name,
    window: label,
    attempt,
  });
  return 'refetch';
}
