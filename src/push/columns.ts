/**
 * What `push` sends, declared as data: the FOCUS columns (1.2 to 1.4) with the kind of value each holds
 * (`focus/columns.ts`), the extension columns, and pure functions that match a file's columns to them
 * and pick the profile version. No I/O.
 */
import { INGEST_VERSIONS, type IngestVersion } from '../api/types.js';
import { ConfigError } from '../errors.js';
import { ALL_FOCUS_COLUMNS, type ValueKind } from '../focus/columns.js';
import { REQUIRED_INGEST_COLUMNS, extensionColumns } from '../focus/rules.js';

/** How a column's value is checked and sent (declared with the FOCUS columns, whose kinds they are). */
export type { ValueKind };

/**
 * Every FOCUS column costsync knows, by its canonical name (declared in `focus/columns.ts`): 1.2's, and the
 * ones 1.3 and 1.4 add (`ServiceProviderName`, …), sent as "other FOCUS columns" the server maps or preserves.
 */
export const FOCUS_COLUMNS: ReadonlyMap<string, ValueKind> = new Map(ALL_FOCUS_COLUMNS.map((c) => [c.name, c.push]));

/** A FOCUS (or extension) column to send, and where its value comes from. */
export interface TargetColumn {
  name: string;
  kind: ValueKind;
  /** A source column of the file, or a constant from the mapping file. */
  from: { column: string } | { constant: string | number | boolean | null };
}

export interface ColumnPlan {
  targets: TargetColumn[];
  /** File columns that match nothing and are not sent. */
  ignored: string[];
  /** The line-item id column when the file (or mapping) provides it. */
  ownIdColumn: string | null;
}

/** The mapping file: `{"columns": {"source": "FocusName"}, "constants": {"FocusName": value}}`. */
export interface ColumnMapping {
  columns: Record<string, string>;
  constants: Record<string, string | number | boolean | null>;
}

/** Kinds of the extension columns for a vendor word, by name. */
export function extensionKinds(vendor: string): Map<string, ValueKind> {
  const ext = extensionColumns(vendor);
  return new Map<string, ValueKind>([
    [ext.model, 'string'],
    [ext.tokensInput, 'count'],
    [ext.tokensOutput, 'count'],
    [ext.tokensCacheRead, 'count'],
    [ext.tokensCacheCreation, 'count'],
    [ext.lineItemId, 'string'],
  ]);
}

/**
 * The canonical column a name stands for, ignoring letter case: a FOCUS column, a vendor extension
 * column, or any other `x_` custom column (sent as text). Null for anything else. Pure.
 */
export function canonicalColumn(name: string, vendor: string): { name: string; kind: ValueKind } | null {
  const lower = name.trim().toLowerCase();
  for (const [known, kind] of [...FOCUS_COLUMNS, ...extensionKinds(vendor)]) {
    if (known.toLowerCase() === lower) return { name: known, kind };
  }
  if (/^x_[a-z0-9_]+$/i.test(name.trim())) return { name: name.trim(), kind: 'string' };
  return null;
}

/** An example of `--map`, for help and hints. */
export const MAP_EXAMPLE = '{"columns": {"cost_usd": "BilledCost"}, "constants": {"ChargeCategory": "Usage"}}';

/** Checks a parsed mapping (inline JSON or a file's, named by `where`); throws ConfigError naming the bad entry. Pure. */
export function parseMapping(value: unknown, where: string): ColumnMapping {
  const bad = (problem: string): never => {
    throw new ConfigError(
      `--map ${where}: ${problem}`,
      'A mapping is {"columns": {"source column": "FOCUS column", …}, "constants": {"FOCUS column": value, …}}.',
    );
  };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) bad('must be a JSON object');
  const obj = value as Record<string, unknown>;
  for (const key of Object.keys(obj)) if (key !== 'columns' && key !== 'constants') bad(`unknown member "${key}"`);
  const isRecord = (v: unknown) => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (obj.columns !== undefined && !isRecord(obj.columns)) bad('"columns" must be an object of source column to FOCUS column');
  if (obj.constants !== undefined && !isRecord(obj.constants)) bad('"constants" must be an object of FOCUS column to value');
  const columns = (obj.columns ?? {}) as Record<string, unknown>;
  const constants = (obj.constants ?? {}) as Record<string, unknown>;
  for (const [src, target] of Object.entries(columns))
    if (typeof target !== 'string') bad(`"columns"."${src}" must name a FOCUS column as a string`);
  for (const [target, v] of Object.entries(constants)) {
    if (v !== null && !['string', 'number', 'boolean'].includes(typeof v))
      bad(`"constants"."${target}" must be a string, number, boolean or null`);
  }
  return { columns: columns as Record<string, string>, constants: constants as ColumnMapping['constants'] };
}

/**
 * Matches a file's columns to the columns to send: mapping entries first, then FOCUS names in any
 * letter case. Throws ConfigError for a mapping that names a missing source column or a column
 * that is not FOCUS, for two sources of one column, and for a missing required column. Pure.
 */
export function planColumns(file: string, sourceColumns: readonly string[], mapping: ColumnMapping, vendor: string): ColumnPlan {
  const targets = new Map<string, TargetColumn>();
  const used = new Set<string>();
  const resolveTarget = (name: string, where: string) => {
    const canonical = canonicalColumn(name, vendor);
    if (!canonical) {
      throw new ConfigError(
        `${where} names "${name}", which is not a FOCUS 1.2 column nor an x_ extension column.`,
        'Use a FOCUS column name, such as BilledCost or ChargePeriodStart.',
      );
    }
    return canonical;
  };
  const add = (target: TargetColumn, where: string) => {
    const existing = targets.get(target.name);
    if (existing) {
      const describe = (t: TargetColumn) => ('column' in t.from ? `column "${t.from.column}"` : 'a constant');
      throw new ConfigError(
        `${file}: ${target.name} would come from both ${describe(existing)} and ${describe(target)} (${where}).`,
        'Map only one source to each FOCUS column (--map), or rename one column.',
      );
    }
    targets.set(target.name, target);
  };
  for (const [src, targetName] of Object.entries(mapping.columns)) {
    if (!sourceColumns.includes(src)) {
      throw new ConfigError(
        `${file} has no column "${src}", which --map maps to ${targetName}.`,
        `Its columns are: ${sourceColumns.join(', ')}.`,
      );
    }
    const canonical = resolveTarget(targetName, `--map "columns"."${src}"`);
    add({ ...canonical, from: { column: src } }, 'mapping');
    used.add(src);
  }
  for (const [targetName, value] of Object.entries(mapping.constants)) {
    const canonical = resolveTarget(targetName, `--map "constants"`);
    add({ ...canonical, from: { constant: value } }, 'mapping');
  }
  const mappedTargets = new Set(targets.keys());
  const ignored: string[] = [];
  for (const src of sourceColumns) {
    if (used.has(src)) continue;
    const canonical = canonicalColumn(src, vendor);
    if (!canonical) {
      ignored.push(src);
      continue;
    }
    // A mapped target wins over a same-named file column, which is then not sent.
    if (targets.has(canonical.name) && mappedTargets.has(canonical.name)) {
      ignored.push(src);
      continue;
    }
    add({ ...canonical, from: { column: src } }, 'by name');
  }
  const missing = REQUIRED_INGEST_COLUMNS.filter((c) => !targets.has(c));
  if (missing.length > 0) {
    throw new ConfigError(
      `${file} lacks the required FOCUS column(s) ${missing.join(', ')}.`,
      `Rename the file's columns, or map them with --map (for example {"columns": {"cost": "BilledCost"}}). Its columns are: ${sourceColumns.join(', ')}.`,
    );
  }
  const idName = extensionColumns(vendor).lineItemId;
  return { targets: [...targets.values()], ignored, ownIdColumn: targets.has(idName) ? idName : null };
}

/**
 * The lowest profile version that covers `columns`: 1.2 for the line-item id column, 1.1 for the
 * model and token columns, else 1. Pure.
 */
export function lowestVersion(columns: Iterable<string>, vendor: string): IngestVersion {
  const ext = extensionColumns(vendor);
  let version: IngestVersion = '1';
  for (const c of columns) {
    if (c === ext.lineItemId) return '1.2';
    if (([ext.model, ext.tokensInput, ext.tokensOutput, ext.tokensCacheRead, ext.tokensCacheCreation] as string[]).includes(c))
      version = '1.1';
  }
  return version;
}

/** Parses `--profile-version` (`flag`: the deprecated `--version` when that is what was given); null when not given. */
export function versionArg(value: unknown, flag = '--profile-version'): IngestVersion | null {
  if (value === undefined || value === null) return null;
  const text = String(value);
  if (!(INGEST_VERSIONS as readonly string[]).includes(text)) {
    throw new ConfigError(
      `${flag} must be one of ${INGEST_VERSIONS.join(', ')}; got ${JSON.stringify(value)}.`,
      'Leave it out to send the lowest version that covers the columns used.',
    );
  }
  return text as IngestVersion;
}
