/**
 * The storage role (ROLES compactor and/or flows): the databases of the orgs this process owns (SHARD),
 * compaction of their events, their profiles, triggers and flows. The only role that opens DuckDB.
 * `start` loads the owned orgs and sets everything going; the stop steps run in app.ts's close order.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../core/config.js';
import type { Context } from '../core/context.js';
import { openChannels } from '../reactions/channels/open-channels.js';
import { resolveWebhookSigningKey } from '../reactions/channels/webhook-signing.js';
import { FlowRunner } from '../reactions/flows/flow-runner.js';
import { FlowStore } from '../reactions/flows/flow-store.js';
import { SendDispatcher } from '../reactions/flows/send-dispatcher.js';
import { SendStore } from '../reactions/flows/send-store.js';
import { TemplateRenderer } from '../reactions/flows/template-renderer.js';
import { EmbeddedLog } from '../events/log/embedded-log.js';
import { JetStreamLog } from '../events/log/jetstream-log.js';
import type { LogBackend } from '../events/log/types.js';
import { type Metrics, applyMetric, registerOrgDatabasesGauge, registerScrapedGauge } from '../ops/metrics.js';
import type { OrgStore } from '../control/org-store.js';
import { ContactStore } from '../events/profiles/contact-store.js';
import type { ProfileFeed } from '../events/profiles/profile-feed.js';
import type { ProfileIndex } from '../events/profiles/profile-index.js';
import { ProfileMaterializer } from '../events/profiles/profile-materializer.js';
import { ProfileRefresher } from '../events/profiles/profile-refresher.js';
import { writeOrgSettings } from '../storage/migrate.js';
import { openStorage, orgMemoryShare, type Storage } from '../storage/open-storage.js';
import { OrgUnavailable, REOPEN_DAMAGED_AFTER_SECONDS } from '../core/unavailable.js';
import { type RetentionPolicy, sweepExpired } from '../storage/retention.js';
import { ownsOrg } from '../core/shard.js';
import { PeriodicTask } from '../core/periodic-task.js';
import { SINGLE_FILE, SPLIT_SUFFIX, splitSingleFile } from '../storage/split-single-file.js';
import { SqlChecker } from '../reactions/triggers/sql-checker.js';
import { TriggerStore } from '../reactions/triggers/trigger-store.js';

/** How often QUERIES_DIR is read for changed trigger and segment files. */
const QUERIES_POLL_MS = 1000;

export interface StorageRoleDeps {
  config: Config;
  ctx: Context;
  log: LogBackend;
  metrics: Metrics;
  orgs: OrgStore;
  /** The process's serving index: this role keeps its orgs' profiles in it. */
  profiles: ProfileIndex;
  /** NATS mode: every materialized profile is published for the `api` processes. */
  feed: ProfileFeed | undefined;
  logger: FastifyBaseLogger;
}

export interface StorageRole {
  storage: Storage;
  /** The orgs whose databases this process keeps (SHARD); every org with the default 0/1. */
  owns(slug: string): boolean;
  materializer: ProfileMaterializer;
  refresher: ProfileRefresher;
  contacts: ContactStore;
  triggers: TriggerStore;
  flows: FlowStore;
  /** Present with the flows role. */
  runner: FlowRunner | undefined;
  dispatcher: SendDispatcher | undefined;
  renderer: TemplateRenderer | undefined;
  signingKey: string;
  /** One retention pass over every owned org's database (hourly by itself; tests call it). */
  sweepRetention(): Promise<void>;
  /** Loads the owned orgs (settings, profiles, triggers, flows), then starts compaction and flows. */
  start(): Promise<void>;
  /** Stops polling trigger files, lets a running flow run finish, stops deliveries (retries stay pending). */
  stopFlows(): Promise<void>;
  /** Finishes the compaction batch and the profile refreshes it queued, and their publishing. */
  stopCompaction(): Promise<void>;
  /** Closes the databases (and ends the storage process). */
  close(): Promise<void>;
  /** A new storage process took over: sends the old one had recorded but not delivered are resumed. */
  storageRestarted(): Promise<void>;
}

export async function openStorageRole(deps: StorageRoleDeps): Promise<StorageRole> {
  const { config, logger } = deps;
  // A DATA_DIR from before per-org storage is split first, before anything opens its files.
  const split = await splitSingleFile(config.dataDir);
  if (split) logger.info({ orgs: split.length }, `split ${SINGLE_FILE} into one database per org (the old file is kept as ${SINGLE_FILE}${SPLIT_SUFFIX})`);
  // The refresher is made below; compaction only commits once started.
  const storage = await openStorage({
    config,
    ctx: deps.ctx,
    log: deps.log,
    metrics: deps.metrics,
    onMetric: (update) => applyMetric(deps.metrics, update),
    logger,
    onCompacted: (report) => role?.refresher.enqueue(report.touched, { backlog: report.backlog }),
    onRestarted: (_reason, queryKilled) => {
      deps.metrics.storageRestarts.inc({ cause: queryKilled ? 'query_killed' : 'ended' });
      void role?.storageRestarted();
    },
  });
  let role: StorageRole | undefined;
  try {
    role = assemble(deps, storage);
    return role;
  } catch (error) {
    await storage.close();
    throw error;
  }
}

/** Expired rows are few between two passes an hour apart, so each pass is a handful of batches. */
const RETENTION_SWEEP_INTERVAL_MS = 60 * 60 * 1000;
/** How often compacted segments of the embedded log are looked for (a comparison of numbers, then unlinks). */
const LOG_RELEASE_INTERVAL_MS = 5_000;

/** Everything above the databases; nothing here opens a file or a connection until `start`. */
function assemble(deps: StorageRoleDeps, storage: Storage): StorageRole {
  const { config, ctx, metrics, orgs, logger } = deps;
  registerOrgDatabasesGauge(metrics, storage.poolStats);
  const orgData = storage.orgs;
  const owns = (slug: string) => ownsOrg(config.shard, slug);
  const feed = deps.feed;
  const materializer = new ProfileMaterializer(orgData, deps.profiles, feed ? (org, profile, custom) => feed.publish(org, profile, custom) : undefined);
  const refresher = new ProfileRefresher(materializer, (err) => logger.error({ err }, 'profile refresh failed'));
  const signingKey = resolveWebhookSigningKey(config.webhookSigningKey, config.dataDir, ctx.randomBytes);
  const flows = new FlowStore(orgData, ctx);
  const sends = new SendStore(orgData);
  // Checker processes start with the first check.
  const share = orgMemoryShare(config);
  const checker = new SqlChecker({ memoryLimit: share.limit, memoryLimitBytes: share.bytes });
  const triggers = new TriggerStore(orgData, ctx, {
    queriesDir: config.queriesDir,
    logger,
    orgExists: (slug) => owns(slug) && orgs.cached(slug) !== undefined,
    timeoutMs: config.triggerTimeoutMs,
    checker,
  });
  const flowsRole = config.roles.includes('flows');
  // Message templates render on their own worker thread.
  const renderer = flowsRole ? new TemplateRenderer() : undefined;
  const channels = flowsRole
    ? openChannels({
        dataDir: config.dataDir,
        ...(config.smtpUrl ? { smtpUrl: config.smtpUrl } : {}),
        allowPrivate: config.webhookAllowPrivate,
        timeoutMs: config.webhookTimeoutMs,
        signingKey,
        clock: ctx.clock,
      })
    : undefined;
  const dispatcher = channels
    ? new SendDispatcher({
        sends,
        ctx,
        channels,
        policy: { maxAttempts: config.webhookMaxAttempts, baseDelayMs: config.webhookBackoffMs, maxDelayMs: 60 * 60 * 1000 },
        metrics,
        logger,
        onDelivered: (org, emails) => refresher.enqueue(emails.map((email) => ({ org, email }))),
      })
    : undefined;
  if (dispatcher) {
    registerScrapedGauge(metrics, 'audience_sends_pending', 'Flow sends queued, in flight or waiting for a retry in this process', () => dispatcher.pending);
  }
  const runner =
    dispatcher && renderer
      ? new FlowRunner({
          orgs: orgData,
          ctx,
          flows,
          sends,
          triggers,
          profiles: deps.profiles,
          dispatcher,
          renderer,
          metrics,
          logger,
          timeoutMs: config.triggerTimeoutMs,
          maxRows: config.triggerMaxRows,
          refreshProfiles: (keys) => refresher.enqueue(keys),
        })
      : undefined;

  const policy: RetentionPolicy = {
    eventsDays: config.retentionEventsDays,
    eventsByEventTimeDays: config.retentionEventsByEventTimeDays,
    quarantineDays: config.retentionQuarantineDays,
    decisionsDays: config.retentionDecisionsDays,
    sendsContentDays: config.retentionSendsContentDays,
  };
  const sweepRetention = async (): Promise<void> => {
    for (const slug of (await orgData.slugs()).filter(owns)) {
      // An org's own settings (its `retention`) override the service's, member by member.
      const { rows } = await sweepExpired(orgData.org(slug), { ...policy, ...orgs.cached(slug)?.retention }, ctx.clock.now());
      for (const [table, count] of Object.entries(rows)) if (count > 0) metrics.retentionDeletedRows.inc({ table }, count);
    }
  };
  const retention = new PeriodicTask(sweepRetention, (err) => logger.error({ err }, 'retention sweep failed'));
  // The embedded log's segments are deleted once compaction holds their records (LOG_RETENTION_HOURS).
  const { log } = deps;
  const compaction = storage.compaction;
  const logRelease =
    log instanceof EmbeddedLog && compaction
      ? new PeriodicTask(async () => void (await log.release(compaction.retainFromSeq)), (err) => logger.error({ err }, 'deleting compacted log segments failed'))
      : undefined;

  /**
   * One org's settings, profiles, triggers and flows, from its database. A damaged database is its org's
   * problem alone: the others load. Its API answers say so (503 org_unavailable), /readyz names it, its
   * events wait in the log, and it is loaded again once its database opens (a restored file, say).
   */
  const unloaded = new Set<string>();
  const loadOrg = async (slug: string): Promise<void> => {
    const org = orgs.cached(slug);
    if (!org) return;
    try {
      await writeOrgSettings(orgData.org(slug), org);
      await materializer.refreshOrg(slug);
      await triggers.load(slug);
      await flows.load(slug);
      deps.profiles.setUnavailable(slug, false);
      if (unloaded.delete(slug)) {
        logger.info({ org: slug }, 'org database opens again; the org is available');
        await resumePending([slug]);
      }
    } catch (error) {
      if (!(error instanceof OrgUnavailable)) throw error;
      if (!unloaded.has(slug)) logger.error({ org: slug, reason: error.reason }, 'org database cannot be opened; this org is unavailable, every other org runs');
      unloaded.add(slug);
      deps.profiles.setUnavailable(slug, true);
    }
  };
  const recovery = new PeriodicTask(
    async () => {
      for (const slug of [...unloaded]) await loadOrg(slug);
    },
    (err) => logger.error({ err }, 'loading an unavailable org again failed'),
  );

  /** Sends recorded as pending and not queued in this process, org by org: one unavailable org does not hold the others'. */
  const resumePending = async (slugs: string[]): Promise<void> => {
    for (const slug of slugs) {
      await dispatcher?.resumePending([slug]).catch((err: unknown) => {
        if (err instanceof OrgUnavailable) return;
        logger.error({ err, org: slug }, 'resuming pending sends failed');
      });
    }
  };

  /** A deleted org's data goes: flows stop, then its database, its events in the stream and its published profiles. */
  const dropOrg = async (slug: string): Promise<void> => {
    flows.forget(slug);
    await runner?.forgetOrg(slug);
    triggers.forget(slug);
    dispatcher?.dropOrg(slug);
    unloaded.delete(slug);
    await orgData.drop(slug);
    if (log instanceof JetStreamLog) await log.purgeOrg(slug);
    await feed?.purgeOrg(slug);
    logger.info({ org: slug }, 'org deleted: its database, events and profiles are gone');
  };

  return {
    storage,
    owns,
    materializer,
    refresher,
    contacts: new ContactStore(orgData, ctx),
    triggers,
    flows,
    runner,
    dispatcher,
    renderer,
    signingKey,
    sweepRetention,
    async start() {
      // Orgs created or changed from here on reach their database through the org store's watch.
      orgs.onChange(async (org, previous) => {
        if (!owns(org.slug) || previous?.currencySymbol === org.currencySymbol) return;
        await writeOrgSettings(orgData.org(org.slug), org);
        if (previous) await materializer.refreshOrg(org.slug);
      });
      orgs.onDelete(async (slug) => {
        if (owns(slug)) await dropOrg(slug);
      });
      // An org deleted while this process was down (or before a crash finished dropping it).
      for (const slug of await orgData.slugs()) if (owns(slug) && orgs.isDeleted(slug)) await dropOrg(slug);
      // One pass per org, so its database is opened once for everything loaded from it (with more orgs
      // than ORG_DATABASES_MAX_OPEN, a pass per store would open each database once per store). The
      // settings are written again in case a crash came between the control plane and the org's database.
      const owned = (await orgs.list()).filter((org) => owns(org.slug));
      for (const org of owned) await loadOrg(org.slug);
      recovery.start(REOPEN_DAMAGED_AFTER_SECONDS * 1000);
      await triggers.scan();
      await storage.compaction?.start();
      if (storage.compaction) retention.start(RETENTION_SWEEP_INTERVAL_MS);
      logRelease?.start(LOG_RELEASE_INTERVAL_MS);
      if (runner && dispatcher) {
        triggers.watch(QUERIES_POLL_MS);
        await resumePending(owned.map((org) => org.slug));
        renderer?.start();
        runner.start();
      }
    },
    async stopFlows() {
      await runSteps([() => recovery.stop(), () => triggers.stopWatching(), () => runner?.close(), () => renderer?.close(), () => dispatcher?.close(), () => channels?.close()]);
    },
    async stopCompaction() {
      await runSteps([() => retention.stop(), () => logRelease?.stop(), () => storage.compaction?.stop(), () => refresher.settled(), () => feed?.flushed()]);
    },
    close: () => runSteps([() => checker.close(), () => storage.close()]),
    async storageRestarted() {
      // A flow run's commit may have been made just before the process ended, its answer lost: those
      // sends are pending in the database, not queued here. Queued ones are not queued twice.
      await resumePending((await orgs.list()).map((org) => org.slug).filter(owns));
    },
  };
}

/** Runs every step even when one fails (so each resource is released); throws the first failure. */
export async function runSteps(steps: Array<() => unknown>): Promise<void> {
  let failure: unknown;
  for (const step of steps) {
    try {
      await step();
    } catch (error) {
      failure ??= error;
    }
  }
  if (failure !== undefined) throw failure;
}
