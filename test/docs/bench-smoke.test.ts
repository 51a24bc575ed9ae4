// Every benchmark script runs once at a tiny size (BENCH_SMOKE=1), so a benchmark that no longer runs
// fails the suite. Figures are printed, nothing is asserted about speed: only that each script ran every
// one of its parts and printed a figure for it.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, inject, it } from 'vitest';

const BENCH_DIR = fileURLToPath(new URL('../bench/', import.meta.url));
const scripts = readdirSync(BENCH_DIR)
  .filter((f) => f.endsWith('.bench.mjs'))
  .sort();

/** The figure lines each script prints: one prefix per part it measures. */
const PARTS: Record<string, string[]> = {
  'sync.bench.mjs': [
    'startup:',
    'requests:',
    'rate:',
    'throughput:',
    'memory:',
    'lake memory, iceberg:',
    'lake memory, parquet:',
    'stop:',
    'disk:',
  ],
  'push.bench.mjs': ['push speed:', 'push memory:'],
  'publish.bench.mjs': ['publish:', 'nightly:'],
  'sources.bench.mjs': ['sources:', 'memory:', 'idle:'],
  'bucket.bench.mjs': ['publish:', 'lake:'],
  'query.bench.mjs': ['query:'],
  'iceberg.bench.mjs': ['throughput:', 'commit:', 'history:', 'catalog:'],
  'fleet.bench.mjs': ['fleet: backfill', 'fleet: nightly', 'fleet: read back'],
};

async function runScript(file: string): Promise<{ code: number | null; out: string; err: string }> {
  // The bucket benchmark uses the run's radosgw rather than starting its own.
  const rgw = inject('rgw');
  const s3 = { BENCH_S3_ENDPOINT: rgw.endpoint, BENCH_S3_KEY_ID: rgw.accessKeyId, BENCH_S3_SECRET: rgw.secretAccessKey };
  const child = spawn(process.execPath, [BENCH_DIR + file], {
    env: { ...process.env, BENCH_SMOKE: '1', ...s3 },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => {
    out += d;
  });
  child.stderr.on('data', (d) => {
    err += d;
  });
  const [code] = await once(child, 'exit');
  return { code: code as number | null, out, err };
}

describe('benchmarks at a tiny size', () => {
  it('knows every benchmark script', () => {
    expect(scripts).toEqual(Object.keys(PARTS).sort());
  });

  // One after another: side by side the file ends sooner but takes more CPU (docs/benchmarks.md, "The test
  // suite"), and the fast tier on two cores is short of CPU, not of time to wait in.
  for (const file of scripts) {
    it(`${file} runs and prints its figures`, async () => {
      const { code, out, err } = await runScript(file);
      expect(err.replace(/npm warn.*\n?/g, ''), `stderr of ${file}`).not.toMatch(/Error|at .*\.m?js:\d+/);
      expect(code, `${file} exit code; stderr: ${err}`).toBe(0);
      for (const prefix of PARTS[file] ?? []) {
        const line = out.split('\n').find((l) => l.startsWith(prefix));
        expect(line, `${file} printed no "${prefix}" line; stdout:\n${out}`).toBeDefined();
        expect(line).toMatch(/\d/);
      }
    }, 180_000);
  }
});
