/**
 * Process settings that must be in place before any I/O starts; imported first by the CLI.
 *
 * DuckDB's queries and Node's file I/O run on libuv's thread pool (4 threads by default). Each
 * thread that runs a DuckDB task gets its own malloc arena, and each arena keeps what it freed, so
 * a long sync's RSS grows by tens of MB per thread. One thread keeps a 5-million-row sync at about
 * 280 MB instead of 345 MB; it costs a quarter of the unthrottled speed, which a sync under the
 * API's rate limit never reaches (the request-rate benchmark is unchanged). A value set by the user wins.
 */
process.env.UV_THREADPOOL_SIZE ??= '1';
