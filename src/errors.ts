/**
 * Every error costsync raises has a stable `code` (for scripts and tests), an `exitCode`
 * (for the CLI), and a `hint` that tells a person what to do. API errors also keep the HTTP
 * status, the API's own error code and the request path (never the URL's secrets: the key
 * travels in a header only).
 */

/** Process exit codes, documented in the README. */
export const ExitCode = {
  OK: 0,
  FAILED: 1,
  USAGE: 2,
  AUTH: 3,
  STOPPED_EARLY: 4,
  LOCKED: 5,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

export interface CostsyncErrorOptions {
  hint?: string | undefined;
  exitCode?: ExitCode;
  cause?: unknown;
}

export class CostsyncError extends Error {
  readonly code: string;
  readonly exitCode: ExitCode;
  readonly hint: string | undefined;

  constructor(code: string, message: string, options: CostsyncErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'CostsyncError';
    this.code = code;
    this.exitCode = options.exitCode ?? ExitCode.FAILED;
    this.hint = options.hint;
  }
}

/** Bad flags, config values or input files: exit code 2. */
export class ConfigError extends CostsyncError {
  constructor(message: string, hint?: string, cause?: unknown) {
    super('CS_ERR_CONFIG', message, { hint, exitCode: ExitCode.USAGE, cause });
    this.name = 'ConfigError';
  }
}

/** The API error codes of the spec's error table. */
export const API_ERROR_CODES = [
  'UNAUTHORIZED',
  'FORBIDDEN',
  'INVALID_SCOPE',
  'PLAN_RESTRICTED',
  'VALIDATION_ERROR',
  'RATE_LIMITED',
  'INTERNAL_ERROR',
] as const;
export type ApiErrorCode = (typeof API_ERROR_CODES)[number];

export interface ApiErrorOptions extends CostsyncErrorOptions {
  statusCode?: number | undefined;
  apiCode?: string | undefined;
  path: string;
  /** Seconds to wait, for RATE_LIMITED. */
  retryAfterMs?: number | undefined;
}

/** Anything that went wrong talking to the API: an error envelope, the network, or a bad body. */
export class ApiError extends CostsyncError {
  readonly statusCode: number | undefined;
  readonly apiCode: string | undefined;
  readonly path: string;
  readonly retryAfterMs: number | undefined;

  constructor(code: string, message: string, options: ApiErrorOptions) {
    super(code, message, options);
    this.name = 'ApiError';
    this.statusCode = options.statusCode;
    this.apiCode = options.apiCode;
    this.path = options.path;
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** Stable costsync codes for each API error code. */
export const CODE_FOR_API_ERROR: Record<ApiErrorCode, string> = {
  UNAUTHORIZED: 'CS_ERR_UNAUTHORIZED',
  FORBIDDEN: 'CS_ERR_FORBIDDEN',
  INVALID_SCOPE: 'CS_ERR_INVALID_SCOPE',
  PLAN_RESTRICTED: 'CS_ERR_PLAN_RESTRICTED',
  VALIDATION_ERROR: 'CS_ERR_VALIDATION',
  RATE_LIMITED: 'CS_ERR_RATE_LIMITED',
  INTERNAL_ERROR: 'CS_ERR_SERVER',
};

/** Codes raised by the client itself. */
export const ClientErrorCode = {
  NETWORK: 'CS_ERR_NETWORK',
  /** No server answers at the base URL's host and port, before any response: a setting to fix (exit 2). */
  UNREACHABLE: 'CS_ERR_UNREACHABLE',
  TIMEOUT: 'CS_ERR_TIMEOUT',
  MALFORMED_RESPONSE: 'CS_ERR_MALFORMED_RESPONSE',
  RESPONSE_TOO_LARGE: 'CS_ERR_RESPONSE_TOO_LARGE',
  HTTP: 'CS_ERR_HTTP',
  RETRIES_EXHAUSTED: 'CS_ERR_RETRIES_EXHAUSTED',
  ABORTED: 'CS_ERR_ABORTED',
} as const;

export function isCostsyncError(error: unknown): error is CostsyncError {
  return error instanceof CostsyncError;
}

/**
 * One line a person can read: message, then the hint. Used by the CLI and by logs.
 * `secrets` are scrubbed from the result, so a key echoed back inside a cause never escapes.
 */
export function describeError(error: unknown, secrets: readonly string[] = []): string {
  let text: string;
  if (error instanceof CostsyncError) {
    text = error.hint ? `${error.message}\n  hint: ${error.hint}` : error.message;
  } else if (error instanceof Error) {
    text = error.message;
  } else {
    text = String(error);
  }
  return redact(text, secrets);
}

/** Replaces every occurrence of each secret (of 4+ characters) with `[REDACTED]`. */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret.length >= 4) out = out.split(secret).join('[REDACTED]');
  }
  return out;
}

/**
 * Log fields for an error: its code, and with `verbose` the stack of it and of each cause (the
 * logger scrubs secrets from every line it writes, stacks included).
 */
export function errorFields(error: unknown, verbose: boolean): Record<string, unknown> {
  const fields: Record<string, unknown> = { code: (error as { code?: string } | null)?.code };
  if (verbose) {
    const stacks: string[] = [];
    for (let e: unknown = error; e instanceof Error && stacks.length < 5; e = e.cause) stacks.push(e.stack ?? e.message);
    fields.stack = stacks.join('\ncaused by: ');
  }
  return fields;
}
