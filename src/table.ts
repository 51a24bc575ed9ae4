/** Plain-text tables for people: right-aligned numbers, left-aligned text. */
export function formatTable(rows: readonly Record<string, unknown>[], columns?: readonly string[]): string {
  if (rows.length === 0) return '(no rows)';
  const cols = columns ?? Object.keys(rows[0]!);
  const text = (v: unknown) => (v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v));
  const cells = rows.map((r) => cols.map((c) => text(r[c])));
  const numeric = cols.map((_, i) => rows.every((r) => typeof r[cols[i]!] === 'number' || r[cols[i]!] === null));
  const widths = cols.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i]!.length)));
  const fmt = (row: string[]) => row.map((v, i) => (numeric[i] ? v.padStart(widths[i]!) : v.padEnd(widths[i]!))).join('  ').trimEnd();
  return [fmt([...cols]), fmt(widths.map((w) => '-'.repeat(w))), ...cells.map(fmt)].join('\n');
}
