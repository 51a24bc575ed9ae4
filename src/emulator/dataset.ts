/**
 * The emulator's data: line items, rollups and anomalies from a seeded generator, computed lazily.
 *
 * A generated line item is a pure function of (seed, day, index, restatement generation, the day's
 * `restateDay` calls), so a page costs O(limit) and memory stays flat whatever the span or rows per
 * day; the few rows that arrive late or move between days are kept as built. Rollups are sums over the
 * same rows (plus ingested ones) and are cached per day and revision. Amounts are kept in integer
 * micro-dollars so that a rollup's `cost_usd` is exactly the sum of its line items rounded to micro-dollars.
 */
import { ANOMALY_STATUSES, type Anomaly, type AnomalyStatus, type GroupBy, type LineItem, type RollupRow } from '../api/types.js';
import { fromDayNumber, toDayNumber, utcDate } from '../dates.js';
import { ALERT_TYPES, FLAT_CUMULATIVE, FLAT_SERVICES, PROJECTS, USER_COUNT, categoryOf, userEmail } from './catalog.js';
import { createRng, hashInts, hashString, pickWeighted, unit } from './rng.js';

export interface RestatementOptions {
  /** How many of the span's last days late data may change. */
  days: number;
  /** Chance per restatement that a row in those days changes its amount. */
  changeRate: number;
  /** Chance per restatement that a row in those days disappears. */
  deleteRate: number;
  /** Rows added to each of those days per restatement, as a share of rows a day (late-arriving rows). */
  addRate?: number;
}

/** What `restateDay` does to one day, of any age: late changes a provider sends long after the fact. */
export interface DayRestatement {
  /** Share of the day's line items whose amount changes. */
  changeRate: number;
  /** Share of the day's line items that disappear. */
  deleteRate: number;
  /** Late rows that arrive for the day. */
  addRows: number;
}

/** What one `restateDay` did: how many of the day's line items changed, disappeared and arrived. */
export interface DayRestatementResult {
  date: string;
  changed: number;
  deleted: number;
  added: number;
}

/** A change to old data that cannot be made as asked (a day outside the span, an unknown id); the message names the fix. */
export class DataChangeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DataChangeError';
  }
}

export interface AnomalyBurst {
  /** ISO timestamp shared by every anomaly of the burst. */
  at: string;
  count: number;
  severity?: string;
  status?: string;
  provider_type?: string;
}

export interface DatasetOptions {
  seed: number;
  startDate: string;
  endDate: string;
  rowsPerDay: number;
  anomaliesPerDay: number;
  anomalyBursts: readonly AnomalyBurst[];
  restatement: RestatementOptions;
  /** Which dimension fields rollups fill for `group_by=service`: the service only, or provider too. */
  serviceRollupFillsProvider: boolean;
}

/** A line item inside the emulator: the wire record plus its amount in micro-dollars. */
export interface StoredItem {
  record: LineItem;
  micros: number;
}

/** Changes made to one day's data after the fact (`restateDay`, `moveLineItem`). */
interface DayChanges {
  /** Each `restateDay` of the day, in order: generated rows apply them as they are drawn. */
  edits: { changeRate: number; deleteRate: number }[];
  /** Generated slots whose row moved to another day. */
  movedOut: Set<number>;
  /**
   * Late rows and rows moved in, built once (there are few); null where one was deleted or moved away,
   * so that the rows after it keep their slots, as after a deleted generated row.
   */
  extra: (StoredItem | null)[];
}

interface DayAggregate {
  provider: Map<string, number>;
  service: Map<string, number>;
  category: Map<string, number>;
}

interface AnomalyBase {
  record: Omit<Anomaly, 'status'> & { id: string };
  detectedMs: number;
  /** Fixed status (bursts), or the status path over time. */
  fixedStatus?: string;
  ackAtMs: number | null;
  closeAtMs: number | null;
  finalStatus: string;
}

const MICROS_PER_CENT = 10_000;
const HOUR_MS = 3_600_000;
const SEVERITY_BY_DEVIATION: readonly [number, string][] = [
  [25, 'low'],
  [60, 'medium'],
  [120, 'high'],
];
const FINAL_STATUSES = ['resolved', 'resolved', 'false_positive', 'dismissed'] as const;
/** Hash salts of `restateDay`: which rows an edit deletes or changes, their new amounts, the late rows. */
const EDIT_SALT = 0xed17;
const EDIT_AMOUNT_SALT = 0xed1a;
const LATE_ROW_SALT = 0x1a7e;
/** Most late rows one `restateDay` adds: as many as a day may have (the CLI's --rows-per-day limit). */
const MAX_ADD_ROWS = 100_000;

/** Rounds micro-dollars to dollars without floating-point drift in the last digit. */
export function microsToUsd(micros: number): number {
  return Math.round(micros) / 1_000_000;
}

export class Dataset {
  readonly options: DatasetOptions;
  readonly startDay: number;
  readonly endDay: number;
  /** Bumped by each restatement; rows of the last `restatement.days` days depend on it. */
  generation = 0;
  private readonly aggregates = new Map<string, DayAggregate>();
  private readonly ingested = new Map<number, StoredItem[]>();
  /** Each ingested row's dedup key, with its day and record id (to find it again when a later row replaces it). */
  private readonly ingestedIds = new Map<string, { day: number; id: unknown }>();
  private readonly dayRevision = new Map<number, number>();
  /** Days whose generated rows were all withdrawn (`emptyDay`). */
  private readonly emptied = new Set<number>();
  private anomalyCache: AnomalyBase[] | null = null;
  /** Changes to days of any age (`restateDay`, `moveLineItem`), by day. */
  private readonly changes = new Map<number, DayChanges>();
  /** Statuses set after the fact (`setAnomalyStatus`), by anomaly id: they replace the status path. */
  private readonly statusOverrides = new Map<string, AnomalyStatus>();

  constructor(options: DatasetOptions) {
    this.options = options;
    this.startDay = toDayNumber(options.startDate);
    this.endDay = toDayNumber(options.endDate);
  }

  /** Late-arriving cost data: recent days' rows change or disappear. */
  restate(): void {
    this.generation += 1;
  }

  /** A provider withdraws a whole day: its generated rows disappear (their slots stay, as deleted rows do). */
  emptyDay(day: number): void {
    this.emptied.add(day);
    // Late and moved-in rows are the provider's too: they go with the day.
    this.changes.get(day)?.extra.fill(null);
    this.bumpRevision(day);
  }

  /**
   * Restates one day of any age, as a provider does long after the fact: each of its line items changes
   * its amount (`changeRate`) or disappears (`deleteRate`), and `addRows` late rows arrive. Seeded by the
   * day and the number of earlier calls on it, so the same calls give the same data and each call changes
   * the day again. Rollups follow (the day's revision moves).
   */
  restateDay(day: number, restatement: DayRestatement): DayRestatementResult {
    this.checkInSpan(day, 'date');
    const { changeRate, deleteRate, addRows } = restatement;
    for (const [name, rate] of [
      ['changeRate', changeRate],
      ['deleteRate', deleteRate],
    ] as const) {
      if (typeof rate !== 'number' || !Number.isFinite(rate) || rate < 0 || rate > 1) {
        throw new DataChangeError(`${name} must be a fraction from 0 to 1; got ${JSON.stringify(rate) ?? String(rate)}. For 10% give 0.1.`);
      }
    }
    if (changeRate + deleteRate > 1) {
      throw new DataChangeError(
        `changeRate ${changeRate} and deleteRate ${deleteRate} add up to more than 1: a row either changes or disappears, so keep their sum at most 1.`,
      );
    }
    if (typeof addRows !== 'number' || !Number.isInteger(addRows) || addRows < 0 || addRows > MAX_ADD_ROWS) {
      throw new DataChangeError(
        `addRows must be a whole number from 0 to ${MAX_ADD_ROWS}; got ${JSON.stringify(addRows) ?? String(addRows)}.`,
      );
    }
    const changes = this.changesOf(day);
    const edit = changes.edits.length + 1;
    const { seed } = this.options;
    let changed = 0;
    let deleted = 0;
    // Counted over the rows as they are before this edit, with the draws `draw` will make for it.
    const generated = this.generatedSlots(day);
    for (let i = 0; i < generated; i++) {
      if (this.draw(day, i) === null) continue;
      const r = unit(hashInts(seed, day, i, edit, EDIT_SALT));
      if (r < deleteRate) deleted += 1;
      else if (r < deleteRate + changeRate) changed += 1;
    }
    // Late and moved-in rows are built already: the edit changes them here, once.
    changes.extra.forEach((item, slot) => {
      if (item === null) return;
      const key = hashString(item.record.id);
      const r = unit(hashInts(seed, day, key, edit, EDIT_SALT));
      if (r < deleteRate) {
        changes.extra[slot] = null;
        deleted += 1;
      } else if (r < deleteRate + changeRate) {
        const was = Math.round(item.micros / MICROS_PER_CENT);
        const cents = changedCents(was, unit(hashInts(seed, day, key, edit, EDIT_AMOUNT_SALT)));
        const record: LineItem = { ...item.record, net_amount_usd: cents / 100 };
        // Token counts follow the amount, as they do on generated rows (`build`).
        for (const field of ['tokens_input', 'tokens_output'] as const) {
          if (typeof record[field] === 'number') record[field] = Math.round((record[field] * cents) / was);
        }
        changes.extra[slot] = { record, micros: cents * MICROS_PER_CENT };
        changed += 1;
      }
    });
    changes.edits.push({ changeRate, deleteRate });
    const date = fromDayNumber(day);
    const compact = date.replaceAll('-', '');
    for (let n = 0; n < addRows; n++) {
      const rng = createRng(hashInts(seed, day, LATE_ROW_SALT, edit, n));
      const { flat, cents, isCredit } = baseDraw(rng);
      changes.extra.push(build(date, `li-${compact}-late${edit}-${n.toString().padStart(6, '0')}`, rng, flat, cents, isCredit));
    }
    this.bumpRevision(day);
    return { date, changed, deleted, added: addRows };
  }

  /**
   * Corrects one line item's usage date: it leaves `fromDay` and appears on `toDay` with the same id and
   * amount. `id` picks it (a generated, late or moved-in row; rows that came through ingest are the
   * pusher's to correct); without one, the day's first line item moves. Returns the id moved.
   */
  moveLineItem(fromDay: number, toDay: number, id?: string): string {
    this.checkInSpan(fromDay, 'from');
    this.checkInSpan(toDay, 'to');
    const from = fromDayNumber(fromDay);
    if (fromDay === toDay) throw new DataChangeError(`from and to are both ${from}: give two different dates.`);
    const found = this.findProviderRow(fromDay, id);
    if (found === null) {
      const pushed = id !== undefined && this.ingested.get(fromDay)?.some((i) => i.record.id === id);
      throw new DataChangeError(
        id === undefined
          ? `There are no line items on ${from} to move: pick a day that has some.`
          : pushed
            ? `Line item ${id} on ${from} came through ingest: push it again with its new date instead.`
            : `There is no line item ${id} on ${from}: give the id of a line item the API serves for that date.`,
      );
    }
    const changes = this.changesOf(fromDay);
    if (found.extraSlot === null) changes.movedOut.add(found.slot);
    else changes.extra[found.extraSlot] = null;
    this.changesOf(toDay).extra.push({ record: { ...found.item.record, usage_date: fromDayNumber(toDay) }, micros: found.item.micros });
    this.bumpRevision(fromDay);
    this.bumpRevision(toDay);
    return found.item.record.id;
  }

  /**
   * Changes an alert's status after the fact (a 40-day-old alert resolved today): by id, or the oldest
   * alert detected on a day. Only alerts detected by `nowMs` count. The status stays as set from then on.
   * Returns the alert's id.
   */
  setAnomalyStatus(target: { id: string } | { day: number }, status: AnomalyStatus, nowMs = Infinity): string {
    if (!ANOMALY_STATUSES.includes(status)) {
      throw new DataChangeError(`status must be one of ${ANOMALY_STATUSES.join(', ')}; got ${JSON.stringify(status)}.`);
    }
    const id = this.anomalyIdOf(target, nowMs);
    this.statusOverrides.set(id, status);
    return id;
  }

  /** The id of the alert `target` names (by id, or the oldest detected on a day), among those detected by `nowMs`. */
  anomalyIdOf(target: { id: string } | { day: number }, nowMs = Infinity): string {
    const detected = this.anomalyBases().filter((b) => b.detectedMs <= nowMs);
    let base: AnomalyBase | undefined;
    if ('id' in target) {
      base = detected.find((b) => b.record.id === target.id);
      if (!base) throw new DataChangeError(`There is no alert ${target.id} (detected by now): give the id of an alert the API serves.`);
    } else {
      this.checkInSpan(target.day, 'date');
      const date = fromDayNumber(target.day);
      for (const b of detected) {
        if (utcDate(b.detectedMs) !== date) continue;
        if (!base || b.detectedMs < base.detectedMs || (b.detectedMs === base.detectedMs && b.record.id < base.record.id)) base = b;
      }
      if (!base) throw new DataChangeError(`No alert was detected on ${date} (by now): pick another date, or give an alert's id.`);
    }
    return base.record.id;
  }

  /** One alert as the API shows it at `nowMs`, or null when there is none by that id (or not yet). */
  anomaly(id: string, nowMs: number): Anomaly | null {
    const base = this.anomalyBases().find((b) => b.record.id === id && b.detectedMs <= nowMs);
    return base ? ({ ...base.record, status: this.statusOf(base, nowMs) } as Anomaly) : null;
  }

  private statusOf(base: AnomalyBase, nowMs: number): string {
    return this.statusOverrides.get(base.record.id) ?? statusAt(base, nowMs);
  }

  private bumpRevision(day: number): void {
    this.dayRevision.set(day, (this.dayRevision.get(day) ?? 0) + 1);
  }

  private changesOf(day: number): DayChanges {
    let changes = this.changes.get(day);
    if (!changes) {
      changes = { edits: [], movedOut: new Set(), extra: [] };
      this.changes.set(day, changes);
    }
    return changes;
  }

  /** Refuses a day outside the span: the API serves no generated rows there, so the change would be lost. */
  private checkInSpan(day: number, what: string): void {
    if (day < this.startDay || day > this.endDay) {
      throw new DataChangeError(
        `${what} ${fromDayNumber(day)} is outside the emulator's data, ${this.options.startDate} to ${this.options.endDate}: pick a date in that span.`,
      );
    }
  }

  /** A live generated, late or moved-in row of a day (by id, or the first); `extraSlot` null for a generated one. */
  private findProviderRow(day: number, id: string | undefined): { item: StoredItem; slot: number; extraSlot: number | null } | null {
    const generated = this.generatedSlots(day);
    for (let i = 0; i < generated; i++) {
      const item = this.generate(day, i);
      if (item !== null && (id === undefined || item.record.id === id)) return { item, slot: i, extraSlot: null };
    }
    const extra = this.changes.get(day)?.extra ?? [];
    for (let slot = 0; slot < extra.length; slot++) {
      const item = extra[slot];
      if (item && (id === undefined || item.record.id === id)) return { item, slot, extraSlot: slot };
    }
    return null;
  }

  /** The first day that restatement touches. */
  get restateFromDay(): number {
    return this.endDay - Math.max(0, this.options.restatement.days) + 1;
  }

  /** Number of generated row slots on a day (deleted rows still take a slot). */
  generatedSlots(day: number): number {
    if (day < this.startDay || day > this.endDay) return 0;
    const added =
      day >= this.restateFromDay ? Math.round(this.generation * (this.options.restatement.addRate ?? 0) * this.options.rowsPerDay) : 0;
    return this.options.rowsPerDay + added;
  }

  /** Slots on a day: generated rows first, then late and moved-in rows, then rows ingested for that date. */
  slots(day: number): number {
    return this.generatedSlots(day) + (this.changes.get(day)?.extra.length ?? 0) + (this.ingested.get(day)?.length ?? 0);
  }

  /** The item in a slot, or null when a restatement deleted it (or it moved to another day). */
  itemAt(day: number, index: number): StoredItem | null {
    const generated = this.generatedSlots(day);
    if (index < generated) return this.generate(day, index);
    const extra = this.changes.get(day)?.extra ?? [];
    if (index < generated + extra.length) return extra[index - generated] ?? null;
    return this.ingested.get(day)?.[index - generated - extra.length] ?? null;
  }

  /** Every ingested line item, for tests and the request log. */
  ingestedRecords(): StoredItem['record'][] {
    return [...this.ingested.values()].flatMap((items) => items.map((i) => i.record));
  }

  /** Days that hold ingested rows, for range scans that must not miss them. */
  ingestedDays(): number[] {
    return [...this.ingested.keys()];
  }

  /**
   * The draws that fix a generated row's service and amount, restatement applied; null when
   * restatement deleted the row. The row's other fields draw from `rng` after these, so rollups can
   * sum amounts without building rows.
   */
  private draw(day: number, index: number): { rng: () => number; flat: number; cents: number; isCredit: boolean } | null {
    if (this.emptied.has(day)) return null;
    const changes = this.changes.get(day);
    if (changes?.movedOut.has(index)) return null;
    const { seed } = this.options;
    const rng = createRng(hashInts(seed, day, index));
    const { flat, isCredit, cents: drawnCents } = baseDraw(rng);
    let cents = drawnCents;
    if (day >= this.restateFromDay) {
      const { changeRate, deleteRate } = this.options.restatement;
      for (let g = 1; g <= this.generation; g++) {
        const r = unit(hashInts(seed, day, index, g, 0x5e57a7e));
        if (r < deleteRate) return null;
        if (r < deleteRate + changeRate) {
          cents = Math.round(cents * (0.5 + unit(hashInts(seed, day, index, g, 0xc4a76e))));
          if (cents === 0) cents = 1;
        }
      }
    }
    // A plain loop: this runs for every row a page or rollup draws, most of them on days never restated.
    const edits = changes?.edits;
    for (let k = 1; edits !== undefined && k <= edits.length; k++) {
      const edit = edits[k - 1]!;
      const r = unit(hashInts(seed, day, index, k, EDIT_SALT));
      if (r < edit.deleteRate) return null;
      if (r < edit.deleteRate + edit.changeRate) cents = changedCents(cents, unit(hashInts(seed, day, index, k, EDIT_AMOUNT_SALT)));
    }
    return { rng, flat, cents, isCredit };
  }

  private generate(day: number, index: number): StoredItem | null {
    const drawn = this.draw(day, index);
    if (drawn === null) return null;
    const date = fromDayNumber(day);
    const id = `li-${date.replaceAll('-', '')}-${index.toString().padStart(6, '0')}`;
    return build(date, id, drawn.rng, drawn.flat, drawn.cents, drawn.isCredit);
  }

  /**
   * Stores an ingested line item under its date. When `dedupKey` was seen before, stores nothing
   * and returns false, or with `replace`, takes the earlier row out and stores this one.
   */
  addIngested(day: number, item: StoredItem, dedupKey: string, replace = false): boolean {
    const earlier = this.ingestedIds.get(dedupKey);
    if (earlier !== undefined) {
      if (!replace) return false;
      const list = this.ingested.get(earlier.day) ?? [];
      const at = list.findIndex((i) => i.record.id === earlier.id);
      if (at >= 0) list.splice(at, 1);
      if (list.length === 0) this.ingested.delete(earlier.day);
      this.dayRevision.set(earlier.day, (this.dayRevision.get(earlier.day) ?? 0) + 1);
    }
    this.ingestedIds.set(dedupKey, { day, id: item.record.id });
    const list = this.ingested.get(day) ?? [];
    list.push(item);
    this.ingested.set(day, list);
    this.dayRevision.set(day, (this.dayRevision.get(day) ?? 0) + 1);
    return true;
  }

  private aggregate(day: number): DayAggregate {
    const generation = day >= this.restateFromDay ? this.generation : 0;
    const key = `${day}:${generation}:${this.dayRevision.get(day) ?? 0}`;
    const cached = this.aggregates.get(key);
    if (cached) return cached;
    const agg: DayAggregate = { provider: new Map(), service: new Map(), category: new Map() };
    const add = (map: Map<string, number>, k: string, micros: number) => map.set(k, (map.get(k) ?? 0) + micros);
    const addItem = (provider: string, service: string, micros: number) => {
      add(agg.provider, provider, micros);
      add(agg.service, `${provider}\u0000${service}`, micros);
      add(agg.category, categoryOf(service), micros);
    };
    // Generated rows are summed per catalog service from their amounts alone (see `draw`): with
    // hundreds of workspaces, building every row of a day for its rollup held the emulator's
    // event loop for seconds.
    const perService = new Float64Array(FLAT_SERVICES.length);
    const seen = new Uint8Array(FLAT_SERVICES.length);
    const generated = this.generatedSlots(day);
    for (let i = 0; i < generated; i++) {
      const drawn = this.draw(day, i);
      if (drawn === null) continue;
      perService[drawn.flat]! += drawn.cents * MICROS_PER_CENT;
      seen[drawn.flat] = 1;
    }
    FLAT_SERVICES.forEach(({ provider, service }, i) => {
      if (seen[i] === 1) addItem(provider.slug, service.name, perService[i]!);
    });
    for (const item of this.changes.get(day)?.extra ?? []) {
      if (item) addItem(item.record.provider_type, item.record.provider_service, item.micros);
    }
    for (const item of this.ingested.get(day) ?? []) addItem(item.record.provider_type, item.record.provider_service, item.micros);
    if (this.aggregates.size > 4096) this.aggregates.clear();
    this.aggregates.set(key, agg);
    return agg;
  }

  /** Daily rollup rows for [startDay, endDay], one per date and group, in date then group order. */
  rollups(startDay: number, endDay: number, groupBy: GroupBy): RollupRow[] {
    const rows: RollupRow[] = [];
    const from = Math.max(startDay, Math.min(this.startDay, ...this.ingestedDays()));
    const to = Math.min(endDay, Math.max(this.endDay, ...this.ingestedDays()));
    for (let day = from; day <= to; day++) {
      if (this.slots(day) === 0) continue;
      const date = fromDayNumber(day);
      const agg = this.aggregate(day);
      if (groupBy === 'provider') {
        for (const [provider, micros] of sorted(agg.provider)) {
          rows.push({ date, cost_usd: microsToUsd(micros), provider_type: provider, service: null, category: null });
        }
      } else if (groupBy === 'service') {
        // Service names are unique per provider in the catalog, but ingested names may collide,
        // so the group is (provider, service) whether or not provider_type is shown.
        const merged = new Map<string, number>();
        for (const [key, micros] of agg.service) {
          const k = this.options.serviceRollupFillsProvider ? key : key.split('\u0000')[1]!;
          merged.set(k, (merged.get(k) ?? 0) + micros);
        }
        for (const [key, micros] of sorted(merged)) {
          const parts = key.split('\u0000');
          const fills = this.options.serviceRollupFillsProvider;
          rows.push({
            date,
            cost_usd: microsToUsd(micros),
            provider_type: fills ? parts[0]! : null,
            service: fills ? parts[1]! : parts[0]!,
            category: null,
          });
        }
      } else {
        for (const [category, micros] of sorted(agg.category)) {
          rows.push({ date, cost_usd: microsToUsd(micros), provider_type: null, service: null, category });
        }
      }
    }
    return rows;
  }

  /** Every anomaly detected at or before `nowMs`, with its status as of `nowMs`. */
  anomaliesAt(nowMs: number): { anomaly: Anomaly; detectedMs: number }[] {
    const out: { anomaly: Anomaly; detectedMs: number }[] = [];
    for (const base of this.anomalyBases()) {
      if (base.detectedMs > nowMs) continue;
      out.push({ anomaly: { ...base.record, status: this.statusOf(base, nowMs) } as Anomaly, detectedMs: base.detectedMs });
    }
    return out;
  }

  private anomalyBases(): AnomalyBase[] {
    if (this.anomalyCache) return this.anomalyCache;
    const { seed, anomaliesPerDay } = this.options;
    const bases: AnomalyBase[] = [];
    for (let day = this.startDay; day <= this.endDay; day++) {
      const count = Math.max(0, anomaliesPerDay + (hashInts(seed, day, 0xa) % 3) - 1);
      let previousMs = -1;
      for (let j = 0; j < count; j++) {
        const rng = createRng(hashInts(seed, day, j, 0xa40));
        // Detection runs in batches: about one alert in five shares the previous alert's timestamp.
        const detectedMs = previousMs >= 0 && rng() < 0.2 ? previousMs : day * 86_400_000 + Math.floor(rng() * 86_400) * 1000;
        previousMs = detectedMs;
        bases.push(makeAnomaly(`anom-${fromDayNumber(day).replaceAll('-', '')}-${j}`, detectedMs, rng));
      }
    }
    this.options.anomalyBursts.forEach((burst, b) => {
      const detectedMs = Date.parse(burst.at);
      for (let j = 0; j < burst.count; j++) {
        const rng = createRng(hashInts(seed, hashString(burst.at), b, j, 0xb0));
        const base = makeAnomaly(`anom-burst${b}-${j}`, detectedMs, rng, burst.provider_type);
        if (burst.severity) base.record.severity = burst.severity;
        if (burst.status) base.fixedStatus = burst.status;
        bases.push(base);
      }
    });
    this.anomalyCache = bases;
    return bases;
  }
}

/** A line item from its amount draws: its other fields come from `rng`, after those. */
function build(date: string, id: string, rng: () => number, flatIndex: number, cents: number, isCredit: boolean): StoredItem {
  const flat = FLAT_SERVICES[flatIndex]!;
  const project = PROJECTS[Math.floor(rng() * PROJECTS.length)]!;
  const user = userEmail(Math.floor(rng() * USER_COUNT));
  const currency = flat.provider.currencies[Math.floor(rng() * flat.provider.currencies.length)]!;

  const record: LineItem = {
    id,
    usage_date: date,
    provider_type: flat.provider.slug,
    provider_service: flat.service.name,
    net_amount_usd: cents / 100,
    currency_original: currency,
    project_id: project,
    user_email: user,
    charge_category: isCredit ? 'Credit' : 'Usage',
  };
  if (flat.service.models) {
    const models = flat.service.models;
    record.model = models[Math.floor(rng() * models.length)]!;
    record.tokens_input = Math.round(cents * (800 + rng() * 400));
    record.tokens_output = Math.round(cents * (150 + rng() * 100));
  }
  return { record, micros: cents * MICROS_PER_CENT };
}

/**
 * The draws that fix a row's service and amount, in the order every row makes them: roughly log-normal
 * amounts around the service's typical cost, and a few credits.
 */
function baseDraw(rng: () => number): { flat: number; cents: number; isCredit: boolean } {
  const flat = pickWeighted(FLAT_CUMULATIVE, rng());
  const spread = Math.exp((rng() + rng() + rng() - 1.5) * 1.4);
  let cents = Math.max(1, Math.round(FLAT_SERVICES[flat]!.service.baseCents * spread));
  const isCredit = rng() < 0.015;
  if (isCredit) cents = -cents;
  return { flat, cents, isCredit };
}

/** A restated amount: 0.5x to 1.5x the old one (`u` in [0, 1)), never zero, never the same, same sign. */
function changedCents(cents: number, u: number): number {
  let next = Math.round(cents * (0.5 + u));
  if (next === 0) next = Math.sign(cents);
  // A change too small to show in cents would be no change at all.
  if (next === cents) next += Math.sign(cents);
  return next;
}

/** Alert types that describe cost above what was expected. */
const RISE_ALERT_TYPES = ALERT_TYPES.filter((t) => t !== 'spend_drop');

function makeAnomaly(id: string, detectedMs: number, rng: () => number, provider?: string): AnomalyBase {
  const candidates = provider ? FLAT_SERVICES.filter((f) => f.provider.slug === provider) : FLAT_SERVICES;
  const flat =
    candidates.length > 0
      ? candidates[Math.floor(rng() * candidates.length)]!
      : { provider: { slug: provider! }, service: { name: 'Custom Service' } };
  const expected = Math.round((50 + rng() * 2000) * 100) / 100;
  const size = Math.round((10 + rng() * rng() * 300) * 10) / 10;
  const spike = rng() < 0.85;
  const deviation = spike ? size : -Math.min(size, 90);
  const actual = Math.round(expected * (1 + deviation / 100) * 100) / 100;
  const severity = SEVERITY_BY_DEVIATION.find(([max]) => Math.abs(deviation) < max)?.[1] ?? 'critical';
  // The type agrees with the sign: a rise is never called a drop.
  const alertType = spike ? RISE_ALERT_TYPES[Math.floor(rng() * RISE_ALERT_TYPES.length)]! : 'spend_drop';
  // Status path: most alerts get acknowledged, then closed; some are never touched.
  const untouched = rng() < 0.12;
  const ackAtMs = untouched ? null : detectedMs + Math.round((2 + rng() * 46) * HOUR_MS);
  const closes = !untouched && rng() < 0.8;
  const closeAtMs = closes && ackAtMs !== null ? ackAtMs + Math.round((12 + rng() * 200) * HOUR_MS) : null;
  const finalStatus = FINAL_STATUSES[Math.floor(rng() * FINAL_STATUSES.length)]!;
  return {
    record: {
      id,
      provider_type: flat.provider.slug,
      service: flat.service.name,
      detected_date: new Date(detectedMs).toISOString().replace('.000Z', 'Z'),
      actual_cost: actual,
      expected_cost: expected,
      deviation_percent: deviation,
      severity,
      alert_type: alertType,
    },
    detectedMs,
    ackAtMs,
    closeAtMs,
    finalStatus,
  };
}

/** Status of an anomaly at a time: new, then acknowledged, then a final state; never backwards. */
function statusAt(base: AnomalyBase, nowMs: number): string {
  if (base.fixedStatus) return base.fixedStatus;
  if (base.closeAtMs !== null && nowMs >= base.closeAtMs) return base.finalStatus;
  if (base.ackAtMs !== null && nowMs >= base.ackAtMs) return 'acknowledged';
  return 'new';
}

function sorted(map: Map<string, number>): [string, number][] {
  return [...map.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}
