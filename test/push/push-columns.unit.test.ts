import { describe, expect, it } from 'vitest';
import { jsonArg } from '../../src/commands/args.js';
import { ConfigError, ExitCode } from '../../src/errors.js';
import { MAP_EXAMPLE, canonicalColumn, lowestVersion, parseMapping, planColumns, versionArg } from '../../src/push/columns.js';
import { OFF_MIDNIGHT_EXAMPLES, contentId, lineOf, offMidnightLine, splitProblems, withId } from '../../src/push/push.js';

const none = { columns: {}, constants: {} };
const REQUIRED = ['ChargePeriodStart', 'BilledCost', 'ServiceName', 'ChargeCategory'];

describe('push column planning', () => {
  it('matches FOCUS and extension columns in any letter case, keeps x_ custom columns and ignores the rest', () => {
    expect(canonicalColumn('billedcost', 'service')).toEqual({ name: 'BilledCost', kind: 'number' });
    expect(canonicalColumn('CHARGEPERIODSTART', 'service')).toEqual({ name: 'ChargePeriodStart', kind: 'date' });
    expect(canonicalColumn('X_ACME_TOKENS_INPUT', 'acme')).toEqual({ name: 'x_acme_tokens_input', kind: 'count' });
    expect(canonicalColumn('x_team_code', 'acme')).toEqual({ name: 'x_team_code', kind: 'string' });
    expect(canonicalColumn('Id', 'service')).toBeNull();
    const plan = planColumns('f.csv', [...REQUIRED.map((c) => c.toLowerCase()), 'Id', 'x_service_line_item_id'], none, 'service');
    expect(plan.targets.map((t) => t.name)).toEqual([...REQUIRED, 'x_service_line_item_id']);
    expect(plan.ignored).toEqual(['Id']);
    expect(plan.ownIdColumn).toBe('x_service_line_item_id');
  });

  it('applies a mapping: source columns, constants, and a mapped column winning over a same-named one', () => {
    const mapping = parseMapping(
      {
        columns: { cost: 'BilledCost', day: 'chargeperiodstart' },
        constants: { ServiceName: 'Internal platform', ChargeCategory: 'usage' },
      },
      'm.json',
    );
    const plan = planColumns('f.csv', ['cost', 'day', 'BilledCost', 'note'], mapping, 'service');
    expect(plan.targets).toEqual([
      { name: 'BilledCost', kind: 'number', from: { column: 'cost' } },
      { name: 'ChargePeriodStart', kind: 'date', from: { column: 'day' } },
      { name: 'ServiceName', kind: 'string', from: { constant: 'Internal platform' } },
      { name: 'ChargeCategory', kind: 'category', from: { constant: 'usage' } },
    ]);
    expect(plan.ignored).toEqual(['BilledCost', 'note']);
  });

  it('names the missing required columns, a mapped column the file lacks, a non-FOCUS target and two sources of one column', () => {
    const attempt = (fn: () => unknown) => {
      try {
        fn();
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        return (error as Error).message;
      }
      throw new Error('no error');
    };
    expect(attempt(() => planColumns('f.csv', ['BilledCost', 'ServiceName'], none, 'service'))).toBe(
      'f.csv lacks the required FOCUS column(s) ChargePeriodStart, ChargeCategory.',
    );
    expect(attempt(() => planColumns('f.csv', REQUIRED, { columns: { amount: 'BilledCost' }, constants: {} }, 'service'))).toMatch(
      /f\.csv has no column "amount"/,
    );
    expect(attempt(() => planColumns('f.csv', [...REQUIRED, 'c'], { columns: { c: 'Cost' }, constants: {} }, 'service'))).toMatch(
      /"Cost", which is not a FOCUS 1.2 column/,
    );
    expect(attempt(() => planColumns('f.csv', [...REQUIRED, 'billedCOST'], none, 'service'))).toMatch(
      /BilledCost would come from both column "BilledCost" and column "billedCOST"/,
    );
    expect(attempt(() => parseMapping({ columns: { a: 1 } }, 'm.json'))).toMatch(/"columns"."a" must name a FOCUS column/);
    expect(attempt(() => parseMapping({ colums: {} }, 'm.json'))).toMatch(/unknown member "colums"/);
    expect(attempt(() => versionArg('2'))).toMatch(/--profile-version must be one of 1, 1.1, 1.2/);
    expect(attempt(() => versionArg('1.0', '--version'))).toMatch(/--version must be one of 1, 1.1, 1.2; got "1.0"/);
  });

  it('picks the lowest profile version that covers the columns used', () => {
    expect(lowestVersion(REQUIRED, 'service')).toBe('1');
    expect(lowestVersion([...REQUIRED, 'x_service_model'], 'service')).toBe('1.1');
    expect(lowestVersion([...REQUIRED, 'x_service_tokens_input', 'x_service_line_item_id'], 'service')).toBe('1.2');
    expect(lowestVersion([...REQUIRED, 'x_service_model'], 'acme')).toBe('1');
    expect(versionArg(undefined)).toBeNull();
    expect(versionArg(1.1)).toBe('1.1');
  });
});

describe('push --map: inline JSON or a file', () => {
  /** A file reader over an in-memory directory: no file system. */
  const files =
    (contents: Record<string, string>) =>
    (path: string): string => {
      if (path in contents) return contents[path]!;
      throw Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' });
    };
  const failure = (fn: () => unknown): ConfigError => {
    try {
      fn();
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).exitCode).toBe(ExitCode.USAGE);
      return error as ConfigError;
    }
    throw new Error('no error');
  };

  it('takes a value starting with { (after blanks) as the JSON itself, and anything else as a file path', () => {
    const read = files({ 'm.json': '{"columns": {"day": "ChargePeriodStart"}}' });
    const inline = jsonArg('map', '  {"columns": {"cost_usd": "BilledCost"}}', MAP_EXAMPLE, read);
    expect(inline).toEqual({ value: { columns: { cost_usd: 'BilledCost' } }, where: '(inline JSON)' });
    expect(parseMapping(inline.value, inline.where)).toEqual({ columns: { cost_usd: 'BilledCost' }, constants: {} });
    expect(jsonArg('map', 'm.json', MAP_EXAMPLE, read)).toEqual({ value: { columns: { day: 'ChargePeriodStart' } }, where: 'm.json' });
    expect(failure(() => parseMapping([], '(inline JSON)')).message).toBe('--map (inline JSON): must be a JSON object');
  });

  it('refuses bad JSON, inline or in a file, naming where it stops and the fix', () => {
    const read = files({ 'm.json': '{\n  "columns": {"cost": "BilledCost",}\n}' });
    const file = failure(() => jsonArg('map', 'm.json', MAP_EXAMPLE, read));
    expect(file.message).toMatch(/^--map m\.json: the file is not valid JSON: .* at line 2, column 36\.$/);
    expect(file.hint).toMatch(/Fix the JSON in the file .*no trailing comma/);
    const inline = failure(() => jsonArg('map', '{"columns": {"cost": BilledCost}}', MAP_EXAMPLE, read));
    // V8 gives a position for some mistakes only; where it quotes the text instead, that is kept.
    expect(inline.message).toMatch(/^--map: the inline JSON is not valid: Unexpected token 'B'.*BilledCost/);
    expect(inline.hint).toContain(`in single quotes for the shell: --map '${MAP_EXAMPLE}'; or put it in a file`);
    // What bash passes for --map {"columns": {"cost": "BilledCost"}} left unquoted.
    const unquoted = failure(() => jsonArg('map', '{columns: {cost: BilledCost}}', MAP_EXAMPLE, read));
    expect(unquoted.hint).toMatch(/lost their double quotes.*single quotes/);
    // Cut short: Node names no position, so the end is named.
    const cut = failure(() => jsonArg('map', '{"columns": ', MAP_EXAMPLE, read));
    expect(cut.message).toMatch(/at its end \(line 1\): a closing brace, bracket or quote is missing\.$/);
  });

  it('names a path it cannot read, and says inline JSON is taken too', () => {
    const error = failure(() => jsonArg('map', 'mapping.jsn', MAP_EXAMPLE, files({})));
    expect(error.message).toBe('--map mapping.jsn: cannot read the file (ENOENT).');
    expect(error.hint).toContain(`or the JSON itself starting with {, quoted for the shell: --map '${MAP_EXAMPLE}'`);
  });
});

describe('push row helpers', () => {
  it('gives identical rows different, stable ids by occurrence', () => {
    const row = '{"BilledCost":1}';
    // Pinned: ledgers in the field hold these ids (a SHA-256 of the row, and of `#n` after it for the n-th copy).
    expect(contentId(row, 1)).toBe('costsync-0bcee25a6f8d0898597b6dc7f5c0f997');
    expect(contentId(row, 2)).toBe('costsync-60a7b466709c3374f29e403336dde7fe');
    expect(contentId('{"BilledCost":2}', 1)).not.toBe(contentId(row, 1));
    expect(contentId(row, 1)).toMatch(/^costsync-[0-9a-f]{32}$/);
  });

  it('adds the id member to a row object, splits problems, and maps rows to lines', () => {
    expect(JSON.parse(withId('{"a":1}', 'x_service_line_item_id', 'k"1'))).toEqual({ a: 1, x_service_line_item_id: 'k"1' });
    expect(JSON.parse(withId('{}', 'x_id', 'k'))).toEqual({ x_id: 'k' });
    expect(splitProblems('BilledCost: not a finite number: abc\u001fTags: not a flat JSON object: [1]')).toEqual([
      { column: 'BilledCost', reason: 'not a finite number: abc' },
      { column: 'Tags', reason: 'not a flat JSON object: [1]' },
    ]);
    expect([lineOf('csv', 1), lineOf('jsonl', 1), lineOf('parquet', 1)]).toEqual([2, 1, null]);
  });
});

describe('push: the warning about charge period times of day', () => {
  it('is one line: how many rows, what is sent instead, the first few rows, and how many more', () => {
    const examples = ['a.csv:2 ChargePeriodStart "2025-06-01 10:00"', 'a.csv:3 ChargePeriodEnd "2025-06-02T01:00:00Z"'];
    const line = offMidnightLine(7, examples);
    expect(line).not.toContain('\n');
    expect(line).toMatch(/^7 row\(s\) have a ChargePeriodStart or ChargePeriodEnd with a time of day other than midnight UTC/);
    expect(line).toContain('ChargePeriodStart is sent as its UTC date, ChargePeriodEnd as the date of the next midnight');
    expect(line).toMatch(/: a\.csv:2 ChargePeriodStart "2025-06-01 10:00"; a\.csv:3 ChargePeriodEnd "2025-06-02T01:00:00Z", and 5 more$/);
    expect(offMidnightLine(2, examples)).toMatch(/"2025-06-02T01:00:00Z"$/);
    expect(OFF_MIDNIGHT_EXAMPLES).toBeLessThanOrEqual(10);
  });
});

describe('push ledger keys', () => {
  it('keys a push by its source, and still finds the key costsync 0.1 gave it (by the API key)', async () => {
    const { createHash } = await import('node:crypto');
    const { keyFingerprint } = await import('../../src/fingerprint.js');
    const { pushKeys } = await import('../../src/push/push.js');
    const parts = {
      base: 'https://api.example.com',
      connection: 'c1',
      fileSha: 'abc',
      targets: ['BilledCost'],
      vendor: 'service',
      version: '1.2',
      format: null,
      skipInvalid: false,
    };
    const [current, legacy] = pushKeys(parts, { source: 'acme-eu', apiKey: 'k1' });
    // costsync 0.1: sha256 of JSON {base, key, connection, fileSha, targets, vendor, version, format, skipInvalid}.
    const v01 = createHash('sha256')
      .update(
        JSON.stringify({
          base: parts.base,
          key: keyFingerprint('k1'),
          connection: 'c1',
          fileSha: 'abc',
          targets: ['BilledCost'],
          vendor: 'service',
          version: '1.2',
          format: null,
          skipInvalid: false,
        }),
      )
      .digest('hex');
    expect(legacy).toBe(v01);
    expect(pushKeys(parts, { source: 'acme-eu', apiKey: 'k2' })[0]).toBe(current);
    expect(pushKeys(parts, { source: 'acme-us', apiKey: 'k1' })[0]).not.toBe(current);
  });
});
