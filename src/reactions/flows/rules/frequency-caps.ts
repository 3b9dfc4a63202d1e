/**
 * Frequency caps (SPEC 8): the org's `frequencyCaps` (per channel or every channel, across its flows) and
 * a flow's own `frequencyCap`, each "at most maxSends to one contact within withinSeconds", a window that
 * ends at the decision. Counted over sends made: an outbox row that is pending or delivered, not one that
 * failed, died or was a holdout. Transactional flows are neither capped by the org's caps nor counted in
 * them (a receipt never uses up a contact's marketing budget); a flow's own cap holds for it all the same.
 *
 * Why a cap stays exact: the sends counted are read when a run starts and grow as the run decides, and
 * the runs of one org never overlap (run/org-turns.ts serializes them per org; one storage process owns
 * an org, so no other process decides for it).
 */
import type { ChannelName } from '../../channels/types.js';
import type { FrequencyCap, FrequencyCaps } from '../../../generated/org.js';

/** A send already made (or decided in this run) to one contact. */
export interface PastSend {
  flowId: string;
  channel: ChannelName;
  transactional: boolean;
  /** When it was decided, epoch ms. */
  at: number;
}

export interface CapRules {
  org: FrequencyCaps;
  /** The flow's own cap, when it has one. */
  flow?: FrequencyCap | undefined;
  flowId: string;
  transactional: boolean;
}

/** How far back the rules look: the longest window among them (0 when there are none). */
export function lookbackMs(rules: Pick<CapRules, 'org' | 'flow' | 'transactional'>): number {
  const windows = [...(rules.transactional ? [] : rules.org), ...(rules.flow ? [rules.flow] : [])].map((cap) => cap.withinSeconds * 1000);
  return Math.max(0, ...windows);
}

/** The sends each contact was made within the lookback, growing as a run decides. */
export class SendCounts {
  constructor(
    private readonly rules: CapRules,
    private readonly sends: Map<string, PastSend[]>,
  ) {}

  /** Why a send on `channel` to `email` at `now` would exceed a cap, or null when it would not. */
  capped(email: string, channel: ChannelName, now: number): string | null {
    const past = this.sends.get(email) ?? [];
    const within = (seconds: number, counts: (s: PastSend) => boolean) => past.filter((s) => now - s.at < seconds * 1000 && counts(s)).length;
    const flowCap = this.rules.flow;
    if (flowCap && within(flowCap.withinSeconds, (s) => s.flowId === this.rules.flowId) >= flowCap.maxSends) {
      return `the flow's frequencyCap: ${flowCap.maxSends} sends within ${flowCap.withinSeconds} s reached`;
    }
    if (this.rules.transactional) return null;
    for (const cap of this.rules.org) {
      if (cap.channel !== undefined && cap.channel !== channel) continue;
      if (within(cap.withinSeconds, (s) => !s.transactional && (cap.channel === undefined || s.channel === cap.channel)) >= cap.maxSends) {
        return `the org's frequencyCaps: ${cap.maxSends} ${cap.channel ?? 'any-channel'} sends within ${cap.withinSeconds} s reached`;
      }
    }
    return null;
  }

  /** A send this run decided: it counts for the run's next decisions. */
  add(email: string, channel: ChannelName, now: number): void {
    const past = this.sends.get(email);
    const send: PastSend = { flowId: this.rules.flowId, channel, transactional: this.rules.transactional, at: now };
    if (past) past.push(send);
    else this.sends.set(email, [send]);
  }
}
