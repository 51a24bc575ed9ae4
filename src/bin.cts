#!/usr/bin/env -S MALLOC_ARENA_MAX=1 node --max-semi-space-size=2 --max-old-space-size=96
/**
 * The `costsync` executable. A CommonJS file on purpose: it runs before Node's ESM loader first uses
 * libuv's thread pool, so the pool size set here takes effect (set from an ES module, it is too late).
 *
 * Why one thread: DuckDB's queries and Node's file I/O run on that pool, and each thread that runs a
 * DuckDB task keeps its own malloc arena, which grows a long sync's RSS with every thread. One
 * thread costs unthrottled speed, which a sync under the API's rate limit never reaches
 * (docs/benchmarks.md has the figures). A value the user sets wins. The small young generation (the shebang) keeps the heap near
 * its live size: pages are short-lived garbage. One malloc arena (set by the shebang, before Node
 * starts: glibc reads it once) for the same reason: it lowers peak RSS in the same CPU time
 * (glibc's default is 8 arenas a core).
 */
process.env.UV_THREADPOOL_SIZE ??= '1';
// Node 22.1+ keeps the compiled modules on disk (in the temp dir, or NODE_COMPILE_CACHE): a run starts
// without compiling costsync and its libraries again. Where the cache cannot be written, Node goes on without it.
// eslint-disable-next-line @typescript-eslint/no-require-imports
(require('node:module') as { enableCompileCache?: () => unknown }).enableCompileCache?.();
void import('./cli.js');
