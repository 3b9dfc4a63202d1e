/**
 * What the rules read about the contacts they decide, from the org's database and settings at `now`: when the
 * flow last entered them, the sends their caps count, suppression, consent, quiet hours, their unsubscribe
 * link and profile. One evaluation for every source of the decision pipeline (decision-pipeline.ts): a trigger
 * window, a chunk of an occurrence's members, the message steps of a pass, and deferred sends at release.
 */
import type { OrgStorage } from '../../../db/org-storage.js';
import { suppressedAmong } from '../../../events/compaction/tombstones.js';
import type { ProfileIndex } from '../../../events/profiles/profile-index.js';
import type { FlowDefinition } from '../../../generated/flow.js';
import type { FrequencyCaps } from '../../../generated/org.js';
import { type QuietHours, quietUntilAt } from '../../../core/quiet-hours.js';
import { type ConsentStore, topicsOf } from '../../consent/consent-store.js';
import type { UnsubscribeLinks } from '../../consent/unsubscribe-link.js';
import type { RunState } from '../rules/decision.js';
import { type CapRules, lookbackMs, SendCounts } from '../rules/frequency-caps.js';
import type { SendStore } from '../store/send-store.js';
import type { Folded } from './contact-fold.js';

export interface ContactStateDeps {
  orgs: OrgStorage;
  sends: Pick<SendStore, 'lastEntries' | 'recentSends'>;
  profiles: Pick<ProfileIndex, 'find'>;
  consent: Pick<ConsentStore, 'unsubscribed'>;
  links: Pick<UnsubscribeLinks, 'forFlow'>;
  /** The org's frequencyCaps now. */
  capsOf(org: string): FrequencyCaps;
  /** The org's quiet hours and time zone now. */
  quietHoursOf(org: string): { quietHours?: QuietHours | undefined; timeZone: string };
}

export type ContactState = Pick<RunState, 'lastEntry' | 'sendCounts' | 'suppressed' | 'unsubscribed' | 'unsubscribeUrl' | 'quietUntil' | 'profile'>;

/**
 * The state of `emails` for deciding `flow` at `folded.at`: the pipeline waited for the events acknowledged
 * before it to be folded (contact-fold.ts), so a profile read here has them.
 */
export async function contactState(deps: ContactStateDeps, org: string, flow: FlowDefinition, emails: string[], folded: Folded): Promise<ContactState> {
  const now = folded.at;
  const profile: RunState['profile'] = (type, value) => deps.profiles.find(org, type, value);
  const settings = deps.quietHoursOf(org);
  // Asked together: the org's database answers statements one at a time, and a compaction commit queued
  // between two of them would be waited for once per statement (~85 of a ~150 ms run when asked in turn).
  const [lastEntry, counts, suppressed, unsubscribed] = await Promise.all([
    deps.sends.lastEntries(org, flow.id, emails),
    sendCounts(deps, org, flow, emails, now),
    suppressedAmong(deps.orgs.org(org), emails),
    deps.consent.unsubscribed(org, emails, topicsOf(flow)),
  ]);
  return {
    lastEntry,
    sendCounts: counts,
    suppressed,
    unsubscribed,
    unsubscribeUrl: (email) => deps.links.forFlow(org, flow, email),
    // The flow's quiet hours (its own, else the org's), in the contact's zone or the one they name.
    quietUntil: quietUntilAt(now, flow.quietHours ?? settings.quietHours, settings.timeZone, (email) => profile('email', email)?.timezone),
    profile,
  };
}

/** The sends the caps of this flow and its org count, for these contacts. */
async function sendCounts(deps: ContactStateDeps, org: string, flow: FlowDefinition, emails: string[], now: number): Promise<SendCounts> {
  const rules: CapRules = { org: deps.capsOf(org), flow: flow.frequencyCap, flowId: flow.id, transactional: flow.transactional ?? false };
  const lookback = lookbackMs(rules);
  return new SendCounts(rules, lookback === 0 ? new Map() : await deps.sends.recentSends(org, emails, now - lookback));
}

export type ReleaseState = Pick<RunState, 'suppressed' | 'unsubscribed' | 'sendCounts' | 'quietUntil'>;

/**
 * The state of `emails` for releasing the flow's sends deferred by quiet hours at `folded.at`: suppression,
 * consent, the sends made since (pending or delivered) for the caps — not other deferred ones: those are
 * checked as they are released — and quiet hours in the zone each contact names now.
 */
export async function releaseState(deps: ContactStateDeps, org: string, flow: FlowDefinition, emails: string[], folded: Folded): Promise<ReleaseState> {
  const now = folded.at;
  const suppressed = await suppressedAmong(deps.orgs.org(org), emails);
  const unsubscribed = await deps.consent.unsubscribed(org, emails, topicsOf(flow));
  const rules: CapRules = { org: deps.capsOf(org), flow: flow.frequencyCap, flowId: flow.id, transactional: flow.transactional ?? false };
  const sendCounts = new SendCounts(rules, await deps.sends.recentSends(org, emails, now - lookbackMs(rules), ['pending', 'delivered']));
  const settings = deps.quietHoursOf(org);
  // One that named another zone since may be inside quiet hours there.
  const quietUntil = quietUntilAt(now, flow.quietHours ?? settings.quietHours, settings.timeZone, (email) => deps.profiles.find(org, 'email', email)?.timezone);
  return { suppressed, unsubscribed, sendCounts, quietUntil };
}
