import { describe, expect, it } from 'vitest';
import { ConfigError, CostsyncError } from '../../src/errors.js';
import {
  MIN_MEMORY_LIMIT,
  asMemoryError,
  boundedSettings,
  checkpointDue,
  duckdbThreads,
  memoryLimit,
  sizeInBytes,
} from '../../src/storage/duckdb-settings.js';

describe("DuckDB's tuning variables", () => {
  it('reads sizes in DuckDB units (MB is 1000², MiB 1024²)', () => {
    expect(sizeInBytes('64MB')).toBe(64e6);
    expect(sizeInBytes(' 1.5 GiB ')).toBe(1.5 * 2 ** 30);
    expect(sizeInBytes('512kb')).toBe(512e3);
    expect(sizeInBytes('lots')).toBeNull();
    expect(sizeInBytes('64')).toBeNull();
  });

  it('takes COSTSYNC_DUCKDB_MEMORY_LIMIT from 64MB up, and 64MB when unset', () => {
    expect(memoryLimit({})).toBe(MIN_MEMORY_LIMIT);
    expect(memoryLimit({ COSTSYNC_DUCKDB_MEMORY_LIMIT: '' })).toBe('64MB');
    expect(memoryLimit({ COSTSYNC_DUCKDB_MEMORY_LIMIT: '256MB' })).toBe('256MB');
    expect(memoryLimit({ COSTSYNC_DUCKDB_MEMORY_LIMIT: '1GiB' })).toBe('1GiB');
  });

  it('refuses a memory limit that is not a size, or that no window can be stored in, naming the fix', () => {
    expect(() => memoryLimit({ COSTSYNC_DUCKDB_MEMORY_LIMIT: 'lots' })).toThrow(ConfigError);
    expect(() => memoryLimit({ COSTSYNC_DUCKDB_MEMORY_LIMIT: 'lots' })).toThrow(/COSTSYNC_DUCKDB_MEMORY_LIMIT=lots is not a size/);
    const small = (() => {
      try {
        memoryLimit({ COSTSYNC_DUCKDB_MEMORY_LIMIT: '48MB' });
      } catch (error) {
        return error as ConfigError;
      }
      return null;
    })();
    expect(small?.message).toMatch(/48MB is below 64MB, the least costsync runs DuckDB with/);
    expect(small?.hint).toMatch(/64MB or more/);
    expect(small?.exitCode).toBe(2);
  });

  it('takes COSTSYNC_DUCKDB_THREADS from 1 to 64, and 1 when unset', () => {
    expect(duckdbThreads({})).toBe(1);
    expect(duckdbThreads({ COSTSYNC_DUCKDB_THREADS: '4' })).toBe(4);
    for (const bad of ['0', '65', '2.5', 'many']) {
      expect(() => duckdbThreads({ COSTSYNC_DUCKDB_THREADS: bad }), bad).toThrow(
        new RegExp(`COSTSYNC_DUCKDB_THREADS=${bad} is not a whole number from 1 to 64`),
      );
    }
  });

  it('gives a sync and `query --out` the memory limit, the threads and no insertion order, as DuckDB takes options', () => {
    expect(boundedSettings({})).toEqual({ memory_limit: '64MB', threads: '1', preserve_insertion_order: 'false' });
    expect(boundedSettings({ COSTSYNC_DUCKDB_MEMORY_LIMIT: '1GiB', COSTSYNC_DUCKDB_THREADS: '4' })).toEqual({
      memory_limit: '1GiB',
      threads: '4',
      preserve_insertion_order: 'false',
    });
    expect(() => boundedSettings({ COSTSYNC_DUCKDB_THREADS: '0' })).toThrow(ConfigError);
  });
});

describe("DuckDB's out-of-memory error", () => {
  it("becomes costsync's memory error, naming the limit and the fixes, with DuckDB's as its cause", () => {
    const duck = new Error(
      'Out of Memory Error: failed to allocate data of size 32.0 MiB (6.4 MiB/38.1 MiB used)\n\nPossible solutions:\n* Reducing the number of threads',
    );
    const mapped = asMemoryError(duck, '64MB') as CostsyncError;
    expect(mapped).toBeInstanceOf(CostsyncError);
    expect(mapped.code).toBe('CS_ERR_MEMORY');
    expect(mapped.exitCode).toBe(1);
    expect(mapped.message).toBe(
      'DuckDB ran out of memory at its limit of 64MB: failed to allocate data of size 32.0 MiB (6.4 MiB/38.1 MiB used). Progress up to here is saved; the next run goes on from it.',
    );
    expect(mapped.hint).toMatch(/COSTSYNC_DUCKDB_MEMORY_LIMIT.*--sources-at-once/);
    expect(mapped.cause).toBe(duck);
  });

  it('leaves every other error as it is', () => {
    const other = new Error('Binder Error: column "x" not found');
    expect(asMemoryError(other, '64MB')).toBe(other);
    expect(asMemoryError('text', '64MB')).toBe('text');
  });
});

describe('a checkpoint for committed rows held in memory', () => {
  it('is due past a quarter of the memory limit, and not at or below it', () => {
    const limit = sizeInBytes(MIN_MEMORY_LIMIT)!;
    expect(checkpointDue(0, limit)).toBe(false);
    expect(checkpointDue(limit / 4, limit)).toBe(false);
    expect(checkpointDue(limit / 4 + 1, limit)).toBe(true);
    expect(checkpointDue(16e6, sizeInBytes('256MB')!)).toBe(false);
  });
});
