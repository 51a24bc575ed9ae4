/** Checks for command-line-only values (the emulator's, the report's, push's), the same checks as the settings' (settings.ts). */
import { readFileSync } from 'node:fs';
import { ConfigError } from '../errors.js';
import { check } from '../settings.js';

export function intArg(flag: string, value: unknown, min: number, max = Number.MAX_SAFE_INTEGER): number {
  return check.int(`--${flag}`, value, min, max, min);
}

export function rateArg(flag: string, value: unknown): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0 || n > 1) {
    // yargs hands a flag of type number that is not one over as NaN (JSON.stringify would say "null").
    const got = typeof value === 'number' && Number.isNaN(value) ? 'something that is not a number' : JSON.stringify(value);
    throw new ConfigError(`--${flag} must be a fraction from 0 to 1; got ${got}.`, `For 5% pass --${flag} 0.05.`);
  }
  return n;
}

export function dateArg(flag: string, value: unknown): string {
  return check.date(`--${flag}`, value);
}

export function choiceArg<T extends string>(flag: string, value: unknown, choices: readonly T[]): T {
  return check.choice(`--${flag}`, value, choices);
}

/** Reads and parses a JSON file, naming the file in any error. */
export function readJsonFile(flag: string, path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (cause) {
    throw new ConfigError(
      `--${flag} ${path}: cannot read the file (${(cause as NodeJS.ErrnoException).code ?? 'error'}).`,
      'Check the path and its permissions.',
      cause,
    );
  }
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw new ConfigError(`--${flag} ${path}: not valid JSON (${(cause as Error).message}).`, 'Fix the JSON syntax in the file.', cause);
  }
}
