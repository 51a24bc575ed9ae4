import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CostsyncError, DISK_MB, ERRORS, ExitCode, codeOf, describeError, diskFullError, errorFields } from '../../src/errors.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

describe('the error registry', () => {
  it('holds every CS_ERR_ code written anywhere in src/, the README and docs/', () => {
    const written = new Set<string>();
    for (const file of [...filesUnder(join(ROOT, 'src')), join(ROOT, 'README.md'), ...filesUnder(join(ROOT, 'docs'))]) {
      for (const m of readFileSync(file, 'utf8').matchAll(/CS_ERR_[A-Z0-9_]*[A-Z0-9]/g)) written.add(m[0]);
    }
    const unknown = [...written].filter((code) => !(code in ERRORS));
    expect(unknown).toEqual([]);
  });

  // No bare Error in src/: the coded-errors rule of test/architecture/eslint-rules.mjs (eslint-rules.unit.test.ts).
  it('the reference page docs/reference/errors.md lists every code with its exit code and summary', () => {
    const page = readFileSync(join(ROOT, 'docs/reference/errors.md'), 'utf8');
    const rows = new Map(
      [...page.matchAll(/^\| `(CS_ERR_[A-Z0-9_]+)` \| (\d) \| (.+) \|$/gm)].map((m) => [m[1]!, { exit: Number(m[2]), summary: m[3]! }]),
    );
    for (const [code, entry] of Object.entries(ERRORS)) {
      expect(rows.get(code), code).toEqual({ exit: entry.exit, summary: entry.summary });
    }
    expect(rows.size).toBe(Object.keys(ERRORS).length);
    expect(Object.values(ERRORS).every((e) => Object.values(ExitCode).includes(e.exit))).toBe(true);
  });
});

describe('every failure carries a registry code', () => {
  const duckdbFull = new Error(
    'TransactionContext Error: Failed to commit: could not write file "/state/costs.duckdb.wal": No space left on device',
  );
  const enospc = Object.assign(new Error("ENOSPC: no space left on device, write '/state/x.tmp'"), { code: 'ENOSPC' });

  it("a full disk, DuckDB's words or Node's, alone or as a cause: CS_ERR_DISK_FULL, exit 1, the hint naming the space a run needs", () => {
    const wrapped = new CostsyncError('CS_ERR_STATE_IO', 'Cannot write the state file /state/s.json', { cause: enospc });
    for (const failure of [duckdbFull, enospc, wrapped]) {
      const full = diskFullError(failure);
      expect(full).toMatchObject({ code: 'CS_ERR_DISK_FULL', exitCode: ExitCode.FAILED });
      expect(full!.message).toMatch(/^The disk is full: /);
      expect(full!.hint).toContain(`${DISK_MB.keptPerMillionHeld} MB a million line items the warehouse holds`);
      expect(full!.hint).toContain(`${DISK_MB.peakPerMillionFetched} MB a million line items in that window`);
      expect(errorFields(failure, false).code).toBe('CS_ERR_DISK_FULL');
      // The hint names the disk of the file it was writing: the working copy's, the state's.
      expect(describeError(failure)).toMatch(/hint: Free space on the disk that holds \/state\/(costs\.duckdb\.wal|x\.tmp) /);
    }
    // A lake's file is on --out's disk, not the warehouse's; a failure that names no file names --state-dir's and --db's.
    const lake = Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC', path: '/lake/line_items/d.parquet' });
    expect(diskFullError(lake)!.hint).toMatch(/^Free space on the disk that holds \/lake\/line_items\/d\.parquet /);
    expect(diskFullError(new Error('IO Error: No space left on device'))!.hint).toMatch(/^Free space on the disk of --state-dir and --db /);
    expect(diskFullError(new Error('Out of Memory Error: failed to allocate'))).toBeNull();
    // An error quoting one already converted says it once.
    const publish = new CostsyncError('CS_ERR_PUBLISH', `Cannot publish: ${diskFullError(duckdbFull)!.message}`);
    expect(diskFullError(publish)!.message).toBe(`Cannot publish: The disk is full: ${duckdbFull.message}`);
  });

  it('never `code=undefined`: a system error is CS_ERR_STATE_IO, an error nothing classified CS_ERR_INTERNAL, a coded one keeps its code', () => {
    expect(errorFields(Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' }), false).code).toBe('CS_ERR_STATE_IO');
    expect(errorFields(new Error('IO Error: Could not read file'), false).code).toBe('CS_ERR_STATE_IO');
    expect(errorFields(new TypeError('x is undefined'), false).code).toBe('CS_ERR_INTERNAL');
    expect(errorFields('a string thrown', false).code).toBe('CS_ERR_INTERNAL');
    expect(errorFields(new CostsyncError('CS_ERR_LOCKED', 'held'), false).code).toBe('CS_ERR_LOCKED');
    for (const code of [codeOf(duckdbFull), codeOf(new Error('?'))]) expect(ERRORS).toHaveProperty(code);
  });

  it("the hint's figures are the ones docs/benchmarks.md gives, with the command that measured them", () => {
    const row = readFileSync(join(ROOT, 'docs/benchmarks.md'), 'utf8')
      .split('\n')
      .find((l) => l.includes('`npm run bench -- disk`'));
    expect(row).toBeDefined();
    expect(row).toContain(`about ${DISK_MB.peakPerMillionFetched} MB a million line items fetched in one window`);
    expect(row).toContain(`about ${DISK_MB.keptPerMillionHeld} MB a million held`);
  });
});
