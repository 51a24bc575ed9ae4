/**
 * A FOCUS export as a provider makes one, for pushing: no line-item id column, rows over four weeks of
 * a few services in many category spellings, resources from a pool of 97, tags on about 40% of rows,
 * six-decimal amounts, dates in four formats, one row in 65 repeated as it is (the same charge twice),
 * rows that share another's key with another amount or tags, and a few invalid rows. Seeded: the same
 * seed gives the same export.
 */
import { createRng } from '../../src/emulator/rng.js';

export interface ExportRow {
  ChargePeriodStart: string;
  ChargePeriodEnd: string;
  ServiceName: string;
  ChargeCategory: string;
  ResourceId: string;
  RegionId: string;
  BilledCost: string;
  Tags: Record<string, string> | null;
  /** Not in the file: whether the row fails the checks. */
  invalid: boolean;
}

const SERVICES = ['Compute', 'Object Storage', 'Managed Database', 'Load Balancer', 'Inference'];
const CATEGORIES = ['Usage', 'usage', 'USAGE', 'Fee', 'fee', 'Credit', 'credit', 'Discount', 'Refund', 'Tax'];
const REGIONS = ['eu-west-1', 'us-east-1', 'ap-south-1'];
const TEAMS = ['data@acme.example', 'web@acme.example', 'ml@acme.example'];

/** A date in one of four spellings of the same midnight UTC. */
function spell(date: string, n: number): string {
  return [date, `${date}T00:00:00Z`, `${date} 00:00:00`, `${date}T01:00:00+01:00`][n % 4]!;
}

const nextDay = (date: string) => new Date(Date.parse(`${date}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);

/**
 * `rows` rows (plus one repeat per `repeatEvery`, and `shared` rows that share a key with the row
 * before them but differ in amount or tags), `invalid` of them failing the checks.
 */
export function providerExport(options: { seed: number; rows: number; repeatEvery: number; shared: number; invalid: number }): ExportRow[] {
  const random = createRng(options.seed);
  const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]!;
  const out: ExportRow[] = [];
  const sharedEvery = Math.floor(options.rows / (options.shared + 1));
  for (let i = 0; i < options.rows; i++) {
    const date = `2026-11-${String(1 + Math.floor(random() * 28)).padStart(2, '0')}`;
    const row: ExportRow = {
      ChargePeriodStart: spell(date, i),
      ChargePeriodEnd: spell(nextDay(date), i + 1),
      ServiceName: pick(SERVICES),
      ChargeCategory: pick(CATEGORIES),
      ResourceId: `res-${Math.floor(random() * 97)}`,
      RegionId: pick(REGIONS),
      BilledCost: (random() * 40 - 2).toFixed(6),
      Tags: random() < 0.4 ? { user_email: pick(TEAMS), cost_center: `cc-${Math.floor(random() * 5)}` } : null,
      invalid: false,
    };
    out.push(row);
    if ((i + 1) % options.repeatEvery === 0) out.push({ ...row });
    if ((i + 1) % sharedEvery === 0 && out.length > 1 && i / sharedEvery <= options.shared) {
      // The same key as this row: another amount, or the same amount with other tags.
      out.push(
        i % 2 === 0
          ? { ...row, BilledCost: (Number(row.BilledCost) + 1.25).toFixed(6) }
          : { ...row, Tags: { user_email: row.Tags?.user_email === TEAMS[0] ? TEAMS[1]! : TEAMS[0]!, cost_center: 'cc-9' } },
      );
    }
  }
  const faults: ((r: ExportRow) => ExportRow)[] = [
    (r) => ({ ...r, BilledCost: 'n/a' }),
    (r) => ({ ...r, ServiceName: '' }),
    (r) => ({ ...r, ChargePeriodStart: '11/03/2026' }),
    (r) => ({ ...r, ChargeCategory: 'Rebate' }),
    (r) => ({ ...r, Tags: null, BilledCost: '1e999' }),
  ];
  for (let k = 0; k < options.invalid; k++) {
    const at = Math.floor(random() * out.length);
    out.splice(at, 0, { ...faults[k % faults.length]!(out[at]!), invalid: true });
  }
  return out;
}

const COLUMNS = [
  'ChargePeriodStart',
  'ChargePeriodEnd',
  'ServiceName',
  'ChargeCategory',
  'ResourceId',
  'RegionId',
  'BilledCost',
  'Tags',
] as const;

const csvField = (v: string) => (/[",\n]/.test(v) ? `"${v.replaceAll('"', '""')}"` : v);

/** The export as CSV, in the column order given (the default: as declared). */
export function exportCsv(rows: readonly ExportRow[], columns: readonly (typeof COLUMNS)[number][] = COLUMNS): string {
  const value = (r: ExportRow, c: (typeof COLUMNS)[number]) => (c === 'Tags' ? (r.Tags === null ? '' : JSON.stringify(r.Tags)) : r[c]);
  return [columns.join(','), ...rows.map((r) => columns.map((c) => csvField(value(r, c))).join(','))].join('\n') + '\n';
}

/** The export as JSON Lines: members in reverse order, tags' members too, amounts as numbers where they are. */
export function exportJsonl(rows: readonly ExportRow[]): string {
  return rows
    .map((r) => {
      const object: Record<string, unknown> = {};
      for (const c of [...COLUMNS].reverse()) {
        if (c === 'Tags') {
          if (r.Tags !== null) object.Tags = Object.fromEntries(Object.entries(r.Tags).reverse());
        } else if (c === 'BilledCost') object.BilledCost = Number.isFinite(Number(r.BilledCost)) ? Number(r.BilledCost) : r.BilledCost;
        else object[c] = r[c];
      }
      return JSON.stringify(object);
    })
    .join('\n');
}
