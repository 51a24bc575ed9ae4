/**
 * `costsync emulator change`: changes old data of a running emulator through its control endpoints
 * (`POST /_emulator/<change>`): restate a day of any age, move a line item to another date, set an old
 * alert's status. A person syncs, makes the change, syncs again and looks whether costsync caught it,
 * without restarting the emulator (which would lose the data's other changes).
 */
import type { Argv } from 'yargs';
import { undici } from '../cjs-libraries.js';
import { ANOMALY_STATUSES, type AnomalyStatus } from '../api/types.js';
import { UNREACHABLE_CODES, errnoOf } from '../api/client.js';
import { closest } from '../did-you-mean.js';
import type { ChangeAction, ChangeResult } from '../emulator/index.js';
import { ConfigError, CostsyncError, ExitCode } from '../errors.js';
import { check } from '../settings.js';
import { intArg, rateArg } from './args.js';
import type { CommandIo } from './common.js';

/** The changes, as the emulator's control endpoints name them (the emulator is not loaded to list them). */
const CHANGES = ['restate-day', 'move-line-item', 'anomaly-status'] as const satisfies readonly ChangeAction[];
type Change = (typeof CHANGES)[number];

/** Each change's own flags (`date` is the positional, also `--date`); --url and --workspace go with every one. */
const FLAGS: Record<Change, readonly string[]> = {
  'restate-day': ['date', 'change-rate', 'delete-rate', 'add-rows'],
  'move-line-item': ['from', 'to', 'id'],
  'anomaly-status': ['date', 'id', 'status'],
};
const ALL_FLAGS = [...new Set(Object.values(FLAGS).flat())];
/** As many rows as a day may have (`--rows-per-day`'s limit). */
const MAX_ADD_ROWS = 100_000;
/** The emulator's rates when a flag is not given (its DEFAULT_DAY_RESTATEMENT), to check their sum here. */
const DEFAULT_RATES = { change: 0.1, delete: 0.05 };
export const DEFAULT_EMULATOR_URL = 'http://127.0.0.1:8787';

/** A command line of each change, for --help and for hints. */
const usage = (change: Change) =>
  ({
    'restate-day': 'costsync emulator change restate-day 2025-06-01 --change-rate 0.2 --delete-rate 0.1 --add-rows 10',
    'move-line-item': 'costsync emulator change move-line-item --from 2025-06-01 --to 2025-06-03',
    'anomaly-status': 'costsync emulator change anomaly-status 2025-06-01 --status resolved',
  })[change];

export function emulatorChangeOptions(yargs: Argv) {
  return yargs
    .positional('what', { type: 'string', describe: `The change: ${CHANGES.join(', ')}` })
    .positional('date', {
      type: 'string',
      describe: 'restate-day: the day to restate; anomaly-status: the day whose oldest alert changes (or --id). May be given as --date',
    })
    .option('url', {
      type: 'string',
      default: DEFAULT_EMULATOR_URL,
      describe: 'The running emulator: the URL costsync emulator printed first',
    })
    .option('change-rate', { type: 'number', describe: "restate-day: share of the day's line items whose amount changes (default 0.1)" })
    .option('delete-rate', { type: 'number', describe: "restate-day: share of the day's line items that disappear (default 0.05)" })
    .option('add-rows', { type: 'number', describe: 'restate-day: late line items that arrive for the day (default 0)' })
    .option('from', { type: 'string', describe: 'move-line-item: the usage date the line item has now' })
    .option('to', { type: 'string', describe: 'move-line-item: its corrected usage date' })
    .option('id', {
      type: 'string',
      describe:
        'move-line-item: the line item to move (default: the first of --from); anomaly-status: the alert to change, instead of a date',
    })
    .option('status', { type: 'string', describe: `anomaly-status: the alert's new status: ${ANOMALY_STATUSES.join(', ')}` })
    .option('workspace', { type: 'string', describe: "Change only this workspace's data (default: every workspace's)" })
    .example(usage('restate-day'), 'Change 20% of the amounts of that day, delete 10% of its line items, add 10 late ones')
    .example(usage('move-line-item'), 'Move the first line item of 2025-06-01 to 2025-06-03 (--id picks another)')
    .example(usage('anomaly-status'), 'Resolve the oldest alert detected on 2025-06-01 (--id picks another)');
}

/** A change read from the command line: which endpoint, and the JSON body to send it. */
export interface ChangeRequest {
  change: Change;
  body: Record<string, unknown>;
}

/** Checks the command line of a change and builds its request body; a ConfigError (exit 2) names the problem and the fix. Pure. */
export function changeRequest(args: Record<string, unknown>): ChangeRequest {
  const what = args.what;
  if (typeof what !== 'string' || !(CHANGES as readonly string[]).includes(what)) {
    const meant = typeof what === 'string' ? closest(what, CHANGES) : null;
    throw new ConfigError(
      `Unknown change ${JSON.stringify(what)}${meant === null ? '' : ` (did you mean ${meant}?)`}.`,
      `Name one of ${CHANGES.join(', ')}; see costsync emulator change --help.`,
    );
  }
  const change = what as Change;
  const given = (flag: string) => args[flag] !== undefined;
  const foreign = ALL_FLAGS.filter((flag) => given(flag) && !FLAGS[change].includes(flag));
  if (foreign.length > 0) {
    const takes = FLAGS[change].map((f) => (f === 'date' ? 'a date' : `--${f}`)).join(', ');
    throw new ConfigError(
      `${foreign.map((f) => (f === 'date' ? 'a date' : `--${f}`)).join(' and ')} ${foreign.length > 1 ? 'are' : 'is'} not for ${change}: it takes ${takes}.`,
      `For example: ${usage(change)}`,
    );
  }
  const date = (name: string, value: unknown): string => {
    if (value === undefined) throw new ConfigError(`${change} needs ${name}.`, `For example: ${usage(change)}`);
    return check.date(name === 'the date' ? 'The date' : name, value);
  };
  const workspace = given('workspace') ? { workspace: check.string('--workspace', args.workspace) } : {};
  switch (change) {
    case 'restate-day': {
      const body: Record<string, unknown> = { date: date('the date', args.date), ...workspace };
      if (given('change-rate')) body.change_rate = rateArg('change-rate', args['change-rate']);
      if (given('delete-rate')) body.delete_rate = rateArg('delete-rate', args['delete-rate']);
      if (given('add-rows')) body.add_rows = intArg('add-rows', args['add-rows'], 0, MAX_ADD_ROWS);
      const sum = Number(body.change_rate ?? DEFAULT_RATES.change) + Number(body.delete_rate ?? DEFAULT_RATES.delete);
      if (sum > 1) {
        throw new ConfigError(
          `--change-rate and --delete-rate add up to ${Math.round(sum * 1e6) / 1e6}: a line item either changes or disappears, so their sum is at most 1.`,
          'Lower one of them, for example --change-rate 0.2 --delete-rate 0.1.',
        );
      }
      return { change, body };
    }
    case 'move-line-item': {
      const from = date('--from', args.from);
      const to = date('--to', args.to);
      if (from === to) throw new ConfigError(`--from and --to are both ${from}: a move needs two dates.`, `For example: ${usage(change)}`);
      return { change, body: { from, to, ...(given('id') ? { id: check.string('--id', args.id) } : {}), ...workspace } };
    }
    case 'anomaly-status': {
      const status = args.status;
      if (status === undefined) throw new ConfigError('anomaly-status needs --status.', `For example: ${usage(change)}`);
      if (!ANOMALY_STATUSES.includes(status as AnomalyStatus)) {
        throw new ConfigError(
          `--status must be one of ${ANOMALY_STATUSES.join(', ')}; got ${JSON.stringify(status)}.`,
          'For example --status resolved.',
        );
      }
      if (given('id') === given('date')) {
        throw new ConfigError(
          'anomaly-status needs the alert: a date (its oldest alert changes) or --id, one of them.',
          `For example: ${usage(change)}, or --id anom-20250601-0 instead of the date.`,
        );
      }
      const alert = given('id') ? { id: check.string('--id', args.id) } : { date: date('the date', args.date) };
      return { change, body: { ...alert, status, ...workspace } };
    }
  }
}

/** The one line a change prints: what it changed. */
export function describeChange(result: ChangeResult, workspace: string | undefined): string {
  const where = workspace === undefined ? '' : ` in workspace ${workspace}`;
  switch (result.action) {
    case 'restate-day':
      return `restated ${result.date}${where}: ${result.changed} line items changed, ${result.deleted} deleted, ${result.added} added`;
    case 'move-line-item':
      return `moved ${result.id}${result.amount_usd === null ? '' : ` (${result.amount_usd.toFixed(2)} USD)`} from ${result.from} to ${result.to}${where}`;
    case 'anomaly-status': {
      const alert = `anomaly ${result.id}${result.detected_date === null ? '' : ` (detected ${result.detected_date})`}`;
      return result.previous_status === result.status
        ? `${alert} was already ${result.status}${where}: nothing changed`
        : `set ${alert} from ${result.previous_status ?? 'unknown'} to ${result.status}${where}`;
    }
  }
}

/** The control endpoint of a change at the emulator `--url` names. */
function endpoint(url: unknown, change: Change): URL {
  let base: URL | null = null;
  try {
    base = new URL(String(url));
  } catch {
    base = null;
  }
  if (base === null || (base.protocol !== 'http:' && base.protocol !== 'https:')) {
    throw new ConfigError(
      `--url must be the emulator's URL, such as ${DEFAULT_EMULATOR_URL}; got ${JSON.stringify(url)}.`,
      'Pass the first line costsync emulator printed.',
    );
  }
  return new URL(`${base.pathname.replace(/\/+$/, '')}/_emulator/${change}`, base.origin);
}

/** Sends the change to the running emulator and prints what it changed as one line. */
export async function runEmulatorChange(args: Record<string, unknown>, io: CommandIo): Promise<ExitCode> {
  const { change, body } = changeRequest(args);
  const url = endpoint(args.url, change);
  const start = `Start it with costsync emulator, and pass the URL it prints first as --url (default ${DEFAULT_EMULATOR_URL}).`;
  let status: number;
  let text: string;
  try {
    const res = await undici().request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      headersTimeout: 30_000,
      bodyTimeout: 30_000,
    });
    status = res.statusCode;
    text = await res.body.text();
  } catch (error) {
    const errno = errnoOf(error);
    if (errno !== undefined) {
      throw new CostsyncError('CS_ERR_UNREACHABLE', `Cannot reach the emulator at ${url.origin}: ${UNREACHABLE_CODES[errno]} (${errno}).`, {
        hint: start,
        cause: error,
      });
    }
    throw new CostsyncError('CS_ERR_NETWORK', `The emulator at ${url.origin} did not answer: ${(error as Error).message}.`, {
      cause: error,
    });
  }
  type Envelope = { data?: unknown; error?: { message?: unknown } | null } | null;
  let envelope: Envelope;
  try {
    envelope = JSON.parse(text) as Envelope;
  } catch {
    envelope = null;
  }
  const message = typeof envelope?.error?.message === 'string' ? envelope.error.message : text.slice(0, 200);
  // 400: the emulator refused the change (a date outside its span, an unknown id); its message names the fix.
  if (status === 400) throw new ConfigError(message);
  if (status === 404) {
    throw new ConfigError(`${url.origin} has no ${url.pathname} (404): --url must name a running costsync emulator.`, start);
  }
  if (status !== 200 || envelope === null || typeof envelope.data !== 'object' || envelope.data === null) {
    throw new CostsyncError('CS_ERR_HTTP', `The emulator at ${url.origin} answered ${status} to ${url.pathname}: ${message}`);
  }
  io.stdout(`${describeChange(envelope.data as ChangeResult, body.workspace as string | undefined)}\n`);
  return ExitCode.OK;
}
