import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Anomaly, LineItem, RollupRow } from '../../src/api/types.js';
import { toAnomalies, toLineItemPage, toRollups } from '../../src/api/validate.js';
import { ALL_FOCUS_COLUMNS, FOCUS_1_2_COLUMNS, FOCUS_VERSIONS } from '../../src/focus/columns.js';
import { REQUIRED_INGEST_COLUMNS, extensionColumns } from '../../src/focus/rules.js';
import { FOCUS_COLUMNS } from '../../src/push/columns.js';
import { defaultKeyColumns } from '../../src/push/identity.js';
import { SQL_DIR } from '../../src/paths.js';
import { loadSql, withWarehouse, type Warehouse } from '../../src/storage/duckdb.js';
import {
  LINE_ITEMS,
  ROLLUPS_DAILY,
  apiColumnsOf,
  tableDef,
  tableNames,
  type ApiColumn,
  type ApiFields,
  type FieldCheck,
} from '../../src/storage/tables.js';
import { withTempDir } from '../support/helpers.js';

/**
 * A table is declared once (storage/tables.ts; the FOCUS columns in focus/columns.ts). The places that
 * still list its columns by hand (the migrations, the sync SQL, the wire types, the focus view and the
 * SQL checking it) are compared with the declaration here, so a column added in one place fails until
 * it is added in all.
 */

type ApiTable = keyof ApiFields;
const API_TABLES: readonly ApiTable[] = ['line_items', 'rollups_daily', 'anomalies'];

/** The fields a wire type names (its index signature, for the fields beyond the spec's, left out). */
type Named<T> = keyof { [K in keyof T as string extends K ? never : number extends K ? never : K]: T[K] };
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
// Compile-time: the wire types are derived from api/fields.ts; `tsc -p tsconfig.test.json` (npm run lint) fails
// when the derivation names other fields than the registry's (an index signature's key taken for a field, say).
const WIRE_TYPES_MATCH: {
  line_items: Same<Named<LineItem>, ApiFields['line_items']>;
  rollups_daily: Same<Named<RollupRow>, ApiFields['rollups_daily']>;
  anomalies: Same<Named<Anomaly>, ApiFields['anomalies']>;
} = { line_items: true, rollups_daily: true, anomalies: true };

/** DuckDB's name for a declared type, as DESCRIBE prints it. */
const DESCRIBED: Readonly<Record<string, string>> = { TIMESTAMPTZ: 'TIMESTAMP WITH TIME ZONE' };

const names = (columns: readonly { name: string }[]): string[] => columns.map((c) => c.name);

/** An API table's columns, as its migrations make them: the declared ones, `extra`, its own, `source`. */
function tableColumns(table: ApiTable): { name: string; type: string }[] {
  return [...apiColumnsOf(table), { name: 'extra', type: 'JSON' }, ...(tableDef(table)!.own ?? []), { name: 'source', type: 'VARCHAR' }];
}

async function describeTable(wh: Warehouse, table: string): Promise<{ name: string; type: string }[]> {
  const rows = await wh.sql<{ column_name: string; column_type: string }>(`DESCRIBE ${table}`);
  return rows.map((r) => ({ name: r.column_name, type: r.column_type }));
}

/** The text of sql/<name>.sql without its comments. */
/**
 * A SQL file's text without comments; a windowed table's sync SQL with the names the registry fills in
 * (`$fields`, `$changed`: tableNames), as it runs.
 */
function sqlText(name: string): string {
  const spec = name.startsWith('sync/line_items') ? LINE_ITEMS : name.startsWith('sync/rollups') ? ROLLUPS_DAILY : null;
  const text = spec === null ? readFileSync(join(SQL_DIR, `${name}.sql`), 'utf8') : loadSql(name, tableNames(spec));
  return text.replace(/--.*$/gm, '');
}

/** A list's items, split at its top-level commas. Pure. */
function items(list: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < list.length; i++) {
    const ch = list[i];
    if (ch === '(' || ch === '[') depth++;
    else if (ch === ')' || ch === ']') depth--;
    else if (ch === ',' && depth === 0) {
      out.push(list.slice(start, i).trim());
      start = i + 1;
    }
  }
  out.push(list.slice(start).trim());
  return out.filter((item) => item !== '');
}

/**
 * Each insert into `table` in `sql`, however it is spelled (any case, `OR REPLACE`/`OR IGNORE`, a quoted
 * name, `BY NAME`): its column list, or null when it names none. Pure.
 */
function insertLists(sql: string, table: string): (string[] | null)[] {
  const insert = new RegExp(
    `\\binsert\\s+(?:or\\s+(?:replace|ignore)\\s+)?into\\s+"?${table}"?(?![\\w"])\\s*(?:by\\s+(?:name|position)\\s*)?(?:\\(([^)]*)\\))?`,
    'gi',
  );
  return [...sql.matchAll(insert)].map((m) => (m[1] === undefined ? null : items(m[1])));
}

/** The first SELECT list of `sql`'s outermost text (up to its FROM), as the plain column names it starts with. */
function selectedColumns(sql: string): string[] {
  const start = sql.indexOf('SELECT ') + 'SELECT '.length;
  let depth = 0;
  let end = start;
  for (; end < sql.length; end++) {
    if (sql[end] === '(') depth++;
    else if (sql[end] === ')') depth--;
    else if (depth === 0 && /^\sFROM\s/.test(sql.slice(end, end + 6))) break;
  }
  const leading: string[] = [];
  for (const item of items(sql.slice(start, end))) {
    const plain = /^(?:\w+\.)?(\w+)$/.exec(item);
    if (plain === null) break;
    leading.push(plain[1]!);
  }
  return leading;
}

/** Row tuples compared in `sql`, `(alias.a, alias.b::VARCHAR, …)`, as each alias's column names. Pure. */
function comparedTuples(sql: string): Record<string, string[]> {
  const tuples: Record<string, string[]> = {};
  for (const m of sql.matchAll(/\(((?:\s*\w+\.\w+(?:::VARCHAR)?\s*,)+\s*\w+\.\w+(?:::VARCHAR)?\s*)\)/g)) {
    const parsed = items(m[1]!).map((item) => /^(\w+)\.(\w+)/.exec(item)!);
    const alias = parsed[0]![1]!;
    expect(
      parsed.every((p) => p[1] === alias),
      `one alias per tuple: ${m[0]}`,
    ).toBe(true);
    tuples[alias] = parsed.map((p) => p[2]!);
  }
  return tuples;
}

/** Columns two sides are joined on: `a.x = b.x` or `a.x IS NOT DISTINCT FROM b.x`. Pure. */
function joinKeys(sql: string, left: string, right: string): string[] {
  return [...sql.matchAll(new RegExp(`${left}\\.(\\w+) (?:=|IS NOT DISTINCT FROM) ${right}\\.(\\w+)`, 'g'))]
    .filter((m) => m[1] === m[2])
    .map((m) => m[1]!);
}

/**
 * A diff's comparison covers every column: the tuples of both sides list the same columns, in the table's
 * order, and with the columns joined on they make the declared columns and `extra`.
 */
function expectDiffCovers(file: string, table: ApiTable, left: string, right: string): void {
  const sql = sqlText(file);
  const tuples = comparedTuples(sql);
  const keys = joinKeys(sql, left, right);
  const all = [...names(apiColumnsOf(table)), 'extra'];
  expect(tuples[left], file).toEqual(tuples[right]);
  expect(tuples[left], file).toEqual(all.filter((c) => !keys.includes(c)));
  expect(
    keys.filter((k) => !all.includes(k)),
    `${file}: joined on undeclared columns`,
  ).toEqual([]);
}

describe('a table declared once (storage/tables.ts)', () => {
  it('the migrations make each API table as declared: its columns by name and type, then extra, its own columns and source', async () => {
    await withTempDir(async (dir) =>
      withWarehouse(join(dir, 'w.duckdb'), async (wh) => {
        for (const table of API_TABLES) {
          const declared = tableColumns(table).map((c) => ({ name: c.name, type: DESCRIBED[c.type] ?? c.type }));
          expect(await describeTable(wh, table), table).toEqual(declared);
        }
        // The anomaly stage, which the Appender fills by position from the declared columns (sync/anomalies.ts).
        const stage = await describeTable(wh, tableDef('anomalies')!.stage!);
        expect(names(stage)).toEqual(['ord', ...names(apiColumnsOf('anomalies')), 'extra']);
      }),
    );
  });

  it("each column comes from the API field of its name, checked as its type says (rollups group_by alone is costsync's)", () => {
    const checks: Record<ApiColumn['type'], readonly FieldCheck[]> = {
      VARCHAR: ['string', 'string?', 'dim'],
      DATE: ['date'],
      DOUBLE: ['number'],
      'DECIMAL(38,10)': ['number'],
      TIMESTAMPTZ: ['timestamp'],
    };
    for (const table of API_TABLES) {
      for (const c of apiColumnsOf(table)) {
        if (c.field === null) {
          expect([table, c.name, c.check]).toEqual(['rollups_daily', 'group_by', null]);
          continue;
        }
        expect(c.field).toBe(c.name);
        expect(checks[c.type], `${table}.${c.name}`).toContain(c.check);
      }
    }
    expect(WIRE_TYPES_MATCH).toEqual({ line_items: true, rollups_daily: true, anomalies: true });
  });

  it('validate.ts checks every declared field, and only those: a record with any one of them wrong is refused, naming it', () => {
    const good: Record<FieldCheck, unknown> = {
      string: 'x',
      'string?': 'x',
      dim: 'x',
      number: 1.5,
      date: '2025-06-01',
      timestamp: '2025-06-01T10:00:00Z',
    };
    const parse = {
      line_items: (data: unknown[]) => toLineItemPage({ data, error: null, meta: {} }, '/p'),
      rollups_daily: (data: unknown[]) => toRollups({ data, error: null, meta: {} }, '/p'),
      anomalies: (data: unknown[]) => toAnomalies({ data, error: null, meta: {} }, '/p'),
    } as const;
    for (const table of API_TABLES) {
      const fields = apiColumnsOf(table).filter((c) => c.field !== null);
      const record = Object.fromEntries(fields.map((c) => [c.field!, good[c.check!]]));
      expect(() => parse[table]([{ ...record, beyond: { any: 'thing' } }]), table).not.toThrow();
      for (const c of fields) {
        expect(() => parse[table]([{ ...record, [c.field!]: { not: 'a value' } }]), `${table}.${c.field}`).toThrow(
          new RegExp(`has an invalid "${c.field}"`),
        );
      }
    }
  });

  it('finds an insert into a table however it is spelled, with its column list or none', () => {
    const planted = [
      'INSERT INTO line_items (id, usage_date) SELECT 1',
      'insert into line_items(id) values (1)',
      'INSERT OR REPLACE INTO "line_items" (id) SELECT 1',
      'Insert Or Ignore Into line_items BY NAME SELECT 1 AS id',
      'INSERT INTO line_items SELECT * FROM x',
      'INSERT INTO line_items_staged (id) SELECT 1',
    ].join(';\n');
    expect(insertLists(planted, 'line_items')).toEqual([['id', 'usage_date'], ['id'], ['id'], null, null]);
  });

  it("the sync SQL lists each table's columns as declared: inserts, the spooled and staged rows, diffs and the upsert", () => {
    const lineItems = names(apiColumnsOf('line_items'));
    const rollups = names(apiColumnsOf('rollups_daily'));
    const anomalies = names(apiColumnsOf('anomalies'));
    const inserts: Record<string, ApiTable> = {
      'sync/line_items_insert_unique': 'line_items',
      'sync/line_items_insert_window': 'line_items',
      'sync/rollups_insert_window': 'rollups_daily',
      'sync/anomalies_upsert': 'anomalies',
    };
    for (const [file, table] of Object.entries(inserts)) {
      expect(insertLists(sqlText(file), table), file).toEqual([names(tableColumns(table))]);
    }
    // Every SQL file that inserts into an API table is one of those.
    const inserting = readdirSync(SQL_DIR, { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.sql'))
      .map((f) => f.replace(/\\/g, '/').replace(/\.sql$/, ''))
      .filter((f) => API_TABLES.some((t) => insertLists(sqlText(f), t).length > 0));
    expect(inserting.sort()).toEqual(Object.keys(inserts).sort());

    expect(selectedColumns(sqlText('sync/line_items_spooled'))).toEqual([...lineItems, 'extra']);
    expect(selectedColumns(sqlText('sync/rollups_staged'))).toEqual([...rollups, 'extra']);
    expect(selectedColumns(sqlText('sync/anomalies_upsert'))).toEqual([...anomalies, 'extra']);

    expectDiffCovers('sync/line_items_diff', 'line_items', 'old', 'staged');
    expectDiffCovers('sync/rollups_diff', 'rollups_daily', 'old', 'staged');
    expectDiffCovers('sync/anomalies_diff', 'anomalies', 'a', 's');
    // A rollup row is one per its diff's key: the staged rows are deduplicated by the same columns.
    const partition = /PARTITION BY ([\w, ]+?)\s+ORDER BY/.exec(sqlText('sync/rollups_staged'))![1]!;
    expect(items(partition)).toEqual(joinKeys(sqlText('sync/rollups_diff'), 'old', 'staged'));

    // The upsert updates every field the API sends (and extra), each from the row it conflicts with.
    const upsert = sqlText('sync/anomalies_upsert');
    const conflict = items(/ON CONFLICT \(([^)]*)\)/.exec(upsert)![1]!);
    const set = items(/DO UPDATE SET([\s\S]*)$/.exec(upsert)![1]!).map((a) => /^(\w+) = excluded\.(\w+)$/.exec(a)!);
    for (const m of set) expect(m[1]).toBe(m[2]);
    const updated = set.map((m) => m[1]!);
    expect(updated.filter((c) => anomalies.includes(c) || c === 'extra')).toEqual(
      [...anomalies, 'extra'].filter((c) => !conflict.includes(c)),
    );
  });
});

describe('the FOCUS columns declared once (focus/columns.ts)', () => {
  const focusNames = names(FOCUS_1_2_COLUMNS);

  it('the focus view has every FOCUS 1.2 column by name and type, in order, then only x_ extras', async () => {
    await withTempDir(async (dir) =>
      withWarehouse(join(dir, 'w.duckdb'), async (wh) => {
        const described = await describeTable(wh, 'focus');
        const spec = described.filter((c) => !c.name.startsWith('x_'));
        expect(spec).toEqual(FOCUS_1_2_COLUMNS.map((c) => ({ name: c.name, type: c.type })));
        expect(names(described)).toEqual([...focusNames, ...names(described.filter((c) => c.name.startsWith('x_')))]);
      }),
    );
  });

  it('each version view (focus_1_2, focus_1_3, focus_1_4) has its declared columns by name and type, in order, then only x_ extras', async () => {
    await withTempDir(async (dir) =>
      withWarehouse(join(dir, 'w.duckdb'), async (wh) => {
        for (const { view, columns } of FOCUS_VERSIONS) {
          const described = await describeTable(wh, view);
          expect(
            described.filter((c) => !c.name.startsWith('x_')),
            view,
          ).toEqual(columns.map((c) => ({ name: c.name, type: c.type })));
          expect(names(described), view).toEqual([...names(columns), ...names(described.filter((c) => c.name.startsWith('x_')))]);
        }
      }),
    );
  });

  it("push matches a file's columns to the declared ones; the columns named elsewhere are declared ones", () => {
    expect([...FOCUS_COLUMNS.keys()]).toEqual(names(ALL_FOCUS_COLUMNS));
    expect(names(ALL_FOCUS_COLUMNS).slice(0, focusNames.length)).toEqual(focusNames);
    expect(REQUIRED_INGEST_COLUMNS.filter((c) => !focusNames.includes(c))).toEqual([]);
    const model = extensionColumns('acme').model;
    expect(defaultKeyColumns('acme').filter((c) => c !== model && !focusNames.includes(c))).toEqual([]);

    // verify --focus: the checked columns are declared, and each is read as the column its name says.
    const verify = sqlText('verify/focus');
    const [namesList, valuesList] = [...verify.matchAll(/unnest\(\[([^\]]*)\]\)/g)].map((m) => items(m[1]!));
    const checked = namesList!.map((n) => /^'(\w+)'$/.exec(n)![1]!);
    expect(valuesList!.map((v) => v.replace(/::VARCHAR$/, ''))).toEqual(checked);
    const required = [.../required\(col\) AS \(VALUES([\s\S]*?)\),\s*violations/.exec(verify)![1]!.matchAll(/'(\w+)'/g)].map((m) => m[1]!);
    const allowed = [.../allowed\(col, value\) AS \(VALUES([\s\S]*?)\n\),/.exec(verify)![1]!.matchAll(/\('(\w+)', '/g)].map((m) => m[1]!);
    for (const c of [...checked, ...required, ...allowed]) expect(focusNames, `verify/focus.sql names ${c}`).toContain(c);
    expect(required.length).toBeGreaterThan(10);
    expect(new Set(allowed)).toEqual(new Set(['ChargeCategory', 'ChargeClass', 'ChargeFrequency', 'PricingCategory', 'ServiceCategory']));
  });
});
