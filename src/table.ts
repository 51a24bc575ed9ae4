/** Plain text for people: tables with right-aligned numbers, money columns as `$1,234.50`. */
import { formatUsd, isMoneyColumn } from './money.js';

export function formatTable(rows: readonly Record<string, unknown>[], columns?: readonly string[]): string {
  if (rows.length === 0) return '(no rows)';
  const cols = columns ?? Object.keys(rows[0]!);
  const numeric = cols.map((c) => rows.every((r) => typeof r[c] === 'number' || r[c] === null || r[c] === undefined));
  const money = cols.map((c, i) => numeric[i]! && isMoneyColumn(c));
  const text = (v: unknown, i: number) =>
    v === null || v === undefined ? '' : money[i] ? formatUsd(v as number) : typeof v === 'object' ? JSON.stringify(v) : String(v);
  const cells = rows.map((r) => cols.map((c, i) => text(r[c], i)));
  const widths = cols.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i]!.length)));
  const fmt = (row: string[]) =>
    row
      .map((v, i) => (numeric[i] ? v.padStart(widths[i]!) : v.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [fmt([...cols]), fmt(widths.map((w) => '-'.repeat(w))), ...cells.map(fmt)].join('\n');
}
