/**
 * Logging for people (pretty, on a terminal) and machines (one JSON object a line). Every line
 * passes through redaction, so the API key never reaches a log whatever a message carries.
 */
import { redact } from './errors.js';

export type LogFormat = 'pretty' | 'json';
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  /** Adds a secret to scrub from every later line. */
  addSecret(secret: string): void;
}

export interface LoggerOptions {
  format: LogFormat;
  /** Lowest level written; `quiet` loggers write warnings and errors only. */
  level?: LogLevel;
  secrets?: string[];
  write?: (line: string) => void;
  now?: () => number;
}

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export function createLogger(options: LoggerOptions): Logger {
  const secrets = [...(options.secrets ?? [])];
  const write = options.write ?? ((line: string) => process.stderr.write(`${line}\n`));
  const now = options.now ?? (() => Date.now());
  const min = ORDER[options.level ?? 'info'];
  const log = (level: LogLevel, message: string, fields: Record<string, unknown> = {}) => {
    if (ORDER[level] < min) return;
    let line: string;
    if (options.format === 'json') {
      line = JSON.stringify({ time: new Date(now()).toISOString(), level, msg: message, ...fields }, jsonSafe);
    } else {
      const extra = Object.entries(fields)
        .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v, jsonSafe)}`)
        .join(' ');
      const tag = level === 'info' ? '' : `${level.toUpperCase()} `;
      line = `${tag}${message}${extra ? `  ${extra}` : ''}`;
    }
    write(redact(line, secrets));
  };
  return {
    debug: (m, f) => log('debug', m, f),
    info: (m, f) => log('info', m, f),
    warn: (m, f) => log('warn', m, f),
    error: (m, f) => log('error', m, f),
    addSecret: (s) => {
      secrets.push(s);
    },
  };
}

/** JSON.stringify replacer: BigInt (DuckDB counts) as numbers, errors as their message. */
export function jsonSafe(_key: string, value: unknown): unknown {
  if (typeof value === 'bigint') return Number(value);
  if (value instanceof Error) return { message: value.message, code: (value as { code?: string }).code };
  return value;
}
