/** Checks for command-line values, each naming the flag and the fix (exit code 2). */
import { readFileSync } from 'node:fs';
import { isCalendarDate } from '../dates.js';
import { ConfigError } from '../errors.js';

export function intArg(flag: string, value: unknown, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new ConfigError(`--${flag} must be a whole number from ${min} to ${max}; got ${JSON.stringify(value)}.`, `Pass --${flag} ${min}.`);
  }
  return n;
}

export function rateArg(flag: string, value: unknown): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0 || n > 1) {
    throw new ConfigError(`--${flag} must be a fraction from 0 to 1; got ${JSON.stringify(value)}.`, `For 5% pass --${flag} 0.05.`);
  }
  return n;
}

export function dateArg(flag: string, value: unknown): string {
  if (typeof value !== 'string' || !isCalendarDate(value)) {
    throw new ConfigError(`--${flag} must be a real calendar date as YYYY-MM-DD; got ${JSON.stringify(value)}.`, `For example --${flag} 2025-01-31.`);
  }
  return value;
}

export function choiceArg<T extends string>(flag: string, value: unknown, choices: readonly T[]): T {
  if (!choices.includes(value as T)) {
    throw new ConfigError(`--${flag} must be one of ${choices.join(', ')}; got ${JSON.stringify(value)}.`, `Pass --${flag} ${choices[0]}.`);
  }
  return value as T;
}

/** Reads and parses a JSON file, naming the file in any error. */
export function readJsonFile(flag: string, path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (cause) {
    throw new ConfigError(`--${flag} ${path}: cannot read the file (${(cause as NodeJS.ErrnoException).code ?? 'error'}).`, 'Check the path and its permissions.', cause);
  }
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw new ConfigError(`--${flag} ${path}: not valid JSON (${(cause as Error).message}).`, 'Fix the JSON syntax in the file.', cause);
  }
}
