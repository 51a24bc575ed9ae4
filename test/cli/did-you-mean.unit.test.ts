import { describe, expect, it } from 'vitest';
import { asWritten, normalizeArgv, positionalOf, withSuggestion, writtenBare } from '../../src/cli-app.js';
import { closest, editDistance } from '../../src/did-you-mean.js';

describe('did you mean', () => {
  it('counts edits, a swap of neighbours as one', () => {
    expect(editDistance('since', 'since')).toBe(0);
    expect(editDistance('sinse', 'since')).toBe(1);
    expect(editDistance('snice', 'since')).toBe(1);
    expect(editDistance('', 'abc')).toBe(3);
  });

  it('names the closest known flag only when it is close enough to be meant', () => {
    const known = ['since', 'until', 'start-date', 'lookback-days', 'db', 'state-dir'];
    expect(closest('sinse', known)).toBe('since');
    expect(closest('lookbak-days', known)).toBe('lookback-days');
    expect(closest('frobnicate', known)).toBeNull();
    expect(closest('dbx', known)).toBe('db');
  });

  it("rewrites yargs' unknown-argument message for flags, leaving positionals as they are", () => {
    const known = ['since', 'sinceDate', 'lookback-days', 'h'];
    expect(withSuggestion('Unknown argument: sinse', known, ['sync', '--sinse', '2025-01-01'])).toBe(
      'Unknown option --sinse (did you mean --since?).',
    );
    expect(withSuggestion('Unknown arguments: lookbak-days, lookbakDays, zzz', known, ['sync', '--lookbak-days=3', '--zzz'])).toBe(
      'Unknown options --lookbak-days (did you mean --lookback-days?), --zzz.',
    );
    expect(withSuggestion('Unknown argument: foo', known, ['sync', 'foo'])).toBe('Unknown argument: foo');
    expect(withSuggestion('Not enough arguments', known, [])).toBe('Not enough arguments');
  });

  it("rewrites yargs' message for a value outside the choices: the flag, the value given and the values it takes", () => {
    expect(withSuggestion('Invalid values:\n  Argument: format, Given: "csv", Choices: "duckdb", "parquet", "iceberg"', [], ['sync'])).toBe(
      '--format csv is not one of its values: use duckdb, parquet or iceberg.',
    );
    expect(
      withSuggestion(
        'Invalid values:\n  Argument: a, Given: 3, Choices: 1, 2\n  Argument: log-format, Given: "xml", Choices: "json"',
        [],
        [],
      ),
    ).toBe('--a 3 is not one of its values: use 1 or 2.\n--log-format xml is not one of its values: use json.');
  });

  it('names the command a misspelt one is closest to', () => {
    const commands = ['sync', 'status', 'query', 'report'];
    expect(withSuggestion('Unknown argument: synk', [], ['synk'], commands)).toBe('Unknown command synk (did you mean sync?).');
    expect(withSuggestion('Unknown argument: zzzzzz', [], ['zzzzzz'], commands)).toBe('Unknown command zzzzzz.');
    // With flags or words after it, yargs names them all: the command is still what is wrong.
    expect(withSuggestion('Unknown arguments: base-url, baseUrl, synk', ['base-url'], ['synk', '--base-url', 'http://x'], commands)).toBe(
      'Unknown command synk (did you mean sync?).',
    );
    expect(withSuggestion('Unknown arguments: qurey, select 1', [], ['qurey', 'select 1'], [...commands, 'query'])).toBe(
      'Unknown command qurey (did you mean query?).',
    );
  });

  it("finds a flag's value as written (asWritten): the last one given, with a space or =, a camelCase key as its flag", () => {
    expect(asWritten(['sync', '--window-days', '7d'], 'window-days')).toBe('7d');
    expect(asWritten(['sync', '--window-days', '7d'], 'windowDays')).toBe('7d');
    expect(asWritten(['sync', '--window-days=3x', '--window-days', 'abc'], 'window-days')).toBe('abc');
    expect(asWritten(['sync', '--window-days'], 'window-days')).toBeUndefined();
    expect(asWritten(['sync', '--window-days-x', '1'], 'window-days')).toBeUndefined();
  });

  it('joins a long flag to a value that starts with a dash and a digit, and nothing else (normalizeArgv)', () => {
    expect(normalizeArgv(['sync', '--max-runtime', '-5m', '--quiet'])).toEqual(['sync', '--max-runtime=-5m', '--quiet']);
    expect(normalizeArgv(['sync', '--rate-limit', '-.5'])).toEqual(['sync', '--rate-limit=-.5']);
    expect(normalizeArgv(['sync', '--quiet', '--since', '2025-01-01'])).toEqual(['sync', '--quiet', '--since', '2025-01-01']);
    expect(normalizeArgv(['push', 'a.csv', '-h'])).toEqual(['push', 'a.csv', '-h']);
  });

  it('puts a word that starts with a dash and holds whitespace after --, as a value; a flag=value with spaces stays (normalizeArgv)', () => {
    expect(normalizeArgv(['query', '-- spend\nSELECT 1', '--db', 'c.duckdb'])).toEqual([
      'query',
      '--db',
      'c.duckdb',
      '--',
      '-- spend\nSELECT 1',
    ]);
    expect(normalizeArgv(['query', '--db', 'c.duckdb', '--', 'SELECT 1', '-x'])).toEqual([
      'query',
      '--db',
      'c.duckdb',
      '--',
      'SELECT 1',
      '-x',
    ]);
    expect(normalizeArgv(['push', '--map={"columns": {}}', 'a.csv'])).toEqual(['push', '--map={"columns": {}}', 'a.csv']);
  });

  it('finds a flag written with no value, last or before another flag (writtenBare)', () => {
    expect(writtenBare(['sync', '--rate-limit'], 'rate-limit')).toBe(true);
    expect(writtenBare(['sync', '--rate-limit', '--quiet'], 'rateLimit')).toBe(true);
    expect(writtenBare(['sync', '--rate-limit', '5'], 'rate-limit')).toBe(false);
    expect(writtenBare(['sync', '--rate-limit=', '--quiet'], 'rate-limit')).toBe(false);
    expect(writtenBare(['sync', '--quiet'], 'rate-limit')).toBe(false);
  });

  it("names a command's one positional, and whether it takes several (positionalOf)", () => {
    expect(positionalOf('push [files..]')).toEqual({ name: 'files', variadic: true });
    expect(positionalOf('query [sql]')).toEqual({ name: 'sql', variadic: false });
    expect(positionalOf('push-otel <file>')).toEqual({ name: 'file', variadic: false });
    expect(positionalOf('status')).toBeNull();
    expect(positionalOf('change <what> [date]')).toBeNull();
  });
});
