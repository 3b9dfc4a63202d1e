/** Prometheus metrics (SPEC 9), one registry per app instance (no module-level singletons). */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return {
    registry,
    eventsAccepted: new Counter({
      name: 'audience_events_accepted_total',
      help: 'Events acknowledged with 200 (durable in the log)',
      labelNames: ['environment'] as const,
      registers: [registry],
    }),
    eventsRejected: new Counter({
      name: 'audience_events_rejected_total',
      help: 'Collect requests answered with an error, by code',
      labelNames: ['code'] as const,
      registers: [registry],
    }),
    eventsQuarantined: new Counter({
      name: 'audience_events_quarantined_total',
      help: 'Rows written to quarantine by the compactor, by code',
      labelNames: ['code'] as const,
      registers: [registry],
    }),
    duplicatesDropped: new Counter({
      name: 'audience_events_duplicate_total',
      help: 'Events dropped at compaction as repeats of a messageId seen within 24 h',
      registers: [registry],
    }),
    eventsKeptOut: new Counter({
      name: 'audience_events_kept_out_total',
      help: 'Events not compacted because their contact was erased (an event from before the erasure) or is suppressed',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    erasures: new Counter({
      name: 'audience_erasures_total',
      help: 'Contact erasures finished, by whether the contact is also suppressed',
      labelNames: ['suppress'] as const,
      registers: [registry],
    }),
    logAppendSeconds: new Histogram({
      name: 'audience_log_append_seconds',
      help: 'Duration of one durable log write (a group of events)',
      buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers: [registry],
    }),
    logRecordsLost: new Counter({
      name: 'audience_log_records_lost_total',
      help: 'Log positions removed before compaction read them, past what every org held: their events are lost (should stay 0)',
      registers: [registry],
    }),
    lookups: new Counter({
      name: 'audience_lookups_total',
      help: 'Audience API lookups answered, by HTTP status',
      labelNames: ['status'] as const,
      registers: [registry],
    }),
    rateLimited: new Counter({
      name: 'audience_rate_limited_total',
      help: 'Requests refused with 429, by rate-limit policy (org, auth, admin-auth)',
      labelNames: ['policy'] as const,
      registers: [registry],
    }),
    rateLimitFallback: new Counter({
      name: 'audience_rate_limit_fallback_total',
      help: 'Rate-limit decisions made with this process\'s share because Redis (REDIS_URL) did not answer, by policy',
      labelNames: ['policy'] as const,
      registers: [registry],
    }),
    rateLimitShared: new Gauge({
      name: 'audience_rate_limit_shared',
      help: '1 while rate limits are one budget shared through Redis (REDIS_URL); 0 without REDIS_URL or while Redis does not answer',
      registers: [registry],
    }),
    profileDelay: batchObserved(new Histogram({
      name: 'audience_profile_delay_seconds',
      help: 'Event → profile delay: from the event\'s receipt (just before its durable append and 200) to when lookups see it (the compaction batch holding it committed, the profiles it touched refreshed); one observation per event compacted',
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
      registers: [registry],
    })),
    compactionBatchSeconds: new Histogram({
      name: 'audience_compaction_batch_seconds',
      help: 'Duration of one compaction transaction',
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 5],
      registers: [registry],
    }),
    triggerRunSeconds: new Histogram({
      name: 'audience_trigger_run_seconds',
      help: 'Duration of one flow run: trigger query over the window, decisions, outbox write, cursor advance',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
      registers: [registry],
    }),
    triggerQuerySeconds: new Histogram({
      name: 'audience_trigger_query_seconds',
      help: 'Duration of the trigger SQL alone over one window (part of audience_trigger_run_seconds)',
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 10],
      registers: [registry],
    }),
    flowDecisions: new Counter({
      name: 'audience_flow_decisions_total',
      help: 'Trigger rows decided by flows, by outcome',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    flowFoldWaitSeconds: new Histogram({
      name: 'audience_flow_fold_wait_seconds',
      help: 'How long a flow decision waited for the events acknowledged before it to be compacted and folded into profiles, by source (trigger, step, scheduled, deferred)',
      labelNames: ['source'] as const,
      buckets: [0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    flowFoldBehind: new Counter({
      name: 'audience_flow_fold_behind_total',
      help: 'Flow decisions not made because the fold did not reach the events acknowledged before them within 10 s; each is tried again, by source',
      labelNames: ['source'] as const,
      registers: [registry],
    }),
    consentChanges: new Counter({
      name: 'audience_consent_changes_total',
      help: 'Consent changes recorded (unsubscribes among them), by source (admin, link) and new status',
      labelNames: ['source', 'status'] as const,
      registers: [registry],
    }),
    retentionDeletedRows: new Counter({
      name: 'audience_retention_deleted_rows_total',
      help: 'Rows deleted (flow_sends: contents cleared) by retention, by table',
      labelNames: ['table'] as const,
      registers: [registry],
    }),
    httpRequestSeconds: new Histogram({
      name: 'audience_http_request_duration_seconds',
      help: 'HTTP requests by method, route pattern (unmatched for unknown paths) and status',
      labelNames: ['method', 'route', 'status'] as const,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
      registers: [registry],
    }),
    storageRestarts: new Counter({
      name: 'audience_storage_restarts_total',
      help: 'Storage processes started to replace one that ended: cause query_killed (an org query ran past its deadline and could not be interrupted) or ended (a crash, the OOM killer)',
      labelNames: ['cause'] as const,
      registers: [registry],
    }),
    sends: new Counter({
      name: 'audience_sends_total',
      help: 'Flow sends finished, by channel and status (delivered, failed, dead)',
      labelNames: ['channel', 'status'] as const,
      registers: [registry],
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;

/** `[value, count]`: `count` observations of `value` (a compaction batch's events share few distinct values). */
export type Observations = ReadonlyArray<readonly [value: number, count: number]>;

/** A histogram also observed in batches (a compaction batch's events, counted per value). */
function batchObserved(histogram: Histogram) {
  return {
    histogram,
    observeBatch(observations: Observations): void {
      for (const [value, count] of observations) for (let i = 0; i < count; i++) histogram.observe(value);
    },
  };
}

/** audience_org_databases_open, read from the pool when scraped (it lives where DuckDB does). */
export function registerOrgDatabasesGauge(metrics: Metrics, poolStats: () => Promise<{ open: number; highWater: number }>): void {
  new Gauge({
    name: 'audience_org_databases_open',
    help: 'Org databases (DATA_DIR/orgs/<org>.duckdb) open now; at most ORG_DATABASES_MAX_OPEN',
    registers: [metrics.registry],
    async collect() {
      // A storage process being replaced must not fail (or hold) the whole scrape.
      const stats = await poolStats().catch(() => undefined);
      if (stats) this.set(stats.open);
    },
  });
}

/** A gauge read when Prometheus scrapes; nothing is polled between scrapes. Undefined leaves it unset. */
export function registerScrapedGauge(metrics: Metrics, name: string, help: string, read: () => number | undefined | Promise<number | undefined>): void {
  new Gauge({
    name,
    help,
    registers: [metrics.registry],
    async collect() {
      // A failing source must not fail the whole scrape.
      const value = await Promise.resolve().then(read).catch(() => undefined);
      if (value !== undefined) this.set(value);
    },
  });
}

/** A metric the storage process reports to the service's registry (over its IPC channel). */
export type MetricUpdate =
  | { metric: 'compactionBatchSeconds'; seconds: number }
  | { metric: 'eventsQuarantined'; code: string }
  | { metric: 'duplicatesDropped'; count: number }
  | { metric: 'eventsKeptOut'; reason: 'erased' | 'suppressed'; count: number }
  | { metric: 'logRecordsLost'; count: number };

/** A metric update the storage worker's compactor sent, applied to this thread's registry. */
export function applyMetric(metrics: Metrics, update: MetricUpdate): void {
  switch (update.metric) {
    case 'compactionBatchSeconds':
      return metrics.compactionBatchSeconds.observe(update.seconds);
    case 'eventsQuarantined':
      return metrics.eventsQuarantined.inc({ code: update.code });
    case 'duplicatesDropped':
      return metrics.duplicatesDropped.inc(update.count);
    case 'eventsKeptOut':
      return metrics.eventsKeptOut.inc({ reason: update.reason }, update.count);
    case 'logRecordsLost':
      return metrics.logRecordsLost.inc(update.count);
  }
}

/**
 * A metric's series by one label value, made on first use: prom-client's inc(labels)/observe(labels)
 * hashes the label object on every call (~2 µs), which the hot paths (a lookup, an event) avoid this way.
 */
export function seriesBy<T>(make: (value: string) => T): (value: string) => T {
  const made = new Map<string, T>();
  return (value) => {
    let series = made.get(value);
    if (series === undefined) made.set(value, (series = make(value)));
    return series;
  };
}
