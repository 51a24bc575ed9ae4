/** Checks for command-line-only values (the emulator's, the report's, push's), the same checks as the settings' (settings.ts). */
import { readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { ConfigError } from '../errors.js';
import { check, decimal } from '../settings.js';

/** A whole number from `min` to `max`; `example` is what the error suggests (the option's default, say). */
export function intArg(flag: string, value: unknown, min: number, max = Number.MAX_SAFE_INTEGER, example = min): number {
  return check.int(`--${flag}`, value, min, max, example);
}

export function rateArg(flag: string, value: unknown): number {
  const n = decimal(value);
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

/** Where JSON.parse stopped, as " at line L, column C" (from the position its message gives), or "". Pure. */
export function jsonErrorPlace(text: string, message: string): string {
  const m = /at position (\d+)/.exec(message);
  // Node names no position when the text ends first: that is the place.
  if (!m)
    return /Unexpected end/i.test(message)
      ? ` at its end (line ${text.split('\n').length}): a closing brace, bracket or quote is missing`
      : '';
  const before = text.slice(0, Number(m[1]));
  const line = before.split('\n').length;
  return ` at line ${line}, column ${before.length - before.lastIndexOf('\n')}`;
}

/**
 * A flag that takes JSON inline or from a file (`--map`): a value that starts with `{` once trimmed is
 * the JSON itself (no file name starts with one in practice), anything else a file's path. Returns the
 * parsed value and how to name it in messages. `read` is the file reader (tests pass their own).
 */
export function jsonArg(
  flag: string,
  value: string,
  example: string,
  read: (path: string) => string = (path) => readFileSync(path, 'utf8'),
): { value: unknown; where: string } {
  const inline = value.trim().startsWith('{');
  let text = value;
  if (!inline) {
    try {
      text = read(value);
    } catch (cause) {
      throw new ConfigError(
        `--${flag} ${value}: cannot read the file (${(cause as NodeJS.ErrnoException).code ?? 'error'}).`,
        `--${flag} takes the path of a JSON file, or the JSON itself starting with {, quoted for the shell: --${flag} '${example}'.`,
        cause,
      );
    }
  }
  try {
    return { value: JSON.parse(text), where: inline ? '(inline JSON)' : value };
  } catch (cause) {
    const reason = `${(cause as Error).message.replace(/ in JSON at position \d+.*$/s, '')}${jsonErrorPlace(text, (cause as Error).message)}`;
    // An unquoted value loses its double quotes to the shell: {"columns": …} arrives as {columns: …}.
    const shellAte = inline && /^\s*\{\s*[A-Za-z_]/.test(text);
    throw new ConfigError(
      inline ? `--${flag}: the inline JSON is not valid: ${reason}.` : `--${flag} ${value}: the file is not valid JSON: ${reason}.`,
      inline
        ? `${shellAte ? 'Its names lost their double quotes, as the shell strips them from an unquoted value: put the whole value in single quotes' : 'Write it as JSON (names and strings in double quotes, no trailing comma), in single quotes for the shell'}: --${flag} '${example}'; or put it in a file and pass the file's path.`
        : `Fix the JSON in the file (names and strings in double quotes, no trailing comma), for example ${example}.`,
      cause,
    );
  }
}

/**
 * The file a command writes (`--out`): `fallback` when not given; refused when given empty or naming a
 * directory (the write would fail at its last step, a temporary file written beside it for nothing).
 */
export function outFileArg(flag: string, value: unknown, fallback: string): string {
  if (value === undefined) return fallback;
  const path = String(value).trim();
  if (path === '') throw new ConfigError(`--${flag} needs a file name.`, `For example --${flag} ${fallback}.`);
  let isDir = false;
  try {
    isDir = statSync(path).isDirectory();
  } catch {
    // Not there yet: the command makes it.
  }
  if (isDir)
    throw new ConfigError(
      `--${flag} ${path} is a directory; it names the file to write.`,
      `Name a file in it, such as --${flag} ${join(path, basename(fallback))}.`,
    );
  return path;
}

/** A directory that must exist already (costsync writes into it and creates none on a typo). */
export function existingDir(flag: string, value: string): string {
  let isDir = false;
  try {
    isDir = statSync(value).isDirectory();
  } catch {
    // Missing: refused below.
  }
  if (!isDir)
    throw new ConfigError(`--${flag} ${value}: not a directory.`, `Create it first (mkdir -p ${value}), or name a directory that exists.`);
  return value;
}

/** `word` as one shell word: as it is when it needs no quoting, else in single quotes. Pure. */
export function shellWord(word: string): string {
  return /^[\w./:@%+=,-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`;
}
