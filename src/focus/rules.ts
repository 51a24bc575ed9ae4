/**
 * FOCUS ingest rules from the spec, as small pure functions `push` checks rows with before sending
 * them. The emulator writes its own from the document (`src/emulator/ingest.ts`), so a mistake here
 * is not repeated by the server the tests push to.
 */
import { CHARGE_CATEGORIES, CHARGE_CATEGORY_ALIASES, type ChargeCategory } from '../api/types.js';
import { isCalendarDate } from '../dates.js';

export const REQUIRED_INGEST_COLUMNS = ['ChargePeriodStart', 'BilledCost', 'ServiceName', 'ChargeCategory'] as const;

/** Canonical ChargeCategory for a value in any letter case, aliases included; null when unknown. */
export function canonicalChargeCategory(value: string): ChargeCategory | null {
  const lower = value.trim().toLowerCase();
  const canonical = CHARGE_CATEGORIES.find((c) => c.toLowerCase() === lower);
  return canonical ?? CHARGE_CATEGORY_ALIASES[lower] ?? null;
}

const TIMESTAMP_RE = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?$/;

/**
 * Epoch ms of a FOCUS date: a calendar date (`YYYY-MM-DD`, midnight UTC) or an ISO 8601 time. A
 * time without a zone is read as UTC, as billing exports write them. Null when unparsable.
 */
export function parseFocusTime(value: string): number | null {
  const text = value.trim();
  if (isCalendarDate(text)) return Date.parse(`${text}T00:00:00Z`);
  const m = TIMESTAMP_RE.exec(text);
  if (!m || !isCalendarDate(m[1]!)) return null;
  if (Number(m[2]) > 23 || Number(m[3]) > 59 || Number(m[4] ?? 0) > 59) return null;
  const zone = m[5] ?? 'Z';
  const iso = `${m[1]}T${m[2]}:${m[3]}:${m[4] ?? '00'}${text.match(/\.\d+/)?.[0] ?? ''}${zone.length === 5 ? `${zone.slice(0, 3)}:${zone.slice(3)}` : zone}`;
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? null : ms;
}

/** The extension column names for a vendor word (`x_<vendor>_…`). */
export function extensionColumns(vendor: string) {
  return {
    model: `x_${vendor}_model`,
    tokensInput: `x_${vendor}_tokens_input`,
    tokensOutput: `x_${vendor}_tokens_output`,
    tokensCacheRead: `x_${vendor}_tokens_cache_read`,
    tokensCacheCreation: `x_${vendor}_tokens_cache_creation`,
    lineItemId: `x_${vendor}_line_item_id`,
  } as const;
}

/** True for a three-letter currency code. */
export function isCurrencyCode(value: string): boolean {
  return /^[A-Za-z]{3}$/.test(value);
}
