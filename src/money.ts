/** Money and percentages as costsync prints them, one way everywhere a person reads them. */

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
 * A percentage as costsync prints it everywhere a person reads one (the report's changes and
 * deviations, notifications): one decimal always, thousands grouped, `+` before a rise, `–` for
 * none, so one value never reads as both +132% and +132.0%. Pure.
 */
export function formatPercent(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '–';
  const text = Math.abs(value).toLocaleString('en-US', { minimumFractionDigits: 1, maximumFractionDigits: 1 });
  const sign = text === '0.0' ? '' : value < 0 ? '-' : '+';
  return `${sign}${text}%`;
}

/**
 * Whether a column holds money, by its name: `*_usd`, costs and amounts (`actual_cost`,
 * `net_amount_usd`, FOCUS's `BilledCost`), never counts, percentages or unit prices. Pure.
 */
export function isMoneyColumn(name: string): boolean {
  if (/count|percent|pct|ratio|rows|quantity|price/i.test(name)) return false;
  return /(^|_)(usd|cost|amount|spend)(_|$)/i.test(name) || /[a-z](Cost|Amount)$/.test(name);
}
