import { appendFileSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll } from 'vitest';
const stat = () => readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ').map(Number);
const ticks = () => { const f = stat(); return f[11]! + f[12]! + f[13]! + f[14]!; };
const kids = () => { const f = stat(); return f[13]! + f[14]!; };
let k0 = 0;
let t0 = 0; let w0 = 0; let name = 'unknown';
beforeAll(({}, suite: any) => { t0 = ticks(); k0 = kids(); w0 = Date.now(); name = suite?.filepath ?? suite?.file?.filepath ?? suite?.name ?? 'unknown'; });
afterAll(() => {
  const file = name;
  appendFileSync('/tmp/cpuprof/files.tsv', `${((ticks() - t0) / 100).toFixed(2)}\t${((kids() - k0) / 100).toFixed(2)}\t${file}\n`);
});
