/**
 * The storage role (ROLES compactor and/or flows): above the org databases of the orgs this process owns
 * (SHARD), their settings, profiles, triggers and flow definitions; compaction started, retention swept,
 * compacted log segments released, and an org whose database cannot be opened tried again. Sending is the
 * flows role's (flows.ts), registered after this one.
 */
import { ConsentStore } from '../reactions/consent/consent-store.js';
import { UnsubscribeLinks } from '../reactions/consent/unsubscribe-link.js';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { PeriodicTask } from '../core/periodic-task.js';
import { PlanFileSync } from '../reactions/triggers/plan-file-sync.js';
import { ownsOrg } from '../core/shard.js';
import { OrgUnavailable } from '../core/unavailable.js';
import { EmbeddedLog } from '../events/log/embedded-log.js';
import { JetStreamLog } from '../events/log/jetstream-log.js';
import { ContactStore } from '../events/profiles/contact-store.js';
import { ProfileMaterializer } from '../events/profiles/profile-materializer.js';
import { ProfileRefresher } from '../events/profiles/profile-refresher.js';
import { delaysAt } from '../events/compaction/profile-delays.js';
import { resolveWebhookSigningKey } from '../reactions/channels/webhook-signing.js';
import { FlowStore } from '../reactions/flows/store/flow-store.js';
import { OccurrenceStore } from '../reactions/flows/store/occurrence-store.js';
import { SendStore } from '../reactions/flows/store/send-store.js';
import { WaitStore } from '../reactions/flows/store/wait-store.js';
import { SendReports } from '../reactions/flows/reports/send-reports.js';
import { SqlChecker } from '../reactions/triggers/sql-checker.js';
import { TriggerStore } from '../reactions/triggers/trigger-store.js';
import { TraitValues } from '../reactions/triggers/trait-values.js';
import { SEGMENT_ROWS_PER_TRIGGER_ROW } from '../reactions/flows/run/trigger-window.js';
import { profileColumns } from '../events/profiles/profiles-view.js';
import { writeOrgSettings } from '../storage/migrate.js';
import { orgMemoryShare } from '../storage/open-storage.js';
import { Erasures } from '../privacy/erasure.js';
import { type RetentionPolicy, sweepExpired } from './retention.js';
import { runSteps } from './run-steps.js';

/** Expired rows are few between two passes an hour apart, so each pass is a handful of batches. */
const RETENTION_SWEEP_INTERVAL_MS = 60 * 60 * 1000;
/** How often unavailable orgs are asked for again (a storage-process call, a stat of their files): a restored org loads within it. */
const RECOVERY_CHECK_MS = 1_000;
/** How often orgs are looked at for traits to compute (a commit or a new version since; trait-values.ts paces each org). */
const TRAIT_CHECK_MS = 100;
/** How often QUERIES_DIR's plans folders are read (as trigger files are: a second of delay is fine). */
const PLAN_FILES_POLL_MS = 1000;
/** How often compacted segments of the embedded log are looked for (a comparison of numbers, then unlinks). */
const LOG_RELEASE_INTERVAL_MS = 5_000;

export interface StorageRole {
  /** The orgs whose databases this process keeps (SHARD); every org with the default 0/1. */
  owns(slug: string): boolean;
  materializer: ProfileMaterializer;
  refresher: ProfileRefresher;
  contacts: ContactStore;
  triggers: TriggerStore;
  /** Values of the traits written in SQL (computed after commits; `changed` after a PUT or DELETE). */
  traits: TraitValues;
  /** Tracking plans' files in QUERIES_DIR (issue 42): taken in when they change, written by PUT. */
  planFiles: PlanFileSync;
  flows: FlowStore;
  /** The flows' other tables, one owner each (reactions/flows/store/), and what the admin API reads of sends and decisions. */
  flowTables: { sends: SendStore; waits: WaitStore; occurrences: OccurrenceStore; reports: SendReports };
  consent: ConsentStore;
  /** Contact erasures and suppressions (erasure.ts). */
  erasures: Erasures;
  /** Unsubscribe links of messages (the key derived from the signing key; PUBLIC_URL their base). */
  links: UnsubscribeLinks;
  signingKey: string;
  /** One retention pass over every owned org's database (hourly by itself; tests call it). */
  sweepRetention(): Promise<void>;
  /** An org's database opens again after it could not be (the flows role resumes its pending sends). */
  onOrgAvailable(listener: (slug: string) => Promise<void>): void;
  /** A deleted org's data is about to go (the flows role stops its runs and sends first). */
  onOrgDropped(listener: (slug: string) => Promise<void>): void;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Present with the compactor or flows role. */
    storageRole: StorageRole | undefined;
  }
}

export const storageRole = fp(
  async (app: FastifyInstance) => {
    const { config, ctx, metrics, orgs, profiles, profileFeed: feed, eventLog: log, log: logger, freshness } = app;
    const storage = app.orgStorage!;
    const orgData = storage.orgs;
    const owns = (slug: string) => ownsOrg(config.shard, slug);
    const materializer = new ProfileMaterializer(
      orgData,
      profiles,
      feed ? (org, profile, custom) => feed.publish(org, profile, custom) : undefined,
      feed ? (org, hash) => feed.remove(org, hash) : undefined,
    );
    const refresher = new ProfileRefresher(materializer, (err) => logger.error({ err }, 'profile refresh failed'));
    app.storageEvents.onCompacted((report) => {
      refresher.enqueue(report.touched, {
        backlog: report.backlog,
        // Lookups see these events now: their receipt → profile delay (docs/operations/metrics.md).
        refreshed: () => metrics.profileDelay.observeBatch(delaysAt(report.received, ctx.clock.now())),
      });
      // Each org's as soon as its own line has refreshed them (profile-refresher.ts), not after the others'.
      for (const [org, receivedAt] of report.newest) {
        void refresher.whenRefreshed(org).then(() => {
          freshness.refreshed(org, receivedAt);
          feed?.publishFolded(org, receivedAt);
        });
      }
      // After the enqueue: a reader told of the commit and waiting for its refresh waits for this one.
      freshness.committed(report.newest);
      for (const [org] of report.newest) traits.changed(org);
    });
    if (storage.compaction) freshness.reflectWith({ compaction: storage.compaction, refresher, owns });
    const flows = new FlowStore(orgData, ctx);
    const share = orgMemoryShare(config);
    const checker = new SqlChecker({ memoryLimit: share.limit, memoryLimitBytes: share.bytes });
    const triggers: TriggerStore = new TriggerStore(orgData, ctx, {
      queriesDir: config.queriesDir,
      logger,
      orgExists: (slug) => owns(slug) && orgs.cached(slug) !== undefined,
      timeoutMs: config.triggerTimeoutMs,
      checker,
      customColumns: (slug) => profileColumns(profiles.customFields(slug), traits.types(slug)),
    });
    const traits: TraitValues = new TraitValues({
      orgs: orgData,
      triggers,
      refresher,
      fields: (org, names) => profiles.addCustomFields(org, names),
      ctx,
      timeoutMs: config.triggerTimeoutMs,
      maxRows: config.triggerMaxRows * SEGMENT_ROWS_PER_TRIGGER_ROW,
      onError: (err, org) => logger.error({ err, org }, 'computing traits failed'),
    });
    const traitTask = new PeriodicTask(() => traits.computeDue(), (err) => logger.error({ err }, 'computing traits failed'));
    const planFiles = new PlanFileSync(config.queriesDir, { plans: app.plans, logger });
    const ownedOrgs = async () => (await orgs.list()).map((org) => org.slug).filter(owns);
    const planTask = new PeriodicTask(async () => planFiles.scan(await ownedOrgs()), (err) => logger.error({ err }, 'reading plan files failed'));

    const policy: RetentionPolicy = {
      eventsDays: config.retentionEventsDays,
      eventsByEventTimeDays: config.retentionEventsByEventTimeDays,
      quarantineDays: config.retentionQuarantineDays,
      decisionsDays: config.retentionDecisionsDays,
      sendsContentDays: config.retentionSendsContentDays,
    };
    const sweepRetention = async (): Promise<void> => {
      await eachOrg((await orgData.slugs()).filter(owns), async (slug) => {
        // An org's own settings (its `retention`) override the service's, member by member.
        const { rows } = await sweepExpired(orgData.org(slug), { ...policy, ...orgs.cached(slug)?.retention }, ctx.clock.now());
        for (const [table, count] of Object.entries(rows)) if (count > 0) metrics.retentionDeletedRows.inc({ table }, count);
      });
    };
    const retention = new PeriodicTask(sweepRetention, (err) => logger.error({ err }, 'retention sweep failed'));
    // The embedded log's segments are deleted once compaction holds their records (LOG_RETENTION_HOURS).
    const compaction = storage.compaction;
    const logRelease =
      log instanceof EmbeddedLog && compaction
        ? new PeriodicTask(async () => void (await log.release(compaction.retainFromSeq)), (err) => logger.error({ err }, 'deleting compacted log segments failed'))
        : undefined;

    const available: Array<(slug: string) => Promise<void>> = [];
    const dropped: Array<(slug: string) => Promise<void>> = [];
    /**
     * One org's settings, profiles, triggers and flows, from its database. A damaged database is its org's
     * problem alone: the others load. Its API answers say so (503 org_unavailable), /readyz names it, its
     * events wait in the log, and it is loaded again once its database opens (a restored file, say).
     */
    const unloaded = new Set<string>();
    const markUnavailable = (slug: string, error: OrgUnavailable): void => {
      if (!unloaded.has(slug)) logger.error({ org: slug, reason: error.reason }, 'org database cannot be opened or read; this org is unavailable, every other org runs');
      unloaded.add(slug);
      profiles.setUnavailable(slug, true);
    };
    /**
     * `work` for each org in turn: one whose database is found unavailable (at open, or by a statement
     * that reads a damaged block) is marked so and skipped, never stopping the others.
     */
    async function eachOrg(slugs: readonly string[], work: (slug: string) => Promise<void>): Promise<void> {
      for (const slug of slugs) {
        await work(slug).catch((error: unknown) => {
          if (!(error instanceof OrgUnavailable)) throw error;
          markUnavailable(slug, error);
        });
      }
    }
    const loadOrg = async (slug: string): Promise<void> => {
      const org = orgs.cached(slug);
      if (!org) return;
      try {
        await writeOrgSettings(orgData.org(slug), org);
        await materializer.refreshOrg(slug);
        await triggers.load(slug);
        await traits.load(slug);
        await flows.load(slug);
        profiles.setUnavailable(slug, false);
        if (unloaded.delete(slug)) {
          logger.info({ org: slug }, 'org database opens again; the org is available');
          // Erasures it had pending at start were left for now (their tombstones were in force meanwhile).
          await erasures.resumePending(slug);
          for (const listener of available) await listener(slug);
        }
      } catch (error) {
        if (!(error instanceof OrgUnavailable)) throw error;
        markUnavailable(slug, error);
      }
    };
    const recovery = new PeriodicTask(
      async () => {
        // An org found damaged at run time (a lookup, a flow, compaction reading a bad block) is made
        // unavailable here too, so that it is loaded again (a restored file's triggers and flows) once
        // its database opens. A storage process restarting says nothing this time: the next pass asks.
        for (const [slug, reason] of Object.entries(await storage.unavailable().catch(() => ({})))) {
          if (owns(slug) && orgs.cached(slug) && !unloaded.has(slug)) markUnavailable(slug, new OrgUnavailable(slug, reason));
        }
        for (const slug of [...unloaded]) await loadOrg(slug);
      },
      (err) => logger.error({ err }, 'loading an unavailable org again failed'),
    );

    /** A deleted org's data goes: flows stop, then its database, its events in the stream and its published profiles. */
    const dropOrg = async (slug: string): Promise<void> => {
      flows.forget(slug);
      for (const listener of dropped) await listener(slug);
      triggers.forget(slug);
      await traits.forget(slug);
      unloaded.delete(slug);
      await orgData.drop(slug);
      if (log instanceof JetStreamLog) await log.purgeOrg(slug);
      await feed?.purgeOrg(slug);
      logger.info({ org: slug }, 'org deleted: its database, events and profiles are gone');
    };

    const erasures = new Erasures({
      orgs: orgData,
      log: log!,
      compaction,
      materializer,
      profilesSettled: () => refresher.settled(),
      ctx,
      metrics,
      logger,
    });

    const signingKey = resolveWebhookSigningKey(config.webhookSigningKey, config.dataDir, ctx.randomBytes);
    app.decorate('storageRole', {
      owns,
      materializer,
      refresher,
      contacts: new ContactStore(orgData, ctx),
      triggers,
      traits,
      planFiles,
      flows,
      flowTables: { sends: new SendStore(orgData), waits: new WaitStore(orgData), occurrences: new OccurrenceStore(orgData), reports: new SendReports(orgData) },
      consent: new ConsentStore(orgData),
      erasures,
      links: new UnsubscribeLinks(signingKey, config.publicUrl ?? `http://${config.host}:${config.port}`),
      signingKey,
      sweepRetention,
      onOrgAvailable: (listener) => void available.push(listener),
      onOrgDropped: (listener) => void dropped.push(listener),
    } satisfies StorageRole);
    // Stops recovery, then finishes the compaction batch and the profile refreshes it queued, and their publishing.
    const steps = [() => erasures.close(), () => recovery.stop(), () => traitTask.stop(), () => planTask.stop(), () => traits.settled(), () => retention.stop()];
    app.addHook('onClose', () => runSteps([...steps, () => logRelease?.stop(), () => storage.compaction?.stop(), () => refresher.settled(), () => feed?.flushed(), () => checker.close()]));

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
    for (const org of (await orgs.list()).filter((org) => owns(org.slug))) await loadOrg(org.slug);
    recovery.start(RECOVERY_CHECK_MS);
    await triggers.scan();
    traitTask.start(TRAIT_CHECK_MS);
    await planFiles.scan(await ownedOrgs());
    planTask.start(PLAN_FILES_POLL_MS);
    await compaction?.start();
    // Erasures an earlier process left pending (their tombstones are in force already).
    await eachOrg(
      (await orgData.slugs()).filter((slug) => owns(slug) && !unloaded.has(slug) && orgs.cached(slug)),
      (slug) => erasures.resumePending(slug),
    );
    if (compaction) retention.start(RETENTION_SWEEP_INTERVAL_MS);
    logRelease?.start(LOG_RELEASE_INTERVAL_MS);
  },
  { name: 'audience-storage-role', dependencies: ['audience-control', 'audience-profile-feed', 'audience-event-log', 'audience-org-storage'] },
);
