/**
 * Process settings that must be in place before any I/O starts; imported first by the CLI.
 *
 * DuckDB's queries and Node's file I/O run on libuv's thread pool (4 threads by default). Each
 * thread that allocates gets its own glibc malloc arena, and each arena keeps freed memory, so
 * four threads cost up to about 100 MB of RSS in a long sync for no speed: DuckDB runs one
 * thread (`threads = 1`) and a window's I/O is one file at a time. Two threads keep file writes
 * moving while a window loads. A value set by the user wins.
 */
process.env.UV_THREADPOOL_SIZE ??= '2';
