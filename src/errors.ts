/**
 * Every error costsync raises has a stable `code` (for scripts and tests), an `exitCode`
 * (for the CLI), and a `hint` that tells a person what to do. API errors also keep the HTTP
 * status, the API's own error code and the request path (never the URL's secrets: the key
 * travels in a header only).
 */

/** Process exit codes, documented in docs/reference/exit-codes.md (npm run docs writes it from these). */
export const ExitCode = {
  OK: 0,
  FAILED: 1,
  USAGE: 2,
  AUTH: 3,
  STOPPED_EARLY: 4,
  LOCKED: 5,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/**
 * Every error code costsync raises: its usual exit code and one line on what it means. The one
 * registry (undici's `lib/core/errors.js` is the model): a code is typed against it where it is thrown,
 * docs/reference/errors.md is written from it (npm run docs), and callers match on the classes below, not
 * on strings.
 */
export const ERRORS = {
  CS_ERR_CONFIG: {
    exit: ExitCode.USAGE,
    summary: 'a bad flag, setting, config file, date or input file; the message names it and the fix',
  },
  CS_ERR_STATE_IO: {
    exit: ExitCode.FAILED,
    summary: 'a state file, lock or working copy cannot be read or written (permissions, a full disk, a missing directory)',
  },
  CS_ERR_LOCKED: { exit: ExitCode.LOCKED, summary: 'another costsync run holds the lock file (named, with how to clear it)' },
  CS_ERR_DB_OPEN: { exit: ExitCode.USAGE, summary: 'the DuckDB file cannot be opened (not a DuckDB file, a newer version, permissions)' },
  CS_ERR_DB_LOCKED: { exit: ExitCode.LOCKED, summary: "another program opened costsync's private working copy (open --db instead)" },
  CS_ERR_DB_MISSING: { exit: ExitCode.USAGE, summary: 'there is no warehouse at --db yet' },
  CS_ERR_MIGRATION: { exit: ExitCode.FAILED, summary: 'a schema migration of the warehouse failed; nothing was changed' },
  CS_ERR_DB_OLD: {
    exit: ExitCode.USAGE,
    summary: 'a read command met a warehouse an older costsync wrote, which it opens read-only and so does not bring up to date',
  },
  CS_ERR_UNAUTHORIZED: { exit: ExitCode.AUTH, summary: 'the API refused the key: missing, malformed, revoked or expired (401)' },
  CS_ERR_FORBIDDEN: {
    exit: ExitCode.AUTH,
    summary: 'the key may not do this, for example an ingest key bound to another connection (403)',
  },
  CS_ERR_INVALID_SCOPE: { exit: ExitCode.AUTH, summary: 'the key lacks the scope the endpoint needs (403)' },
  CS_ERR_PLAN_RESTRICTED: { exit: ExitCode.AUTH, summary: "the workspace's plan has no API access (403)" },
  CS_ERR_VALIDATION: { exit: ExitCode.FAILED, summary: 'the API refused a parameter (400)' },
  CS_ERR_RATE_LIMITED: { exit: ExitCode.FAILED, summary: 'still rate limited (429) after the bounded holds' },
  CS_ERR_SERVER: { exit: ExitCode.FAILED, summary: 'the API answered with a server error (5xx), retried' },
  CS_ERR_HTTP: { exit: ExitCode.FAILED, summary: 'an HTTP failure without an API error envelope' },
  CS_ERR_NETWORK: { exit: ExitCode.FAILED, summary: 'a network failure after the API had answered (reset, dropped), retried' },
  CS_ERR_UNREACHABLE: {
    exit: ExitCode.USAGE,
    summary: 'nothing answers at --base-url (the host does not resolve, or refuses connections) before anything answered',
  },
  CS_ERR_TIMEOUT: { exit: ExitCode.FAILED, summary: 'the API was too slow (connect, headers, body or whole-request deadline), retried' },
  CS_ERR_MALFORMED_RESPONSE: { exit: ExitCode.FAILED, summary: 'a response that is not the envelope the spec describes, retried' },
  CS_ERR_BAD_RECORD: { exit: ExitCode.FAILED, summary: 'a record in a response lacks a field the spec requires' },
  CS_ERR_RESPONSE_TOO_LARGE: { exit: ExitCode.FAILED, summary: 'a response larger than any page the API sends' },
  CS_ERR_RETRIES_EXHAUSTED: { exit: ExitCode.FAILED, summary: 'a request still failing after its retries; progress is kept' },
  CS_ERR_ABORTED: {
    exit: ExitCode.STOPPED_EARLY,
    summary: 'a request, lake file or upload not started (or cut) because the run is stopping; what it was for is pending for the next run',
  },
  CS_ERR_CURSOR_LOOP: { exit: ExitCode.FAILED, summary: 'the server returned a cursor it had already returned' },
  CS_ERR_RECONCILE: { exit: ExitCode.FAILED, summary: 'with --reconcile strict, a window whose line items and rollups still disagree' },
  CS_ERR_OUTPUT_BEHIND: {
    exit: ExitCode.FAILED,
    summary: 'the lake or the published warehouse could not be brought up to date; it is pending for the next run',
  },
  CS_ERR_LAKE_DAMAGED: {
    exit: ExitCode.FAILED,
    summary:
      'an Iceberg table in the lake lacks a file its metadata names (read twice; --iceberg-repair mends it from what can be read and the warehouse), or was moved from where it was written (the table is named, with the fix)',
  },
  CS_ERR_LAKE_CONFLICT: {
    exit: ExitCode.FAILED,
    summary: 'an Iceberg commit or expiry lost the race to other runners at every attempt; it is pending for the next run',
  },
  CS_ERR_MEMORY: {
    exit: ExitCode.FAILED,
    summary: "memory ran short (Node's heap, or DuckDB's memory limit); the run stopped with its progress saved",
  },
  CS_ERR_PUBLISH: { exit: ExitCode.FAILED, summary: 'the warehouse could not be published over --db' },
  CS_ERR_WAREHOUSE_CHANGED: {
    exit: ExitCode.LOCKED,
    summary: 'another run published the warehouse since this run started; nothing was overwritten',
  },
  CS_ERR_LEASE_HELD: { exit: ExitCode.LOCKED, summary: 'another runner holds the lease on the bucket (named)' },
  CS_ERR_LEASE_LOST: { exit: ExitCode.LOCKED, summary: "this run's lease was taken over; it writes nothing more" },
  CS_ERR_NOTIFY: { exit: ExitCode.FAILED, summary: 'a webhook did not take the message (never fails a sync; notify --test reports it)' },
  CS_ERR_UNKNOWN_SOURCE: {
    exit: ExitCode.USAGE,
    summary: 'report --source names a source the warehouse holds nothing of (the ones it holds are named)',
  },
  CS_ERR_QUERY: { exit: ExitCode.USAGE, summary: 'the SQL given to costsync query failed' },
  CS_ERR_QUERY_REFUSED: {
    exit: ExitCode.USAGE,
    summary:
      'costsync query runs only SELECT and EXPLAIN: the SQL would write a file, install, load or attach, or change a setting (the rule is named)',
  },
  CS_ERR_QUERY_READ_ONLY: { exit: ExitCode.USAGE, summary: 'costsync query only reads; the SQL tried to write' },
  CS_ERR_PUSH_READ: { exit: ExitCode.USAGE, summary: 'a file given to push cannot be read' },
  CS_ERR_NOTHING_SYNCED: {
    exit: ExitCode.USAGE,
    summary: 'verify was asked about dates of which the warehouse holds none synced: nothing was compared, so nothing is said to agree',
  },
  CS_ERR_PUSH_WRITE: { exit: ExitCode.FAILED, summary: 'push cannot write the file of rows it did not deliver' },
  CS_ERR_S3: { exit: ExitCode.FAILED, summary: 'a bucket operation failed after the SDK retries' },
  CS_ERR_S3_CREDENTIALS: { exit: ExitCode.AUTH, summary: 'no AWS credentials' },
  CS_ERR_S3_REGION: { exit: ExitCode.USAGE, summary: 'no AWS region (set AWS_REGION)' },
  CS_ERR_S3_ACCESS_DENIED: { exit: ExitCode.AUTH, summary: 'the bucket refused an action (the IAM action is named)' },
  CS_ERR_S3_PRECONDITION: { exit: ExitCode.LOCKED, summary: 'a conditional write was refused: another run wrote the object meanwhile' },
  CS_ERR_S3_NO_BUCKET: { exit: ExitCode.USAGE, summary: 'the bucket does not exist' },
  CS_ERR_S3_NO_CONDITIONAL_WRITES: {
    exit: ExitCode.USAGE,
    summary: 'the bucket server ignores conditional writes, so runners cannot be kept apart (--lease off to go on)',
  },
  CS_ERR_CATALOG_AUTH: {
    exit: ExitCode.AUTH,
    summary: 'the Iceberg REST catalog refused the credentials or the action (401, 403, 419), or no token could be had',
  },
  CS_ERR_CATALOG_UNREACHABLE: { exit: ExitCode.USAGE, summary: 'nothing answers at --catalog (the host does not resolve, or refuses)' },
  CS_ERR_CATALOG: {
    exit: ExitCode.FAILED,
    summary: 'the Iceberg REST catalog refused a request or kept failing after retries (its answer is named)',
  },
  CS_ERR_CATALOG_UNSUPPORTED: {
    exit: ExitCode.USAGE,
    summary: 'the Iceberg REST catalog does not offer an endpoint costsync needs (named, from its config endpoints)',
  },
  CS_ERR_DISK_FULL: {
    exit: ExitCode.FAILED,
    summary:
      'the disk ran full (ENOSPC, DuckDB\'s "No space left on device"); progress up to it is saved, and the hint says how much space a run needs',
  },
  CS_ERR_INTERNAL: {
    exit: ExitCode.FAILED,
    summary: 'a bug in costsync: a check that should never fail did (the message names it); please report it',
  },
} as const satisfies Record<`CS_ERR_${string}`, { exit: ExitCode; summary: string }>;

export type ErrorCode = keyof typeof ERRORS;

export interface CostsyncErrorOptions {
  hint?: string | undefined;
  exitCode?: ExitCode;
  cause?: unknown;
}

export class CostsyncError extends Error {
  readonly code: ErrorCode;
  readonly exitCode: ExitCode;
  readonly hint: string | undefined;

  constructor(code: ErrorCode, message: string, options: CostsyncErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'CostsyncError';
    this.code = code;
    this.exitCode = options.exitCode ?? ERRORS[code].exit;
    this.hint = options.hint;
  }
}

/** A run that must write nothing more: its lease was taken over, or another run published meanwhile. */
export class FencedError extends CostsyncError {
  constructor(code: 'CS_ERR_LEASE_LOST' | 'CS_ERR_WAREHOUSE_CHANGED', message: string, options: CostsyncErrorOptions = {}) {
    super(code, message, options);
    this.name = 'FencedError';
  }
}

/** True for an error after which a run writes nothing more (see FencedError). */
export function isFenced(error: unknown): error is FencedError {
  return error instanceof FencedError;
}

/**
 * Thrown where a lake write (a file, an upload, a commit) would start once the run's stop is seen: the
 * work stays pending in the outbox, and a stop must end the process within seconds, not after the lake.
 */
export function throwIfStopped(signal: AbortSignal | undefined, what: string): void {
  if (signal?.aborted !== true) return;
  throw new CostsyncError('CS_ERR_ABORTED', `${what}: not written, the run is stopping (${String(signal.reason)}).`, {
    hint: 'Run the same command again: it writes what is pending first.',
  });
}

/** True for the error of work cut short by the run's stop (an API request's or a lake write's). */
export function isStopped(error: unknown): boolean {
  return error instanceof CostsyncError && error.code === 'CS_ERR_ABORTED';
}

/** What an internal error's hint says, unless it knows better. */
export const REPORT_BUG = 'This is a bug in costsync, not in your data or settings: please report it with this message.';

/** A check costsync makes of itself failed (a bug): CS_ERR_INTERNAL, exit code 1. */
export class InternalError extends CostsyncError {
  constructor(message: string, hint: string = REPORT_BUG) {
    super('CS_ERR_INTERNAL', message, { hint });
    this.name = 'InternalError';
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

  constructor(code: ErrorCode, message: string, options: ApiErrorOptions) {
    super(code, message, options);
    this.name = 'ApiError';
    this.statusCode = options.statusCode;
    this.apiCode = options.apiCode;
    this.path = options.path;
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** Stable costsync codes for each API error code. */
export const CODE_FOR_API_ERROR: Record<ApiErrorCode, ErrorCode> = {
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
} as const satisfies Record<string, ErrorCode>;

export function isCostsyncError(error: unknown): error is CostsyncError {
  return error instanceof CostsyncError;
}

/**
 * Disk a run takes, measured (`npm run bench -- disk`, docs/benchmarks.md): a backfill of a million line
 * items in one window peaked at 489 MB (the pages spooled until the window is stored, the working copy, its
 * WAL and the published --db) and left 50 MB (the published --db and its working copy).
 */
export const DISK_MB = { peakPerMillionFetched: 490, keptPerMillionHeld: 50 } as const;

/** True when `error` or one of its causes is a full disk: Node's ENOSPC, or DuckDB's "No space left on device". Pure. */
export function isDiskFull(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    if ((e as NodeJS.ErrnoException).code === 'ENOSPC' || /No space left on device/i.test(e.message)) return true;
  }
  return false;
}

const DISK_FULL = 'The disk is full: ';

/** What a run needs on disk, from the measured figures: said with every full disk. */
const DISK_NEEDS = `As measured (docs/benchmarks.md), a run needs about ${DISK_MB.keptPerMillionHeld} MB a million line items the warehouse holds (the published --db and its working copy), and while it fetches a window about ${DISK_MB.peakPerMillionFetched} MB a million line items in that window (a first run or a --since backfill; a smaller --window-days needs less).`;

/** The hint of CS_ERR_DISK_FULL when the failure names no file: the warehouse's disks, and the space a run needs. */
export const DISK_FULL_HINT = `Free space on the disk of --state-dir and --db (or move them to a larger one) and run again: progress up to here is saved. ${DISK_NEEDS}`;

/**
 * The file a full-disk failure was writing, from it or its causes: Node's `path`, or the file DuckDB's or
 * Node's message quotes (`could not write file "/state/c.duckdb.wal"`, `write '/lake/x.parquet'`); null when none. Pure.
 */
export function fullDiskPath(error: unknown): string | null {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    const path = (e as NodeJS.ErrnoException).path;
    if (typeof path === 'string' && path !== '') return path;
    const quoted = /\b(?:file|open|write|mkdir|rename|copyfile|unlink)\s+["'](\/[^"']+)["']/.exec(e.message);
    if (quoted !== null) return quoted[1]!;
  }
  return null;
}

/**
 * A full disk as CS_ERR_DISK_FULL (exit 1), its hint naming the disk of the file it was writing when the
 * failure says which (a lake's --out is not the warehouse's disk), else --state-dir's and --db's; null for
 * any other error, or one already converted. Pure.
 */
export function diskFullError(error: unknown): CostsyncError | null {
  if (!isDiskFull(error) || (error instanceof CostsyncError && error.code === 'CS_ERR_DISK_FULL')) return null;
  const message = error instanceof Error ? error.message.split('\n')[0]! : String(error);
  const path = fullDiskPath(error);
  // A message that quotes an inner full-disk error already says so: said once, where it happened.
  return new CostsyncError('CS_ERR_DISK_FULL', message.includes(DISK_FULL) ? message : `${DISK_FULL}${message}`, {
    hint:
      path === null
        ? DISK_FULL_HINT
        : `Free space on the disk that holds ${path} (or move that directory to a larger one) and run again: progress up to here is saved. ${DISK_NEEDS}`,
    cause: error,
  });
}

/**
 * The registry code of any failure: its own, CS_ERR_DISK_FULL for a full disk, CS_ERR_STATE_IO for another
 * system error (EACCES, EIO…) and DuckDB's I/O errors, else CS_ERR_INTERNAL (an error costsync did not
 * classify is its bug). Pure.
 */
export function codeOf(error: unknown): ErrorCode {
  if (isDiskFull(error)) return 'CS_ERR_DISK_FULL';
  if (error instanceof CostsyncError) return error.code;
  const errno = (error as NodeJS.ErrnoException | null)?.code;
  if ((typeof errno === 'string' && /^E[A-Z]+$/.test(errno)) || (error instanceof Error && /^IO Error/.test(error.message)))
    return 'CS_ERR_STATE_IO';
  return 'CS_ERR_INTERNAL';
}

/**
 * One line a person can read: message, then the hint. Used by the CLI and by logs.
 * `secrets` are scrubbed from the result, so a key echoed back inside a cause never escapes.
 */
export function describeError(failure: unknown, secrets: readonly string[] = []): string {
  const error = diskFullError(failure) ?? failure;
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

/** Secrets shorter than this are not redacted at all (they would be found inside too much); see SHORT_SECRET. */
const REDACT_MIN = 4;
/** Secrets shorter than this are warned about at start-up: short enough to be an ordinary word in a message. */
export const SHORT_SECRET = 8;

/**
 * Replaces each secret (of 4+ characters) with `[REDACTED]` where it stands as a whole token: not inside a
 * longer word, so a short secret such as `wrong` does not garble "Unknown client or wrong secret" into
 * nonsense elsewhere ("[REDACTED]ly"). Pure.
 */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret.length < REDACT_MIN || !out.includes(secret)) continue;
    out = out.replace(wholeToken(secret), '[REDACTED]');
  }
  return out;
}

/** Each secret's whole-token pattern, made once: every log line is redacted with every secret. */
const tokenPatterns = new Map<string, RegExp>();
function wholeToken(secret: string): RegExp {
  let re = tokenPatterns.get(secret);
  if (re === undefined) {
    const escaped = secret.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    re = new RegExp(`(?<![A-Za-z0-9_])${escaped}(?![A-Za-z0-9_])`, 'g');
    tokenPatterns.set(secret, re);
  }
  return re;
}

/**
 * The start-up warning for each secret under 8 characters, named by where it came from (never by its
 * value): whole-token redaction cannot tell it from an ordinary word, and one under 4 is not redacted. Pure.
 */
export function shortSecretWarnings(secrets: readonly { what: string; value: string }[]): string[] {
  return secrets
    .filter((s) => s.value !== '' && s.value.length < SHORT_SECRET)
    .map(
      (s) =>
        `${s.what} is only ${s.value.length} characters long: use a secret of ${SHORT_SECRET} or more. costsync hides secrets in its logs and messages as whole words, and one this short ${s.value.length < REDACT_MIN ? 'is not hidden at all' : 'may be hidden where the same word means something else'}.`,
    );
}

/**
 * Log fields for an error: its code, and with `verbose` the stack of it and of each cause (the
 * logger scrubs secrets from every line it writes, stacks included).
 */
export function errorFields(error: unknown, verbose: boolean): Record<string, unknown> {
  // Always a registry code: a failure nothing classified is one too (CS_ERR_INTERNAL), never `undefined`.
  const fields: Record<string, unknown> = { code: codeOf(error) };
  if (verbose) {
    const stacks: string[] = [];
    for (let e: unknown = error; e instanceof Error && stacks.length < 5; e = e.cause) stacks.push(e.stack ?? e.message);
    fields.stack = stacks.join('\ncaused by: ');
  }
  return fields;
}
