/** Plain text for people: tables with right-aligned numbers, and money printed one way everywhere. */

/**
 * Dollars as costsync prints them everywhere a person reads them (demo, `query` tables, summaries,
 * notifications, the report): two decimals, thousands grouped; `$` in front unless `bare`. Pure.
 */
export function formatUsd(value: number, options: { bare?: boolean; sign?: boolean } = {}): string {
  const text = Math.abs(value).toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  const sign = value < 0 && text !== '0.00' ? '-' : options.sign && value > 0 ? '+' : '';
  return `${sign}${options.bare ? '' : '$'}${text}`;
}

/**
 * Whether a column holds money, by its name: `*_usd`, costs and amounts (`actual_cost`,
 * `net_amount_usd`, FOCUS's `BilledCost`), never counts, percentages or unit prices. Pure.
 */
export function isMoneyColumn(name: string): boolean {
  if (/count|percent|pct|ratio|rows|quantity|price/i.test(name)) return false;
  return /(^|_)(usd|cost|amount|spend)(_|$)/i.test(name) || /[a-z](Cost|Amount)$/.test(name);
}

export function formatTable(rows: readonly Record<string, unknown>[], columns?: readonly string[]): string {
  if (rows.length === 0) return '(no rows)';
  const cols = columns ?? Object.keys(rows[0]!);
  const numeric = cols.map((c) => rows.every((r) => typeof r[c] === 'number' || r[c] === null || r[c] === undefined));
  const money = cols.map((c, i) => numeric[i]! && isMoneyColumn(c));
  const text = (v: unknown, i: number) => (v === null || v === undefined ? ''
    : money[i] ? formatUsd(v as number)
      : typeof v === 'object' ? JSON.stringify(v) : String(v));
  const cells = rows.map((r) => cols.map((c, i) => text(r[c], i)));
  const widths = cols.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i]!.length)));
  const fmt = (row: string[]) => row.map((v, i) => (numeric[i] ? v.padStart(widths[i]!) : v.padEnd(widths[i]!))).join('  ').trimEnd();
  return [fmt([...cols]), fmt(widths.map((w) => '-'.repeat(w))), ...cells.map(fmt)].join('\n');
}
