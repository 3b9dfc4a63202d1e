/**
 * A send deferred by quiet hours, checked again when they end (run/deferred-sends.ts), as a new entry
 * would be: a contact suppressed meanwhile is `suppressed`, one who unsubscribed from the flow's topic is
 * `unsubscribed`, one whose caps filled meanwhile is `frequency_capped`, one inside quiet hours again (it
 * named another zone meanwhile) is deferred again to their end there; otherwise it is `sent`. Pure: the
 * contacts' state is given (run/contact-state.ts, releaseState).
 */
import type { ChannelName } from '../../channels/types.js';
import type { RunState } from './decision.js';

export interface Released {
  sendId: string;
  outcome: 'sent' | 'suppressed' | 'unsubscribed' | 'frequency_capped' | 'deferred_quiet_hours' | 'failed';
  reason: string | null;
  /** deferred_quiet_hours: the end of the quiet hours it is inside now. */
  dueAt?: number;
}

/** The rule for one deferred send at `now`; a send is counted in `state.sendCounts` (the next one's caps see it). */
export function releaseCheck(
  send: { sendId: string; email: string; channel: ChannelName },
  now: number,
  state: Pick<RunState, 'suppressed' | 'unsubscribed' | 'sendCounts' | 'quietUntil'>,
): Released {
  const later = (outcome: Released['outcome'], why: string): Released => ({ sendId: send.sendId, outcome, reason: `at the end of quiet hours: ${why}` });
  if (state.suppressed.has(send.email)) return later('suppressed', 'the contact was erased with suppress');
  const [topic] = state.unsubscribed.get(send.email) ?? [];
  if (topic) return later('unsubscribed', `the contact is unsubscribed from topic ${topic.topic} (${topic.source})`);
  const capped = state.sendCounts.capped(send.email, send.channel, now);
  if (capped) return later('frequency_capped', capped);
  const quiet = state.quietUntil(send.email);
  if (quiet) return { sendId: send.sendId, outcome: 'deferred_quiet_hours', reason: `at the end of quiet hours: inside them in ${quiet.zone}, deferred until they end`, dueAt: quiet.at };
  state.sendCounts.add(send.email, send.channel, now);
  return { sendId: send.sendId, outcome: 'sent', reason: null };
}
