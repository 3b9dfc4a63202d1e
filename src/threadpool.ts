/**
 * Sizes libuv's thread pool before anything uses it (imported first by server.ts; libuv reads the
 * variable once, when the pool starts). DuckDB runs every query on this pool, and so does every file
 * write of the embedded log. Its default of 4 threads can be held by untrusted queries that overran their
 * deadline and could not be interrupted (up to MAX_ABANDONED = 4, db/untrusted.ts): 16 leaves the
 * service's own writes and queries their threads. An operator's own UV_THREADPOOL_SIZE wins.
 */
process.env.UV_THREADPOOL_SIZE ??= '16';
