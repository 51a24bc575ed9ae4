/**
 * DuckDB's tuning variables (COSTSYNC_DUCKDB_MEMORY_LIMIT, COSTSYNC_DUCKDB_THREADS), checked, and
 * DuckDB's out-of-memory error as costsync's. Pure, and without DuckDB itself: the config resolver
 * checks the variables before anything is opened.
 */
import { ConfigError, CostsyncError } from '../errors.js';

/** Bytes in one unit of a DuckDB size (DuckDB's MB is 1000², its MiB 1024²). */
const SIZE_UNITS: Record<string, number> = { kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12, kib: 2 ** 10, mib: 2 ** 20, gib: 2 ** 30, tib: 2 ** 40 };

/**
 * The least memory DuckDB syncs in: storing a window takes its JSON reader a 32 MiB buffer besides the
 * table's blocks. Lower limits failed with DuckDB's "Out of Memory Error" (docs/benchmarks.md).
 */
export const MIN_MEMORY_LIMIT = '64MB';

/**
 * The options of every Parquet file costsync writes (the lakes of both formats, `query --out`), so that a
 * writer takes the same memory however many rows and columns it writes: DuckDB holds a file's current row
 * group and a dictionary buffer per string column in memory (a row group of a fixed count of focus_1_4's
 * 71 wide columns did not fit the limit). Nor is a file sorted: DuckDB's sort merges 122,880 rows at a time
 * in memory, more of focus's wide rows than the limit holds, however much it spills.
 */
export const PARQUET_OPTIONS = "FORMAT parquet, ROW_GROUP_SIZE_BYTES '8MB', STRING_DICTIONARY_PAGE_SIZE_LIMIT 65536";

/** A DuckDB size ("64MB", "1.5GiB") in bytes, or null when it is not one. Pure. */
export function sizeInBytes(text: string): number | null {
  const m = /^(\d+(?:\.\d+)?)\s*([kmgt]i?b)$/i.exec(text.trim());
  return m ? Number(m[1]) * SIZE_UNITS[m[2]!.toLowerCase()]! : null;
}

/**
 * DuckDB's memory limit for syncs: COSTSYNC_DUCKDB_MEMORY_LIMIT (for example 512MB), else 64MB.
 * Refuses a value that is not a size, or one below `MIN_MEMORY_LIMIT`, which would fail at the first
 * window stored, after the pages were fetched.
 */
export function memoryLimit(env: NodeJS.ProcessEnv = process.env): string {
  const value = env.COSTSYNC_DUCKDB_MEMORY_LIMIT?.trim();
  if (value === undefined || value === '') return MIN_MEMORY_LIMIT;
  const bytes = sizeInBytes(value);
  if (bytes === null) {
    throw new ConfigError(
      `COSTSYNC_DUCKDB_MEMORY_LIMIT=${value} is not a size.`,
      `Give a number and a unit, for example 256MB or 1GB, or unset it for ${MIN_MEMORY_LIMIT}.`,
    );
  }
  if (bytes < sizeInBytes(MIN_MEMORY_LIMIT)!) {
    throw new ConfigError(
      `COSTSYNC_DUCKDB_MEMORY_LIMIT=${value} is below ${MIN_MEMORY_LIMIT}, the least costsync runs DuckDB with (loading a window takes its JSON reader a 32 MiB buffer).`,
      `Set it to ${MIN_MEMORY_LIMIT} or more, or unset it.`,
    );
  }
  return value;
}

/** The settings that keep DuckDB's memory flat whatever the size of the work, as DuckDB's options take them. */
export type BoundedSettings = {
  /** DuckDB spills to disk past it. */
  memory_limit: string;
  /** One by default: DuckDB's JSON reader and each Parquet writer take buffers per thread. */
  threads: string;
  /** So that a writer need not hold rows back to keep their order across threads. */
  preserve_insertion_order: 'false';
};

/** `BoundedSettings` from COSTSYNC_DUCKDB_MEMORY_LIMIT and COSTSYNC_DUCKDB_THREADS: a sync's and `query --out`'s. Pure. */
export function boundedSettings(env: NodeJS.ProcessEnv = process.env): BoundedSettings {
  return { memory_limit: memoryLimit(env), threads: String(duckdbThreads(env)), preserve_insertion_order: 'false' };
}

/**
 * Whether committed rows DuckDB holds in memory (tag `IN_MEMORY_TABLE` of `duckdb_memory()`: commits
 * smaller than a row group, kept until a checkpoint writes them to the file) should be checkpointed
 * now: past a quarter of the memory limit. A run checkpoints rarely (`checkpoint_threshold`), and with
 * 400 sources their rollups and the line items' partial row groups grew to fill the 64 MB limit, after
 * which every window store ran out of memory. Pure.
 */
export function checkpointDue(inMemoryTableBytes: number, limitBytes: number): boolean {
  return inMemoryTableBytes > limitBytes / 4;
}

/** COSTSYNC_DUCKDB_THREADS: its default (one thread keeps a sync within the memory limit) and most. */
export const DUCKDB_THREADS = { default: 1, max: 64 } as const;

/** DuckDB threads for syncs: COSTSYNC_DUCKDB_THREADS (1 to 64), else 1. */
export function duckdbThreads(env: NodeJS.ProcessEnv = process.env): number {
  const value = env.COSTSYNC_DUCKDB_THREADS?.trim();
  if (value === undefined || value === '') return DUCKDB_THREADS.default;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > DUCKDB_THREADS.max) {
    throw new ConfigError(
      `COSTSYNC_DUCKDB_THREADS=${value} is not a whole number from 1 to ${DUCKDB_THREADS.max}.`,
      `Set a number of threads from 1 to ${DUCKDB_THREADS.max}, or unset it for ${DUCKDB_THREADS.default}.`,
    );
  }
  return n;
}

/**
 * DuckDB's "Out of Memory Error" as costsync's memory error, naming the limit and the fixes; any other
 * error as it is. The statement's transaction is rolled back, so what was stored before stays, and a
 * window that failed to store is stored by the next run from its spooled pages. Pure.
 */
export function asMemoryError(error: unknown, limit: string): unknown {
  if (!(error instanceof Error) || !/^Out of Memory Error/.test(error.message)) return error;
  return new CostsyncError(
    'CS_ERR_MEMORY',
    `DuckDB ran out of memory at its limit of ${limit}: ${error.message.split('\n')[0]!.replace(/^Out of Memory Error: /, '')}. Progress up to here is saved; the next run goes on from it.`,
    {
      hint: 'Raise COSTSYNC_DUCKDB_MEMORY_LIMIT (for example 256MB), or sync fewer sources at once (--sources-at-once).',
      cause: error,
    },
  );
}
