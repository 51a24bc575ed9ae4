/**
 * The FOCUS 1.2 columns, declared once: each one's name, its data type as DuckDB's (from the
 * specification's column pages: Decimal, Date/Time in UTC, String, Key-Value Format) and the kind of value
 * `push` checks and sends it as. The `focus` view (sql/views/060_focus.sql) has these columns in this
 * order, then `x_` extras; `push` matches a file's columns to them (`push/columns.ts`).
 * test/architecture/table-declared-once.unit.test.ts fails when the view or the SQL naming them disagrees.
 */

/** FOCUS's data types as DuckDB types. */
const DECIMAL = 'DECIMAL(38,10)';
const DATETIME = 'TIMESTAMP WITH TIME ZONE';

export type FocusType = typeof DECIMAL | typeof DATETIME | 'VARCHAR' | 'JSON';

/** How `push` reads, checks and sends a value: each kind's SQL is `sql/push/kind_<kind>.sql`. */
export type ValueKind = 'string' | 'number' | 'count' | 'time' | 'date' | 'date_end' | 'currency' | 'category' | 'tags';

export interface FocusColumn {
  name: string;
  type: FocusType;
  /** How `push` checks and sends a value of it. */
  push: ValueKind;
}

/** A column from its declaration row. */
const declared = ([name, type, push]: readonly [string, FocusType, ValueKind]): FocusColumn => ({ name, type, push });

/** Every FOCUS 1.2 column, by its canonical name, in the specification's (alphabetical) order. */
export const FOCUS_1_2_COLUMNS: readonly FocusColumn[] = (
  [
    ['AvailabilityZone', 'VARCHAR', 'string'],
    ['BilledCost', DECIMAL, 'number'],
    ['BillingAccountId', 'VARCHAR', 'string'],
    ['BillingAccountName', 'VARCHAR', 'string'],
    ['BillingAccountType', 'VARCHAR', 'string'],
    ['BillingCurrency', 'VARCHAR', 'currency'],
    // The document names the billing period only among the "other FOCUS columns": sent as date-times.
    ['BillingPeriodEnd', DATETIME, 'time'],
    ['BillingPeriodStart', DATETIME, 'time'],
    ['CapacityReservationId', 'VARCHAR', 'string'],
    ['CapacityReservationStatus', 'VARCHAR', 'string'],
    ['ChargeCategory', 'VARCHAR', 'category'],
    ['ChargeClass', 'VARCHAR', 'string'],
    ['ChargeDescription', 'VARCHAR', 'string'],
    ['ChargeFrequency', 'VARCHAR', 'string'],
    // The document: ChargePeriodStart is "a calendar date string"; the end is sent in the same form.
    ['ChargePeriodEnd', DATETIME, 'date_end'],
    ['ChargePeriodStart', DATETIME, 'date'],
    ['CommitmentDiscountCategory', 'VARCHAR', 'string'],
    ['CommitmentDiscountId', 'VARCHAR', 'string'],
    ['CommitmentDiscountName', 'VARCHAR', 'string'],
    ['CommitmentDiscountQuantity', DECIMAL, 'number'],
    ['CommitmentDiscountStatus', 'VARCHAR', 'string'],
    ['CommitmentDiscountType', 'VARCHAR', 'string'],
    ['CommitmentDiscountUnit', 'VARCHAR', 'string'],
    ['ConsumedQuantity', DECIMAL, 'number'],
    ['ConsumedUnit', 'VARCHAR', 'string'],
    ['ContractedCost', DECIMAL, 'number'],
    ['ContractedUnitPrice', DECIMAL, 'number'],
    ['EffectiveCost', DECIMAL, 'number'],
    ['InvoiceId', 'VARCHAR', 'string'],
    ['InvoiceIssuerName', 'VARCHAR', 'string'],
    ['ListCost', DECIMAL, 'number'],
    ['ListUnitPrice', DECIMAL, 'number'],
    ['PricingCategory', 'VARCHAR', 'string'],
    ['PricingCurrency', 'VARCHAR', 'currency'],
    ['PricingCurrencyContractedUnitPrice', DECIMAL, 'number'],
    ['PricingCurrencyEffectiveCost', DECIMAL, 'number'],
    ['PricingCurrencyListUnitPrice', DECIMAL, 'number'],
    ['PricingQuantity', DECIMAL, 'number'],
    ['PricingUnit', 'VARCHAR', 'string'],
    ['ProviderName', 'VARCHAR', 'string'],
    ['PublisherName', 'VARCHAR', 'string'],
    ['RegionId', 'VARCHAR', 'string'],
    ['RegionName', 'VARCHAR', 'string'],
    ['ResourceId', 'VARCHAR', 'string'],
    ['ResourceName', 'VARCHAR', 'string'],
    ['ResourceType', 'VARCHAR', 'string'],
    ['ServiceCategory', 'VARCHAR', 'string'],
    ['ServiceName', 'VARCHAR', 'string'],
    ['ServiceSubcategory', 'VARCHAR', 'string'],
    ['SkuId', 'VARCHAR', 'string'],
    ['SkuMeter', 'VARCHAR', 'string'],
    // Key-Value Format in the view; a file's value is sent as the text it holds.
    ['SkuPriceDetails', 'JSON', 'string'],
    ['SkuPriceId', 'VARCHAR', 'string'],
    ['SubAccountId', 'VARCHAR', 'string'],
    ['SubAccountName', 'VARCHAR', 'string'],
    ['SubAccountType', 'VARCHAR', 'string'],
    ['Tags', 'JSON', 'tags'],
  ] as const
).map(declared);

/**
 * The columns FOCUS 1.3 adds to the Cost and Usage dataset (its migration guide: split cost allocation,
 * contract tracking, entity identification). ProviderName and PublisherName stay, deprecated.
 */
const ADDED_IN_1_3: readonly FocusColumn[] = (
  [
    ['AllocatedMethodDetails', 'JSON', 'string'],
    ['AllocatedMethodId', 'VARCHAR', 'string'],
    ['AllocatedResourceId', 'VARCHAR', 'string'],
    ['AllocatedResourceName', 'VARCHAR', 'string'],
    ['AllocatedTags', 'JSON', 'tags'],
    ['ContractApplied', 'JSON', 'string'],
    ['HostProviderName', 'VARCHAR', 'string'],
    ['ServiceProviderName', 'VARCHAR', 'string'],
  ] as const
).map(declared);

/** FOCUS 1.4 removes the columns 1.3 deprecated and adds two. */
const REMOVED_IN_1_4: readonly string[] = ['ProviderName', 'PublisherName'];
const ADDED_IN_1_4: readonly FocusColumn[] = (
  [
    ['CommitmentProgramEligibilityDetails', 'JSON', 'string'],
    ['InvoiceDetailId', 'VARCHAR', 'string'],
  ] as const
).map(declared);

/** A version's columns: the 1.2 columns in their order, then each version's additions (the views add them so). */
export const FOCUS_1_3_COLUMNS: readonly FocusColumn[] = [...FOCUS_1_2_COLUMNS, ...ADDED_IN_1_3];
export const FOCUS_1_4_COLUMNS: readonly FocusColumn[] = [
  ...FOCUS_1_3_COLUMNS.filter((c) => !REMOVED_IN_1_4.includes(c.name)),
  ...ADDED_IN_1_4,
];

/**
 * Each FOCUS version the warehouse speaks, and the view that speaks it: a query written for a version
 * runs unchanged against its view. `focus` is FOCUS 1.2 (as it was from the start), and `focus_1_2` the same.
 */
export const FOCUS_VERSIONS: readonly { version: '1.2' | '1.3' | '1.4'; view: string; columns: readonly FocusColumn[] }[] = [
  { version: '1.2', view: 'focus_1_2', columns: FOCUS_1_2_COLUMNS },
  { version: '1.3', view: 'focus_1_3', columns: FOCUS_1_3_COLUMNS },
  { version: '1.4', view: 'focus_1_4', columns: FOCUS_1_4_COLUMNS },
];

/** Every column of any FOCUS version costsync speaks, each once: 1.2's, then 1.3's and 1.4's additions (what `push` sends by name). */
export const ALL_FOCUS_COLUMNS: readonly FocusColumn[] = [
  ...new Map(FOCUS_VERSIONS.flatMap((v) => v.columns).map((c) => [c.name, c] as const)).values(),
];
