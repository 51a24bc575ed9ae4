/**
 * What identifies a pushed row, and what an ingest answer says about each row of a request, as data
 * and pure functions (no I/O): the rule a connection's ledger records, the default key columns, how a
 * row is classed against the ledger before it is sent, and how an answer settles each row after.
 */
import { createHash } from 'node:crypto';
import type { IngestResult } from '../api/types.js';
import { ConfigError } from '../errors.js';
import { extensionColumns } from '../focus/rules.js';
import { canonicalColumn } from './columns.js';

/**
 * How rows without an id of their own are identified. `key`: a hash of the key columns' values (as
 * read, instants in UTC), so the same charge has the same id whatever the file's column order, format
 * or number formatting, and a corrected amount is a correction of it. `content`: a hash of the whole
 * row as sent and of how many identical rows came before it, the rule of costsync before the key
 * existed, kept by connections whose ledger holds pushes made under it.
 */
export type IdentityRule = { kind: 'key'; columns: string[] } | { kind: 'content' };

/**
 * The columns that say what was charged, to whom and when, and not how much: FOCUS's charge period,
 * category and class; the service, SKU, price, resource, region, zone, commitment and reservation; the
 * accounts and the provider, publisher and invoice issuer; and the vendor's model column.
 */
export function defaultKeyColumns(vendor: string): string[] {
  return [
    'ChargePeriodStart',
    'ChargePeriodEnd',
    'ChargeCategory',
    'ChargeClass',
    'ServiceName',
    'SkuId',
    'SkuPriceId',
    'ResourceId',
    'RegionId',
    'AvailabilityZone',
    'CommitmentDiscountId',
    'CapacityReservationId',
    'PricingCategory',
    'BillingAccountId',
    'SubAccountId',
    'ProviderName',
    'PublisherName',
    'InvoiceIssuerName',
    extensionColumns(vendor).model,
  ];
}

/** `--key-columns`: FOCUS and `x_` column names separated by commas, any letter case; `default` for the default key (alone or in the list). Pure. */
export function parseKeyColumns(value: string, vendor: string): string[] {
  const text = value.trim();
  if (text.toLowerCase() === 'default') return defaultKeyColumns(vendor);
  const bad = (problem: string): never => {
    throw new ConfigError(
      `--key-columns: ${problem}`,
      `Name the columns that tell one charge from another, separated by commas (for example ChargePeriodStart,ServiceName,SubAccountId), or "default" for: ${defaultKeyColumns(vendor).join(',')}.`,
    );
  };
  // `default` stands for the default key in a list too: `default,x_team` adds a column to it.
  const names = text.split(',').flatMap((n) => (n.trim().toLowerCase() === 'default' ? defaultKeyColumns(vendor) : [n.trim()]));
  if (names.some((n) => n === '')) bad(`${JSON.stringify(value)} has an empty name`);
  const columns: string[] = [];
  for (const name of names) {
    const canonical = canonicalColumn(name, vendor);
    if (canonical === null) bad(`"${name}" is not a FOCUS 1.2 column nor an x_ extension column`);
    if (canonical!.name === extensionColumns(vendor).lineItemId)
      bad(`"${name}" is the line-item id: a row that has one is identified by it already`);
    if (columns.includes(canonical!.name)) bad(`"${canonical!.name}" is named twice`);
    columns.push(canonical!.name);
  }
  return columns;
}

/** The rule as the ledger records it: stable JSON (key columns in the order given). Pure. */
export function ruleText(rule: IdentityRule): string {
  return rule.kind === 'key' ? JSON.stringify({ kind: 'key', columns: rule.columns }) : JSON.stringify({ kind: 'content' });
}

/** The rule from its recorded text. Pure. */
export function parseRule(text: string): IdentityRule {
  const value = JSON.parse(text) as { kind?: unknown; columns?: unknown };
  if (value.kind === 'key' && Array.isArray(value.columns)) return { kind: 'key', columns: value.columns.map(String) };
  return { kind: 'content' };
}

/** The rule in a sentence's words; the default key by that name, as its list is long. Pure. */
export function describeRule(rule: IdentityRule, vendor: string): string {
  if (rule.kind === 'content') return "each row's whole content (costsync's first rule)";
  return rule.columns.join(',') === defaultKeyColumns(vendor).join(',')
    ? 'the default key columns (--key-columns default)'
    : `the key columns ${rule.columns.join(', ')}`;
}

/**
 * The ledger's key for one connection's rows: the same server, workspace, connection and vendor word
 * (which names the id column) share the rows' identities. Pure.
 */
export function ledgerKey(parts: { baseUrl: string; source: string; connectionId: string; vendor: string }): string {
  return createHash('sha256')
    .update(JSON.stringify([parts.baseUrl, parts.source, parts.connectionId, parts.vendor]))
    .digest('hex');
}

/**
 * The id of the k-th charge (1-based) of rows of one file that share a key: the key's own id for the
 * first, so a lone row keeps the id it always had, and a hash of that id and k for the others. Pure.
 */
export function chargeId(keyId: string, k: number): string {
  if (k === 1) return keyId;
  return `costsync-${createHash('md5').update(`${keyId}#${k}`).digest('hex')}`;
}

/**
 * A row of a file that shares its key with others of the file: its place, its order within the group
 * (its values other than numbers as one canonical text, then its numbers by column name) and the hash
 * of its values.
 */
export interface GroupRow {
  row: number;
  order: readonly (string | number | null)[];
  values: string;
}

/** Orders the rows of a group by their content: text before numbers, missing values first; identical rows by place. Pure. */
export function compareGroupRows(a: GroupRow, b: GroupRow): number {
  for (let i = 0; i < Math.max(a.order.length, b.order.length); i++) {
    const x = a.order[i] ?? null;
    const y = b.order[i] ?? null;
    if (x === y) continue;
    if (x === null) return -1;
    if (y === null) return 1;
    if (typeof x !== typeof y) return typeof x === 'string' ? -1 : 1;
    return x < y ? -1 : 1;
  }
  return a.values < b.values ? -1 : a.values > b.values ? 1 : a.row - b.row;
}

/**
 * Ids for the rows of one file that share a key: the k-th by content takes `chargeId(keyId, k)`. The
 * file alone decides (not a ledger), so the same rows in any order, format or column order get the same
 * ids from any ledger, identical rows are as many charges, and what a re-export changes within the
 * group corrects the group's ids. Ordered by what is not a number first (tags, descriptions), so a
 * changed amount moves a row only among rows alike but for their numbers. Pure.
 */
export function assignGroupIds(keyId: string, rows: readonly GroupRow[]): Map<number, string> {
  return new Map([...rows].sort(compareGroupRows).map((r, i) => [r.row, chargeId(keyId, i + 1)]));
}

/** What the ledger says the server holds of one row id, by the hash of the values sent. */
export interface LedgerEntry {
  /** The values the server holds as far as the ledger knows (delivered), or null. */
  held: string | null;
  /** The values of a request whose answer never came (cut by a stop), or null. */
  pending: string | null;
  /** Values of a correction the server did not apply that the user settled (`--settle-corrections`), or null. */
  settled?: string | null;
}

/**
 * `new`: the ledger knows of no values the server may hold for this id. `resend`: the same values went
 * in a request whose answer never came (or `--force` sends a delivered row again): a skip means the
 * server holds them. `correction`: the server holds, or may hold, other values for this id (delivered
 * before, or sent in a request whose answer never came): a skip means it kept those.
 */
export type RowClass = 'new' | 'resend' | 'correction';

/** A row before it is sent: already delivered or settled (not sent), or its class. Pure. */
export function classifyRow(values: string, entry: LedgerEntry | undefined, force: boolean): 'delivered' | 'settled' | RowClass {
  if (entry === undefined) return 'new';
  if (entry.settled === values && entry.held !== values) return 'settled';
  if (entry.held === values) return force ? 'resend' : 'delivered';
  if (entry.pending === values) return 'resend';
  return entry.held === null && entry.pending === null ? 'new' : 'correction';
}

/** The row (0-based, in the request) an `errors` element names, in either shape servers use; null when it names none. Pure. */
export function errorRow(error: unknown, rows: number): number | null {
  let at: unknown = null;
  if (typeof error === 'object' && error !== null) at = (error as { row?: unknown }).row;
  else if (typeof error === 'string') at = /^\s*row\s+(\d+)\b/i.exec(error)?.[1];
  const n = typeof at === 'string' && /^\d+$/.test(at) ? Number(at) : at;
  return typeof n === 'number' && Number.isInteger(n) && n >= 0 && n < rows ? n : null;
}

/** An `errors` element as one line of text, without the request's row number (the file's is given instead). Pure. */
export function errorText(error: unknown): string {
  if (typeof error === 'string') return error.replace(/^\s*row\s+\d+\s*[,:]\s*/i, '');
  if (typeof error === 'object' && error !== null) {
    const e = error as { column?: unknown; message?: unknown };
    if (typeof e.message === 'string') return typeof e.column === 'string' && e.column !== '' ? `${e.column}: ${e.message}` : e.message;
  }
  return JSON.stringify(error);
}

/** What became of one row of an answered request. */
export type RowOutcome =
  | { delivered: true; how: 'stored' | 'corrected' | 'held' }
  | { delivered: false; why: 'refused' | 'not-applied' | 'unconfirmed'; reason: string };

/**
 * Each row's outcome from the answer to a request of `rows` rows of one class. The server names
 * (at best) the rows it refuses; of the rest, those it did not store are counted, not named: they are
 * attributed only where the class says what a skip means, else every unnamed row of the request is
 * unconfirmed. A request retried after an attempt whose answer was lost counts as a resend. Pure.
 */
export function settleBatch(cls: RowClass, rows: number, result: IngestResult, retried: boolean): RowOutcome[] {
  const named = new Map<number, string[]>();
  let unnamedErrors = 0;
  for (const e of result.errors) {
    const at = errorRow(e, rows);
    if (at === null) unnamedErrors += 1;
    else named.set(at, [...(named.get(at) ?? []), errorText(e)]);
  }
  const refused = (i: number): RowOutcome => ({
    delivered: false,
    why: 'refused',
    reason: `refused by the server: ${named.get(i)!.join('; ')}`,
  });
  if (!result.accepted) {
    return Array.from({ length: rows }, (_, i) =>
      named.has(i)
        ? refused(i)
        : { delivered: false, why: 'refused', reason: `the server did not accept the request (batch ${result.batch_id}) that carried it` },
    );
  }
  const rest = rows - named.size;
  const created = result.cost_line_item_count;
  const unconfirmed = (reason: string): RowOutcome => ({ delivered: false, why: 'unconfirmed', reason });
  let other: RowOutcome;
  if (result.row_count !== rows || created < 0 || created > rest) {
    other = unconfirmed(
      `the server's answer does not account for the rows sent (${rows} sent; row_count ${result.row_count}, ${created} stored, ${result.skipped} skipped)`,
    );
  } else {
    const notStored = rest - created;
    const as = retried && cls === 'new' ? 'resend' : cls;
    if (notStored === 0) other = { delivered: true, how: cls === 'correction' ? 'corrected' : 'stored' };
    else if (as === 'resend' && unnamedErrors === 0) other = { delivered: true, how: 'held' };
    else if (notStored === rest && as === 'correction')
      other = {
        delivered: false,
        why: 'not-applied',
        reason: 'a correction the server did not apply: it keeps the values it stored first for this id',
      };
    else if (notStored === rest && unnamedErrors === 0)
      other = unconfirmed(
        'skipped by the server without a reason: it holds this id from a push this ledger does not record, or refused the row',
      );
    else other = unconfirmed(`the server skipped ${notStored} of these ${rest} rows without naming them`);
  }
  return Array.from({ length: rows }, (_, i) => (named.has(i) ? refused(i) : other));
}
