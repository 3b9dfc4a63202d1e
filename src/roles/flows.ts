/**
 * The flows role (ROLES flows): runs flows over the trigger results of the orgs the storage role keeps,
 * renders their messages on a worker thread and sends them through the channels. Needs the storage role,
 * registered before it.
 */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { OrgUnavailable } from '../core/unavailable.js';
import { registerScrapedGauge } from '../ops/metrics.js';
import { openChannels } from '../reactions/channels/open-channels.js';
import { FlowRunner, SEGMENT_ROWS_PER_TRIGGER_ROW } from '../reactions/flows/flow-runner.js';
import { DeferredSends } from '../reactions/flows/deferred-sends.js';
import { OccurrenceStore } from '../reactions/flows/occurrence-store.js';
import { ScheduledSends } from '../reactions/flows/scheduled-sends.js';
import { FlowSteps } from '../reactions/flows/flow-steps.js';
import type { ContactStateDeps } from '../reactions/flows/contact-state.js';
import { WaitStore } from '../reactions/flows/wait-store.js';
import { SendDispatcher } from '../reactions/flows/send-dispatcher.js';
import { SendStore } from '../reactions/flows/send-store.js';
import { TemplateRenderer } from '../reactions/flows/template-renderer.js';
import { runSteps } from './run-steps.js';

/** How often QUERIES_DIR is read for changed trigger and segment files. */
const QUERIES_POLL_MS = 1000;

export interface FlowsRole {
  runner: FlowRunner;
  dispatcher: SendDispatcher;
  renderer: TemplateRenderer;
  /** Sends deferred by quiet hours, released when they end. */
  deferred: DeferredSends;
  /** Scheduled and recurring sends to a segment, started and sent at their schedule. */
  scheduled: ScheduledSends;
  /** Entries of flows with steps, moved along them. */
  steps: FlowSteps;
  waits: WaitStore;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Present with the flows role. */
    flowsRole: FlowsRole | undefined;
  }
}

export const flowsRole = fp(
  async (app: FastifyInstance) => {
    const { config, ctx, metrics, orgs, log: logger } = app;
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
    const sends = new SendStore(orgData);
    const waits = new WaitStore(orgData);
    // What every decision reads about contacts and the org's sending settings (contact-state.ts).
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
      onDelivered: (org, emails) => storage.refresher.enqueue(emails.map((email) => ({ org, email }))),
    });
    registerScrapedGauge(metrics, 'audience_sends_pending', 'Flow sends queued, in flight or waiting for a retry in this process', () => dispatcher.pending);
    const runner = new FlowRunner({
      ...contacts,
      ctx,
      flows: storage.flows,
      sends,
      triggers: storage.triggers,
      profiles: app.profiles,
      dispatcher,
      renderer,
      metrics,
      logger,
      timeoutMs: config.triggerTimeoutMs,
      maxRows: config.triggerMaxRows,
      refreshProfiles: (keys) => storage.refresher.enqueue(keys),
      deferredDue: (org, at) => deferred.noteDue(org, at),
      waits,
      stepsDue: (org, at) => steps.noteDue(org, at),
    });
    const deferred = new DeferredSends({
      orgs: orgData,
      sends,
      flows: storage.flows,
      consent: storage.consent,
      capsOf: contacts.capsOf,
      exclusive: (org, work) => runner.exclusive(org, work),
      dispatcher,
      ctx,
      metrics,
      logger,
    });
    const steps = new FlowSteps({
      ...contacts,
      waits,
      sends,
      flows: storage.flows,
      triggers: storage.triggers,
      renderer,
      exclusive: (org, work) => runner.exclusive(org, work),
      dispatcher,
      ctx,
      metrics,
      logger,
      timeoutMs: config.triggerTimeoutMs,
      maxRows: config.triggerMaxRows,
    });
    const scheduled = new ScheduledSends({
      ...contacts,
      flows: storage.flows,
      triggers: storage.triggers,
      occurrences: new OccurrenceStore(orgData),
      sends,
      renderer,
      exclusive: (org, work) => runner.exclusive(org, work),
      afterCommit: (org, flowId, decisions) => runner.afterCommit(org, flowId, decisions),
      ctx,
      logger,
      timeoutMs: config.triggerTimeoutMs,
      maxMembers: config.triggerMaxRows * SEGMENT_ROWS_PER_TRIGGER_ROW,
    });
    app.decorate('flowsRole', { runner, dispatcher, renderer, deferred, steps, waits, scheduled });
    // Stops polling trigger files, lets a running flow run finish, stops deliveries (retries stay pending).
    app.addHook('onClose', () => runSteps([() => storage.triggers.stopWatching(), () => runner.close(), () => deferred.close(), () => steps.close(), () => scheduled.close(), () => renderer.close(), () => dispatcher.close(), () => channels.close()]));

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
    storage.erasures.serializeWith((org, work) => runner.exclusive(org, work));
    storage.erasures.onErased((org, email) => dispatcher.dropContact(org, email));
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
  },
  { name: 'audience-flows-role', dependencies: ['audience-storage-role'] },
);
