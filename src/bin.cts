#!/usr/bin/env -S MALLOC_ARENA_MAX=1 node --max-semi-space-size=2 --max-old-space-size=96
/**
 * The `costsync` executable. A CommonJS file on purpose: it runs before Node's ESM loader first uses
 * libuv's thread pool, so the pool size set here takes effect (set from an ES module, it is too late).
 *
 * Why two threads: DuckDB's statements and Node's file I/O run on that pool. The write queue runs one
 * statement at a time, so with a second thread the spool's page writes and the state's saves go on
 * while a statement runs; with one, every source's pages waited behind each checkpoint (up to 1.4 s
 * with 200 sources), and the least-served key lost its share. More threads would spread DuckDB's
 * allocations over more arenas and grow a long sync's RSS (docs/benchmarks.md has the figures). A value
 * the user sets wins. The small young generation (the shebang) keeps the heap near its live size:
 * pages are short-lived garbage. One malloc arena for the same reason, in glibc (set by the shebang,
 * before Node starts: glibc reads it once; its default is 8 arenas a core) and in the jemalloc DuckDB
 * is built with (read when DuckDB loads, after this line; DuckDB's default is 2): each lowers peak RSS
 * in the same CPU time.
 */
process.env.UV_THREADPOOL_SIZE ??= '2';
process.env.DUCKDB_JE_MALLOC_CONF ??= 'narenas:1';
// undici parses HTTP in WebAssembly, and V8 12 (Node 22) compiles that parser again with its optimizing
// compiler in every process that makes a request; the baseline compiler's code parses pages no slower.
// V8 13 (Node 24) does not, and there the flag only costs (docs/benchmarks.md, "Start-up"). Set before undici
// compiles the module.
if (Number(process.versions.v8.split('.')[0]) < 13) {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  (require('node:v8') as typeof import('node:v8')).setFlagsFromString('--liftoff-only');
}
// Node 22.1+ keeps the compiled modules on disk (in the temp dir, or NODE_COMPILE_CACHE): a run starts
// without compiling costsync and its libraries again. Where the cache cannot be written, Node goes on without it.
// eslint-disable-next-line @typescript-eslint/no-require-imports
(require('node:module') as { enableCompileCache?: () => unknown }).enableCompileCache?.();
void import('./cli.js');
