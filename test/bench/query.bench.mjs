#!/usr/bin/env node
// `costsync query --out`: peak RSS of exporting the focus view to Parquet, CSV and JSON Lines
// at two sizes; flat in the size of the result means the export is streamed. Prints figures; asserts
// nothing. Run after `npm ci` (uses dist/):  npm run bench:query
// Environment: BENCH_QUERY_ROWS (default 200000,2000000), BENCH_DIR; BENCH_SMOKE=1: tiny sizes.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, filledWorkingCopy, size, tempDir } from './common.mjs';

const sizes = size('BENCH_QUERY_ROWS', '200000,2000000', '2000').split(',').map(Number);

/** Runs the executable under /usr/bin/time; returns exit code, seconds and peak RSS in MB. */
async function measured(args) {
  const started = performance.now();
  const child = spawn('/usr/bin/time', ['-f', 'MAXRSS_KB=%M', process.execPath, BIN, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => {
    err += d;
  });
  const [code] = await once(child, 'exit');
  const kb = Number(/MAXRSS_KB=(\d+)/.exec(err)?.[1] ?? NaN);
  return { code, seconds: (performance.now() - started) / 1000, mb: kb / 1024, err };
}

for (const rows of sizes) {
  const dir = tempDir();
  try {
    const { wh } = await filledWorkingCopy(dir, rows);
    // The filler writes a working copy; query reads any warehouse file.
    const warehouse = wh.path;
    wh.close();
    for (const ext of ['parquet', 'csv', 'jsonl']) {
      const out = join(dir, `focus.${ext}`);
      const r = await measured(['query', 'SELECT * FROM focus', '--db', warehouse, '--out', out]);
      if (r.code !== 0) throw new Error(`query --out failed: ${r.err}`);
      console.log(
        `query: ${rows} rows of focus to .${ext}: exit ${r.code}, ${r.seconds.toFixed(1)} s, ${(statSync(out).size / 1e6).toFixed(1)} MB written, peak RSS ${r.mb.toFixed(0)} MB`,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
