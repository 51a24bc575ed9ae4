/**
 * The process settings the costsync executable gives itself (its shebang and `src/bin.cts`), for the test
 * workers that run costsync in-process: DuckDB and malloc then work there as in a user's run.
 * `test/architecture/worker-env.unit.test.ts` fails when they drift from the executable's.
 */
export const EXECUTABLE_PROCESS_ENV: Readonly<Record<string, string>> = {
  MALLOC_ARENA_MAX: '1',
  DUCKDB_JE_MALLOC_CONF: 'narenas:1',
  UV_THREADPOOL_SIZE: '2',
};
