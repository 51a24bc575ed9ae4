/**
 * Changes to old data while the emulator runs: restate a day of any age, move a line item to another
 * date, change an old alert's status. Tests call them on the handle `startEmulator` returns; people call
 * them through the control endpoints (`POST /_emulator/<action>`, `costsync emulator change`). Both come
 * here, so a change means the same whichever way it was asked for.
 */
import { ANOMALY_STATUSES, type AnomalyStatus } from '../api/types.js';
import { isCalendarDate, toDayNumber } from '../dates.js';
import { DataChangeError, type Dataset, type DayRestatement, type DayRestatementResult } from './dataset.js';

/** Where the control endpoints live: off the API's prefix, so that no client of the API meets them. */
export const CONTROL_PREFIX = '/_emulator';
export const CHANGE_ACTIONS = ['restate-day', 'move-line-item', 'anomaly-status'] as const;
export type ChangeAction = (typeof CHANGE_ACTIONS)[number];

/** What `restateDay` does when a rate is not given: the emulator's usual restatement. */
export const DEFAULT_DAY_RESTATEMENT: DayRestatement = { changeRate: 0.1, deleteRate: 0.05, addRows: 0 };

/** One change. Without `workspace` it applies to every workspace's data (see `DataChanges.apply`). */
export type DataChange = { workspace?: string | undefined } & (
  | ({ action: 'restate-day'; date: string } & DayRestatement)
  | { action: 'move-line-item'; from: string; to: string; id?: string | undefined }
  | { action: 'anomaly-status'; target: { id: string } | { date: string }; status: AnomalyStatus }
);

/** What a change did, as the control endpoints answer it (`data` of the envelope). */
export type ChangeResult =
  | ({ action: 'restate-day' } & DayRestatementResult)
  | { action: 'move-line-item'; id: string; from: string; to: string; amount_usd: number | null }
  | { action: 'anomaly-status'; id: string; status: string; previous_status: string | null; detected_date: string | null };

/** The fields each control endpoint takes in its JSON body. */
const FIELDS: Record<ChangeAction, readonly string[]> = {
  'restate-day': ['date', 'change_rate', 'delete_rate', 'add_rows', 'workspace'],
  'move-line-item': ['from', 'to', 'id', 'workspace'],
  'anomaly-status': ['status', 'id', 'date', 'workspace'],
};

/** The day number of a date given to a change; a DataChangeError (a 400) rather than an internal error when it is not a date. */
export function changeDay(name: string, date: unknown): number {
  if (typeof date !== 'string' || !isCalendarDate(date)) {
    throw new DataChangeError(`${name} must be a real calendar date as YYYY-MM-DD; got ${JSON.stringify(date) ?? 'nothing'}.`);
  }
  return toDayNumber(date);
}

/**
 * Reads a control endpoint's JSON body into a change. Throws DataChangeError naming the field and what
 * it takes; dates are checked against the span when the change is applied.
 */
export function parseChange(action: ChangeAction, body: unknown): DataChange {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new DataChangeError(`The body must be a JSON object with the fields ${FIELDS[action].join(', ')}.`);
  }
  const fields = body as Record<string, unknown>;
  const unknown = Object.keys(fields).filter((k) => !FIELDS[action].includes(k));
  if (unknown.length > 0) {
    throw new DataChangeError(`${action} takes the fields ${FIELDS[action].join(', ')}; leave out ${unknown.join(', ')}.`);
  }
  const text = (name: string, required: boolean): string | undefined => {
    const value = fields[name];
    if (value === undefined && !required) return undefined;
    if (typeof value !== 'string' || value === '') throw new DataChangeError(`${action} needs ${name} as a non-empty string.`);
    return value;
  };
  const number = (name: string, fallback: number): number => {
    const value = fields[name];
    if (value === undefined) return fallback;
    if (typeof value !== 'number') throw new DataChangeError(`${name} must be a number; got ${JSON.stringify(value)}.`);
    return value;
  };
  const workspace = text('workspace', false);
  const common = workspace === undefined ? {} : { workspace };
  switch (action) {
    case 'restate-day':
      return {
        ...common,
        action,
        date: text('date', true)!,
        changeRate: number('change_rate', DEFAULT_DAY_RESTATEMENT.changeRate),
        deleteRate: number('delete_rate', DEFAULT_DAY_RESTATEMENT.deleteRate),
        addRows: number('add_rows', DEFAULT_DAY_RESTATEMENT.addRows),
      };
    case 'move-line-item':
      return { ...common, action, from: text('from', true)!, to: text('to', true)!, id: text('id', false) };
    case 'anomaly-status': {
      const id = text('id', false);
      const date = text('date', false);
      if ((id === undefined) === (date === undefined)) {
        throw new DataChangeError(
          'anomaly-status needs the alert: its id, or a date (the oldest alert detected that day); give one of them.',
        );
      }
      const status = text('status', true)!;
      if (!ANOMALY_STATUSES.includes(status as AnomalyStatus)) {
        throw new DataChangeError(`status must be one of ${ANOMALY_STATUSES.join(', ')}; got ${JSON.stringify(status)}.`);
      }
      return { ...common, action, target: id !== undefined ? { id } : { date: date! }, status: status as AnomalyStatus };
    }
  }
}

/** The workspaces' data, as the server keeps it. */
export interface Workspaces {
  /** A workspace's data, created on first use (it replays the changes made to every workspace). */
  datasetOf(workspace: string | undefined): Dataset;
  /** Every workspace's data made so far, the default one first. */
  all(): Dataset[];
  /** Workspace names a change may name: the keys' workspaces, `default`, and any already in use. */
  known(): string[];
}

/**
 * Applies changes to the workspaces' data. A change that names a workspace changes that one only; one
 * that does not changes every workspace, as `restate()` does, and is replayed on workspaces made later,
 * so a workspace's data does not depend on when a key of it first asked. Such a change picks its line
 * item or alert in the default workspace, and moves or sets that same id wherever else it is.
 */
export class DataChanges {
  private readonly replays: ((ds: Dataset) => void)[] = [];

  constructor(private readonly workspaces: Workspaces) {}

  /** Brings a new workspace's data up to the changes made to every workspace. */
  replayOn(ds: Dataset): void {
    for (const replay of this.replays) replay(ds);
  }

  /** Applies a change read from a control endpoint's body. */
  apply(change: DataChange, nowMs: number): ChangeResult {
    switch (change.action) {
      case 'restate-day':
        return { action: change.action, ...this.restateDay(change.date, change, change.workspace) };
      case 'move-line-item': {
        const moved = this.moveLineItem(change.from, change.to, change.id, change.workspace);
        return { action: change.action, from: change.from, to: change.to, ...moved };
      }
      case 'anomaly-status':
        return { action: change.action, ...this.setAnomalyStatus(change.target, change.status, nowMs, change.workspace) };
    }
  }

  /** See `Dataset.restateDay`; what is not given takes `DEFAULT_DAY_RESTATEMENT`; the counts are the reference workspace's. */
  restateDay(date: string, restatement: Partial<DayRestatement>, workspace: string | undefined): DayRestatementResult {
    const day = changeDay('date', date);
    const edit: DayRestatement = {
      changeRate: restatement.changeRate ?? DEFAULT_DAY_RESTATEMENT.changeRate,
      deleteRate: restatement.deleteRate ?? DEFAULT_DAY_RESTATEMENT.deleteRate,
      addRows: restatement.addRows ?? DEFAULT_DAY_RESTATEMENT.addRows,
    };
    return this.change(
      workspace,
      (ds) => ds.restateDay(day, edit),
      () => (ds) => ds.restateDay(day, edit),
    );
  }

  /** See `Dataset.moveLineItem`; the answer has the amount moved. */
  moveLineItem(from: string, to: string, id: string | undefined, workspace: string | undefined): { id: string; amount_usd: number | null } {
    const fromDay = changeDay('from', from);
    const toDay = changeDay('to', to);
    const { moved, ds } = this.change(
      workspace,
      (ref) => ({ moved: ref.moveLineItem(fromDay, toDay, id), ds: ref }),
      ({ moved }) => whereItIs((other) => other.moveLineItem(fromDay, toDay, moved)),
    );
    return { id: moved, amount_usd: amountOf(ds, toDay, moved) };
  }

  /** See `Dataset.setAnomalyStatus`; the answer has the alert's detection time. */
  setAnomalyStatus(
    target: { id: string } | { date: string },
    status: AnomalyStatus,
    nowMs: number,
    workspace: string | undefined,
  ): { id: string; status: AnomalyStatus; previous_status: string | null; detected_date: string | null } {
    const found = 'id' in target ? target : { day: changeDay('date', target.date) };
    const { id, ds, previous } = this.change(
      workspace,
      (ref) => {
        const previous = ref.anomaly(ref.anomalyIdOf(found, nowMs), nowMs)?.status ?? null;
        return { id: ref.setAnomalyStatus(found, status, nowMs), ds: ref, previous };
      },
      (result) => whereItIs((other) => other.setAnomalyStatus({ id: result.id }, status, nowMs)),
    );
    return { id, status, previous_status: previous, detected_date: ds.anomaly(id, nowMs)?.detected_date ?? null };
  }

  /**
   * Makes a change in the reference data (the named workspace's, or the default one's), then, when no
   * workspace was named, in every other workspace and in those made later (`elsewhere`, given what the
   * reference change returned).
   */
  private change<T>(workspace: string | undefined, reference: (ds: Dataset) => T, elsewhere: (result: T) => (ds: Dataset) => void): T {
    if (workspace !== undefined && !this.workspaces.known().includes(workspace)) {
      throw new DataChangeError(
        `No key belongs to workspace ${JSON.stringify(workspace)}, so the API never serves its data: give one of ${this.workspaces.known().join(', ')}, or leave the workspace out to change every workspace.`,
      );
    }
    // A named workspace is made (and brought up to date) before the change, as a request would.
    const ref = this.workspaces.datasetOf(workspace);
    const result = reference(ref);
    if (workspace === undefined) {
      const apply = elsewhere(result);
      for (const ds of this.workspaces.all()) if (ds !== ref) apply(ds);
      this.replays.push(apply);
    }
    return result;
  }
}

/** Elsewhere, the id chosen in the reference data may be missing (deleted there, or never made): nothing to change there. */
function whereItIs(apply: (ds: Dataset) => void): (ds: Dataset) => void {
  return (ds) => {
    try {
      apply(ds);
    } catch (error) {
      if (!(error instanceof DataChangeError)) throw error;
    }
  };
}

/** The amount of a line item on a day, for the answer; null when it is not there. */
function amountOf(ds: Dataset, day: number, id: string): number | null {
  for (let i = ds.slots(day) - 1; i >= 0; i--) {
    const item = ds.itemAt(day, i);
    if (item?.record.id === id) return item.record.net_amount_usd;
  }
  return null;
}
