/**
 * The V8 flags every process of the service is started with: `npm start`, the Dockerfile, the systemd
 * unit, `npm run cluster` and the storage process (test/deploy/deploy-files.test.ts holds them together).
 *
 * `--max-semi-space-size=64` (MB; V8's default here is 16): a batch of 100 events holds ~1 MB of parsed
 * body, members and log entries until its write is durable, and 50 batches in flight outlive a 16 MB young
 * generation, so they were copied and promoted to the old one before dying — garbage collection took
 * 27 % of the main thread. With 64 MB they die young: `npm run bench -- --only speed --speed-paths
 * bare-batch,batch`, alternated, 2 cores: batch 707–761 → 945–1,078 req/s of 100 events, the main
 * process's CPU per batch 1,410–1,660 → 940–1,190 µs, the main process's peak RSS 769 → 600 MB; the
 * compaction drain 59.6k–63.3k → 65.5k–67.6k events/s; collect and lookups unchanged. 128 gains nothing more.
 * The cost: once grown, V8 keeps the young generation (after an import and lookups, 448 against 289 MB).
 */
export const SERVICE_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=64'];
