#!/usr/bin/env node
// Push benchmarks. Prints figures; asserts nothing. Run after `npm ci` (uses dist/):
//   npm run bench:push                 speed and memory
//   npm run bench:push -- speed        one of: speed, memory
// Environment: BENCH_PUSH_ROWS (default 1000000); BENCH_SMOKE=1: tiny sizes.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DuckDBInstance } from '@duckdb/node-api';
import { openFileReader } from '../../dist/push/reader.js';
import { runPush } from '../../dist/push/push.js';
import { resolvePushOptions } from '../../dist/commands/push.js';
import { BIN, quietLogger as quiet, size, smoke, tempDir } from './common.mjs';

const SAMPLE = fileURLToPath(new URL('../fixtures/focus_sample_1.0.csv', import.meta.url));
const which = process.argv[2];

/** A FOCUS CSV of `rows` rows: the real sample, repeated with shifted costs and resource ids so rows and their keys differ. */
async function makeCsv(dir, rows) {
  const path = join(dir, `focus-${rows}.csv`);
  const instance = await DuckDBInstance.create(':memory:');
  const conn = await instance.connect();
  await conn.run(`COPY (SELECT s.* REPLACE (CAST(TRY_CAST(s.BilledCost AS DOUBLE) + r * 0.000001 AS VARCHAR) AS BilledCost, coalesce(s.ResourceId, '') || '#' || r AS ResourceId)
    FROM read_csv('${SAMPLE}', all_varchar = true) s, range(${Math.ceil(rows / 1000)}) t(r)) TO '${path}' (HEADER, NULLSTR 'NULL')`);
  conn.closeSync();
  instance.closeSync();
  return path;
}

async function readCsvSeconds(path) {
  const instance = await DuckDBInstance.create(':memory:');
  const conn = await instance.connect();
  try {
    const t = performance.now();
    await conn.run(`CREATE TABLE t AS SELECT * FROM read_csv('${path}', nullstr = 'NULL')`);
    return (performance.now() - t) / 1000;
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}

async function validateSeconds(path) {
  const reader = await openFileReader();
  try {
    const t = performance.now();
    const summary = await runPush({
      // `costsync push --dry-run --connection bench FILE`, resolved as the CLI resolves it.
      options: resolvePushOptions(
        { 'dry-run': true, connection: 'bench', files: [path] },
        { baseUrl: '', apiKey: '', sourceName: 'default' },
      ),
      reader,
      logger: quiet,
    });
    return { secs: (performance.now() - t) / 1000, summary };
  } finally {
    reader.close();
  }
}

async function benchSpeed(dir) {
  const rows = Number(size('BENCH_PUSH_ROWS', 1_000_000, 1_000));
  const path = await makeCsv(dir, rows);
  const mb = statSync(path).size / 1048576;
  // Warm the page cache for both, then measure each twice and keep the better.
  await readCsvSeconds(path);
  const rc = Math.min(await readCsvSeconds(path), await readCsvSeconds(path));
  const v1 = await validateSeconds(path);
  const v2 = await validateSeconds(path);
  const v = v1.secs < v2.secs ? v1 : v2;
  console.log(`push speed: ${v.summary.rowsRead} rows (${mb.toFixed(0)} MB CSV), ${v.summary.invalid} invalid`);
  console.log(`push speed: read_csv into a table ${rc.toFixed(2)} s = ${Math.round(v.summary.rowsRead / rc)} rows/s`);
  console.log(
    `push speed: costsync validation (dry run) ${v.secs.toFixed(2)} s = ${Math.round(v.summary.rowsRead / v.secs)} rows/s; validation/read_csv speed = ${(rc / v.secs).toFixed(2)} (target >= 0.5)`,
  );
}

async function dryRunRss(path) {
  const child = spawn('/usr/bin/time', ['-f', 'MAXRSS_KB=%M', BIN, 'push', '--dry-run', '--quiet', path], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  child.stderr.on('data', (d) => {
    err += d;
  });
  const [code] = await once(child, 'exit');
  return { code, mb: Number(/MAXRSS_KB=(\d+)/.exec(err)?.[1] ?? NaN) / 1024 };
}

async function benchMemory(dir) {
  const base = Number(size('BENCH_PUSH_ROWS', 1_000_000, 1_000));
  // The smoke run (npm test) checks the part works: one size, not the three that show how memory grows.
  for (const rows of smoke ? [base] : [base / 4, base, base * 3]) {
    const path = await makeCsv(dir, rows);
    const { code, mb } = await dryRunRss(path);
    console.log(
      `push memory: dry run of ${rows} rows (${(statSync(path).size / 1048576).toFixed(0)} MB), exit ${code}, peak RSS ${mb.toFixed(0)} MB`,
    );
    rmSync(path);
  }
}

const benches = { speed: benchSpeed, memory: benchMemory };
const dir = tempDir('costsync-push-bench-');
try {
  for (const [name, fn] of Object.entries(benches)) {
    if (which && which !== name) continue;
    await fn(dir);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
