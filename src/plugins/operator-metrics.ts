/**
 * The metrics an operator alerts on beyond the counters the paths keep themselves: request duration by
 * route and status, and gauges read at scrape time (readiness, profiles held, the embedded log's size, free space
 * in DATA_DIR). Dashboard and alert rules: deploy/grafana/, deploy/prometheus/.
 */
import { statfs } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';
import type { EmbeddedLog } from '../events/log/embedded-log.js';
import { type Metrics, registerScrapedGauge, seriesBy } from '../ops/metrics.js';
import type { CompactionLag } from '../ops/compaction-lag.js';

export function observeRequestDurations(app: FastifyInstance, metrics: Metrics): void {
  // One labelled series per route, method and status, made once (seriesBy): prom-client's
  // observe(labels, value) hashes the label object on every call (~5 µs of a ~60 µs lookup).
  const series = seriesBy((route) => seriesBy((method) => seriesBy((status) => metrics.httpRequestSeconds.labels(method, route, status))));
  app.addHook('onResponse', (request, reply, done) => {
    // The route pattern, never the raw URL: one series per route, whatever paths clients invent.
    series(request.routeOptions.url ?? 'unmatched')(request.method)(String(reply.statusCode)).observe(reply.elapsedTime / 1000);
    done();
  });
}

export function registerOperatorGauges(
  metrics: Metrics,
  sources: {
    ready: () => Promise<boolean>;
    profileEntries: () => number;
    /** Where this process compacts. */
    lag: CompactionLag | undefined;
    embeddedLog: EmbeddedLog | undefined;
    dataDir: string | undefined;
  },
): void {
  registerScrapedGauge(metrics, 'audience_ready', '1 while GET /readyz answers 200, else 0', async () => ((await sources.ready()) ? 1 : 0));
  registerScrapedGauge(metrics, 'audience_profile_index_entries', 'Contact profiles held in memory for Audience API lookups and flows', sources.profileEntries);
  const { embeddedLog, dataDir, lag } = sources;
  if (lag) {
    registerScrapedGauge(metrics, 'audience_compaction_lag_records', 'Log records appended but not yet compacted into the org databases', async () => (await lag.read()).records);
    registerScrapedGauge(
      metrics,
      'audience_compaction_lag_seconds',
      'How long the oldest record not yet compacted has waited, at least (0 when caught up): how far profiles, lookups and triggers are behind the log',
      async () => (await lag.read()).seconds,
    );
  }
  if (embeddedLog) {
    registerScrapedGauge(metrics, 'audience_log_bytes', 'Size of the embedded event log on disk (every segment)', () => embeddedLog.bytes);
    registerScrapedGauge(metrics, 'audience_log_segments', 'Segment files of the embedded event log', () => embeddedLog.segmentCount);
  }
  if (dataDir) {
    registerScrapedGauge(metrics, 'audience_data_dir_available_bytes', 'Free space for the service on the file system of DATA_DIR', async () => {
      const fs = await statfs(dataDir);
      return fs.bavail * fs.bsize;
    });
  }
}
