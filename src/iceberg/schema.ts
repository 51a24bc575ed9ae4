/**
 * Iceberg schemas from the warehouse's tables: DuckDB types to Iceberg types, field ids kept stable
 * across schema changes (a column keeps its id; a new column gets the next one, older files read it as
 * null), and column bounds in Iceberg's single-value binary form for the manifests. All pure.
 */
import { InternalError } from '../errors.js';

export type IcebergType = 'string' | 'date' | 'timestamptz' | 'double' | 'long' | 'int' | 'boolean' | `decimal(${number}, ${number})`;

export interface IcebergField {
  id: number;
  name: string;
  required: boolean;
  type: IcebergType;
}

export interface IcebergSchema {
  type: 'struct';
  'schema-id': number;
  fields: IcebergField[];
}

/** A warehouse column as DuckDB's DESCRIBE gives it. */
export interface WarehouseColumn {
  name: string;
  type: string;
}

/**
 * The Iceberg type of a DuckDB column type. JSON is text to every engine (it is written as VARCHAR);
 * a type costsync's tables do not use is refused, so a new column type is a conscious change here.
 */
export function icebergType(duckdbType: string): IcebergType {
  const t = duckdbType.toUpperCase();
  if (t === 'VARCHAR' || t === 'JSON') return 'string';
  if (t === 'DATE') return 'date';
  if (t === 'TIMESTAMP WITH TIME ZONE' || t === 'TIMESTAMPTZ') return 'timestamptz';
  if (t === 'DOUBLE') return 'double';
  if (t === 'BIGINT') return 'long';
  if (t === 'INTEGER') return 'int';
  if (t === 'BOOLEAN') return 'boolean';
  const decimal = /^DECIMAL\((\d+),\s*(\d+)\)$/.exec(t);
  if (decimal) return `decimal(${Number(decimal[1])}, ${Number(decimal[2])})`;
  throw new InternalError(`No Iceberg type for the DuckDB type ${duckdbType}: a lake table has a column of a type costsync does not map.`);
}

/**
 * The schema for `columns`: the same as `current` when nothing changed (so no new schema id), else a
 * new schema that keeps each known column's id and gives new columns ids after `lastColumnId`.
 */
export function evolveSchema(
  columns: readonly WarehouseColumn[],
  current: IcebergSchema | null,
  lastColumnId: number,
): { schema: IcebergSchema; lastColumnId: number; changed: boolean } {
  const known = new Map(current?.fields.map((f) => [f.name, f]) ?? []);
  let last = lastColumnId;
  const fields = columns.map((c): IcebergField => {
    const type = icebergType(c.type);
    const old = known.get(c.name);
    // A column whose type changed is a new column to Iceberg (older files do not hold its values).
    if (old && old.type === type) return old;
    last += 1;
    return { id: last, name: c.name, required: false, type };
  });
  const same = current !== null && fields.length === current.fields.length && fields.every((f, i) => f === current.fields[i]);
  if (same) return { schema: current, lastColumnId, changed: false };
  return {
    schema: { type: 'struct', 'schema-id': current === null ? 0 : current['schema-id'] + 1, fields },
    lastColumnId: last,
    changed: true,
  };
}

/** Months since 1970-01 of a `YYYY-MM-DD` date (Iceberg's `month` transform). */
export function monthOrdinal(date: string): number {
  return (Number(date.slice(0, 4)) - 1970) * 12 + Number(date.slice(5, 7)) - 1;
}

/** The first day of a month ordinal, and of the month after it (`YYYY-MM-DD`). */
export function monthRange(ordinal: number): { start: string; next: string } {
  const iso = (n: number) => `${String(1970 + Math.floor(n / 12)).padStart(4, '0')}-${String((n % 12) + 1).padStart(2, '0')}-01`;
  return { start: iso(ordinal), next: iso(ordinal + 1) };
}

/** `YYYY-MM` of a month ordinal (for file paths). */
export function monthLabel(ordinal: number): string {
  return monthRange(ordinal).start.slice(0, 7);
}

const DAY_MS = 86_400_000;

function int32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32LE(n);
  return b;
}

function int64(n: bigint): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigInt64LE(n);
  return b;
}

/** A decimal's unscaled value as minimal big-endian two's complement bytes. */
function decimalBytes(text: string, scale: number): Buffer {
  const negative = text.startsWith('-');
  const [whole = '0', fraction = ''] = text.replace(/^[-+]/, '').split('.');
  let unscaled = BigInt(whole + fraction.padEnd(scale, '0').slice(0, scale));
  if (negative) unscaled = -unscaled;
  let hex = (unscaled < 0n ? (1n << 128n) + unscaled : unscaled).toString(16);
  if (hex.length % 2) hex = `0${hex}`;
  let bytes = Buffer.from(hex, 'hex');
  if (unscaled < 0n) {
    // Drop leading 0xff bytes while the sign stays set.
    let i = 0;
    while (i < bytes.length - 1 && bytes[i] === 0xff && (bytes[i + 1]! & 0x80) !== 0) i++;
    bytes = bytes.subarray(i);
  } else if ((bytes[0]! & 0x80) !== 0) {
    bytes = Buffer.concat([Buffer.from([0]), bytes]);
  }
  return bytes;
}

/** The UTC date a `date` or `timestamptz` bound (Iceberg's single-value binary form) falls on, or null for another type. Pure. */
export function boundDate(type: IcebergType, bytes: Buffer): string | null {
  const ms =
    type === 'date' && bytes.length === 4
      ? bytes.readInt32LE() * DAY_MS
      : type === 'timestamptz' && bytes.length === 8
        ? Number(bytes.readBigInt64LE() / 1000n)
        : NaN;
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? null : date.toISOString().slice(0, 10);
}

/**
 * A column statistic (as DuckDB's `RETURN_STATS` prints it) in Iceberg's single-value binary form,
 * or null when it cannot serve as a bound. Strings get none: DuckDB may shorten a string statistic,
 * and a shortened upper bound would let an engine skip a file it needs; the dates, times and
 * amounts engines prune by all get bounds.
 */
export function boundBytes(type: IcebergType, value: string): Buffer | null {
  if (type === 'date') return int32(Math.round(Date.parse(`${value}T00:00:00Z`) / DAY_MS));
  if (type === 'timestamptz') {
    const ms = Date.parse(value.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00'));
    if (!Number.isFinite(ms)) return null;
    const micros = /\.(\d+)/.exec(value)?.[1]?.padEnd(6, '0').slice(3, 6) ?? '000';
    return int64(BigInt(ms) * 1000n + BigInt(micros));
  }
  if (type === 'double') {
    const n = Number(value);
    if (Number.isNaN(n)) return null;
    const b = Buffer.alloc(8);
    b.writeDoubleLE(n);
    return b;
  }
  if (type === 'long') return int64(BigInt(value));
  if (type === 'int') return int32(Number(value));
  if (type === 'boolean') return Buffer.from([value === 'true' ? 1 : 0]);
  const decimal = /^decimal\(\d+, (\d+)\)$/.exec(type);
  if (decimal) return decimalBytes(value, Number(decimal[1]));
  return null;
}
