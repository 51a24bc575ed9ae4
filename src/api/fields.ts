/**
 * The API tables' fields, declared once as data: each column's name (the API's field of that name), its
 * DuckDB type and what the field is checked for as it arrives (null: no field, a column costsync fills).
 * The wire types (`LineItem`, `RollupRow`, `Anomaly`) are derived from them here, and the storage
 * registry (`storage/tables.ts`) makes the tables' columns from them.
 */

/** What `api/validate.ts` checks an API field for (`checkFields`). */
export type FieldCheck = 'string' | 'string?' | 'number' | 'date' | 'timestamp' | 'dim';

/**
 * Money: exact decimals, so any sum an analyst writes is exact to the cent and prints as money (FOCUS
 * declares its cost columns Decimal). Ten places hold any amount a JSON number carries to a
 * ten-billionth of a dollar, and the FOCUS view's costs were already of this type.
 */
export const MONEY_TYPE = 'DECIMAL(38,10)';

/** The DuckDB types the API tables' columns take. */
export type ApiColumnType = 'VARCHAR' | 'DATE' | 'DOUBLE' | typeof MONEY_TYPE | 'TIMESTAMPTZ';

/** A column as declared: its name, its DuckDB type, the field's check (null: no field). */
export type ColumnDecl = readonly [name: string, type: ApiColumnType, check: FieldCheck | null];

// `as const`, so the wire types below take their fields from these lists.
export const LINE_ITEM_COLUMNS = [
  ['id', 'VARCHAR', 'string'],
  ['usage_date', 'DATE', 'date'],
  ['provider_type', 'VARCHAR', 'string'],
  ['provider_service', 'VARCHAR', 'string?'],
  ['net_amount_usd', MONEY_TYPE, 'number'],
  ['currency_original', 'VARCHAR', 'string?'],
  ['project_id', 'VARCHAR', 'string?'],
  ['user_email', 'VARCHAR', 'string?'],
] as const satisfies readonly ColumnDecl[];

export const ROLLUP_COLUMNS = [
  ['date', 'DATE', 'date'],
  ['group_by', 'VARCHAR', null],
  ['provider_type', 'VARCHAR', 'dim'],
  ['service', 'VARCHAR', 'dim'],
  ['category', 'VARCHAR', 'dim'],
  ['cost_usd', MONEY_TYPE, 'number'],
] as const satisfies readonly ColumnDecl[];

export const ANOMALY_COLUMNS = [
  ['id', 'VARCHAR', 'string'],
  ['provider_type', 'VARCHAR', 'string?'],
  ['service', 'VARCHAR', 'string?'],
  ['detected_date', 'TIMESTAMPTZ', 'timestamp'],
  ['actual_cost', MONEY_TYPE, 'number'],
  ['expected_cost', MONEY_TYPE, 'number'],
  ['deviation_percent', 'DOUBLE', 'number'],
  ['severity', 'VARCHAR', 'string'],
  ['alert_type', 'VARCHAR', 'string?'],
  ['status', 'VARCHAR', 'string'],
] as const satisfies readonly ColumnDecl[];

/** The declarations that come from an API field. */
type Fielded<D extends readonly ColumnDecl[]> = Extract<D[number], readonly [string, string, FieldCheck]>;
/** The names of the API fields a table's columns come from. */
export type FieldNames<D extends readonly ColumnDecl[]> = Fielded<D>[0];

/**
 * A field's value as the checks let it through: a number; a rollup's dimension, null for the groupings
 * without it; any other a string (an optional string arrives as "" or a string: `api/validate.ts`).
 */
type WireValue<C extends FieldCheck> = C extends 'number' ? number : C extends 'dim' ? string | null : string;

/** An API record: the declared fields, typed by their checks, and whatever else the API sent. */
export type WireRecord<D extends readonly ColumnDecl[]> = { [F in Fielded<D> as F[0]]: WireValue<F[2]> } & { [extra: string]: unknown };
