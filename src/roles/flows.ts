/**
 * The flows role (ROLES flows): runs flows over the trigger results of the orgs the storage role keeps,
 * renders their messages on a worker thread and sends them through the channels. Needs the storage role,
 * registered before it.
 */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { OrgUnavailable } from '../core/unavailable.js';
import { capacityErrorsAtWarn } from '../http/capacity-log.js';
import { registerScrapedGauge } from '../ops/metrics.js';
import { openChannels } from '../reactions/channels/open-channels.js';
import { QuarantineAlerts } from '../reactions/alerts/quarantine-alerts.js';
import { PeriodicTask } from '../core/periodic-task.js';
import { TriggerRuns } from '../reactions/flows/run/trigger-runs.js';
import { SEGMENT_ROWS_PER_TRIGGER_ROW } from '../reactions/flows/run/trigger-window.js';
import { DeferredSends } from '../reactions/flows/run/deferred-sends.js';
import type { OccurrenceStore } from '../reactions/flows/store/occurrence-store.js';
import { ScheduledSends } from '../reactions/flows/run/scheduled-sends.js';
import { StepEntries } from '../reactions/flows/run/step-entries.js';
import { OrgTurns } from '../reactions/flows/run/org-turns.js';
import type { ContactStateDeps } from '../reactions/flows/run/contact-state.js';
import { DecisionPipeline } from '../reactions/flows/run/decision-pipeline.js';
import { ContactFold } from '../reactions/flows/run/contact-fold.js';
import { DueAt } from '../reactions/flows/run/due-at.js';
import type { WaitStore } from '../reactions/flows/store/wait-store.js';
import { SendDispatcher } from '../reactions/flows/send/send-dispatcher.js';
import type { SendStore } from '../reactions/flows/store/send-store.js';
import { TemplateRenderer } from '../reactions/flows/render/template-renderer.js';
import { runSteps } from './run-steps.js';

/** How often QUERIES_DIR is read for changed trigger and segment files. */
const QUERIES_POLL_MS = 1000;
/** How often quarantine alerts are checked: a crossing is sent well within the minute the issue allows. */
const ALERT_CHECK_MS = 15_000;

export interface FlowsRole {
  /** Triggered runs of live flows (one source of the decision pipeline). */
  runner: TriggerRuns;
  dispatcher: SendDispatcher;
  renderer: TemplateRenderer;
  /** Sends deferred by quiet hours, released when they end. */
  deferred: DeferredSends;
  /** Scheduled and recurring sends to a segment, started and sent at their schedule. */
  scheduled: ScheduledSends;
  /** Entries of flows with steps, moved along them. */
  steps: StepEntries;
  waits: WaitStore;
  /** The stores the admin routes read (their one writer is here or in the storage role). */
  sends: SendStore;
  occurrences: OccurrenceStore;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Present with the flows role. */
    flowsRole: FlowsRole | undefined;
  }
}

export const flowsRole = fp(
  async (app: FastifyInstance) => {
    const { config, ctx, metrics, orgs } = app;
    // An unavailable org or a restarting storage process: a warning per stretch, not an error per tick.
    const logger = capacityErrorsAtWarn(app.log, ctx.clock);
    const storage = app.storageRole!;
    const orgData = app.orgStorage!.orgs;
    // Message templates render on their own worker thread.
    const renderer = new TemplateRenderer();
    const channels = openChannels({
      dataDir: config.dataDir,
      ...(config.smtpUrl ? { smtpUrl: config.smtpUrl } : {}),
      allowPrivate: config.webhookAllowPrivate,
      timeoutMs: config.webhookTimeoutMs,
      signingKey: storage.signingKey,
      clock: ctx.clock,
    });
    const { sends, waits, occurrences } = storage.flowTables;
    // What every decision reads about contacts and the org's sending settings (contact-state.ts).
    const compaction = app.orgStorage!.compaction;
    const log = app.eventLog;
    // Decisions wait for the fold of every event acknowledged before them (contact-fold.ts).
    const fold = new ContactFold(
      compaction && log ? { headSeq: () => log.headSeq(), whenCompacted: (seq) => compaction.whenCompacted(seq), whenRefreshed: (org) => storage.refresher.whenRefreshed(org, { awaited: true }) } : undefined,
      metrics,
      ctx.clock,
    );
    const contacts: ContactStateDeps = {
      orgs: orgData,
      sends,
      profiles: app.profiles,
      consent: storage.consent,
      links: storage.links,
      capsOf: (org) => orgs.cached(org)?.frequencyCaps ?? [],
      quietHoursOf: (org) => {
        const settings = orgs.cached(org);
        return { quietHours: settings?.quietHours, timeZone: settings?.timeZone ?? 'UTC' };
      },
    };
    const dispatcher = new SendDispatcher({
      sends,
      ctx,
      channels,
      policy: { maxAttempts: config.webhookMaxAttempts, baseDelayMs: config.webhookBackoffMs, maxDelayMs: 60 * 60 * 1000 },
      metrics,
      logger,
      onDelivered: (org, delivered) =>
        storage.refresher.enqueue(delivered.map(({ email, flowId, variant }) => ({ org, email, sent: { flowId, variant, delivered: true } }))),
    });
    registerScrapedGauge(metrics, 'audience_sends_pending', 'Flow sends queued, in flight or waiting for a retry in this process', () => dispatcher.pending);
    // Every piece of work on an org's flows (runs, step passes, releases, scheduled chunks, erasures) takes
    // a turn of the org: one at a time per org, orgs round-robin (org-turns.ts).
    const turns = new OrgTurns();
    // The one decision pipeline the four sources feed (decision-pipeline.ts), built before them: what a
    // commit deferred or entered is noted in `deferredDue` and `stepsDue`, read by the sources that release it.
    const deferredDue = new DueAt();
    const stepsDue = new DueAt();
    const pipeline = new DecisionPipeline({
      ...contacts,
      fold,
      renderer,
      dispatcher,
      metrics,
      ctx,
      refreshProfiles: (keys) => storage.refresher.enqueue(keys),
      deferredDue,
      stepsDue,
    });
    const limits = { timeoutMs: config.triggerTimeoutMs, maxRows: config.triggerMaxRows };
    const runner = new TriggerRuns({ orgs: orgData, ctx, turns, pipeline, flows: storage.flows, sends, waits, triggers: storage.triggers, profiles: app.profiles, metrics, logger, ...limits });
    const steps = new StepEntries({ orgs: orgData, waits, sends, flows: storage.flows, triggers: storage.triggers, profiles: app.profiles, turns, pipeline, due: stepsDue, ctx, logger, ...limits });
    const deferred = new DeferredSends({ sends, flows: storage.flows, turns, pipeline, due: deferredDue, ctx, logger });
    const scheduled = new ScheduledSends({
      orgs: orgData,
      flows: storage.flows,
      triggers: storage.triggers,
      occurrences,
      sends,
      profiles: app.profiles,
      quietHoursOf: contacts.quietHoursOf,
      turns,
      pipeline,
      ctx,
      logger,
      timeoutMs: config.triggerTimeoutMs,
      maxMembers: config.triggerMaxRows * SEGMENT_ROWS_PER_TRIGGER_ROW,
    });
    app.decorate('flowsRole', { runner, dispatcher, renderer, deferred, steps, waits, scheduled, sends, occurrences });
    // Stops polling trigger files, lets a running flow run finish, stops deliveries (retries stay pending).
    // The four sources stop together: each waits for its piece in progress, and those may wait for each
    // other's turns (one after another, a busy org's run, pass and chunk added up to seconds).
    const sources = () => Promise.all([runner.close(), deferred.close(), steps.close(), scheduled.close()]);
    // Quarantine alerts (issue 42) go out as webhooks, from here.
    const alerts = new QuarantineAlerts({ orgs: orgData, ctx, onError: (err, org) => logger.error({ err, org }, 'checking the quarantine alert failed') });
    const webhook = channels.channelFor('webhook')!;
    const alertTask = new PeriodicTask(async () => alerts.check(await ownedSlugs(), webhook), (err) => logger.error({ err }, 'checking the quarantine alert failed'));
    app.addHook('onClose', () => runSteps([() => storage.triggers.stopWatching(), () => alertTask.stop(), sources, () => renderer.close(), () => dispatcher.close(), () => channels.close()]));

    /** Sends recorded as pending and not queued in this process, org by org: one unavailable org does not hold the others'. */
    const resumePending = async (slugs: string[]): Promise<void> => {
      for (const slug of slugs) {
        await dispatcher.resumePending([slug]).catch((err: unknown) => {
          if (err instanceof OrgUnavailable) return;
          logger.error({ err, org: slug }, 'resuming pending sends failed');
        });
      }
    };
    const ownedSlugs = async () => (await orgs.list()).map((org) => org.slug).filter(storage.owns);
    storage.onOrgAvailable(async (slug) => {
      await resumePending([slug]);
      await deferred.load([slug]);
      await steps.load([slug]);
    });
    // An erasure's deletions and the org's runs never overlap; the contact's queued sends are not attempted.
    storage.erasures.serializeWith((org, work) => turns.run(org, work));
    storage.erasures.onErased((org, email) => dispatcher.dropContact(org, email));
    storage.flows.serializeArchivesWith((org, work) => turns.run(org, work));
    storage.flows.onArchived((org, id) => dispatcher.dropFlow(org, id));
    // Then its lines in the outbox file go, after any of its sends already handed to the channel.
    storage.erasures.alsoErase('outbox', (org, email) => channels.eraseContact(org, email));
    storage.onOrgDropped(async (slug) => {
      await runner.forgetOrg(slug);
      deferred.forgetOrg(slug);
      steps.forgetOrg(slug);
      scheduled.forgetOrg(slug);
      dispatcher.dropOrg(slug);
    });
    // A flow run's commit may have been made just before the storage process ended, its answer lost:
    // those sends are pending in the database, not queued here. Queued ones are not queued twice.
    app.storageEvents.onRestarted(() => void ownedSlugs().then(resumePending, (err: unknown) => logger.error({ err }, 'resuming pending sends failed')));

    // Real-time flows and waits: what a commit stored is looked at now, not at the next tick.
    app.storageEvents.onCompacted((report) => {
      runner.noteCommitted(report.orgs);
      steps.noteCommitted(report.orgs);
    });
    storage.triggers.watch(QUERIES_POLL_MS);
    await resumePending(await ownedSlugs());
    await deferred.load(await ownedSlugs());
    await steps.load(await ownedSlugs());
    renderer.start();
    runner.start();
    deferred.start();
    steps.start();
    scheduled.start();
    alertTask.start(ALERT_CHECK_MS);
  },
  { name: 'audience-flows-role', dependencies: ['audience-storage-role'] },
);
