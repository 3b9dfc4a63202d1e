/**
 * What a message step of an entry does when it is reached (issue 26), decided as a deferred send is at the
 * end of quiet hours: a contact suppressed or unsubscribed meanwhile leaves the flow; one over a frequency
 * cap skips the message and goes on; inside quiet hours the step waits for their end; otherwise it is sent.
 * Pure: the contact's state is given (run/contact-state.ts).
 */
import type { ChannelName } from '../../channels/types.js';
import type { RunState } from './decision.js';

export type StepMessage =
  | { kind: 'exit'; outcome: 'suppressed' | 'unsubscribed'; reason: string }
  | { kind: 'skip'; outcome: 'frequency_capped'; reason: string }
  | { kind: 'hold'; until: number }
  | { kind: 'send' };

/** The rule for `email` at `now`; a send is counted in `state.sendCounts` (the next step's caps see it). */
export function stepMessage(email: string, channel: ChannelName, now: number, state: Pick<RunState, 'suppressed' | 'unsubscribed' | 'sendCounts' | 'quietUntil'>): StepMessage {
  const [topic] = state.unsubscribed.get(email) ?? [];
  const capped = state.sendCounts.capped(email, channel, now);
  const quiet = state.quietUntil(email);
  if (state.suppressed.has(email)) return { kind: 'exit', outcome: 'suppressed', reason: 'the contact was erased with suppress: never messaged, whatever the flow' };
  if (topic) return { kind: 'exit', outcome: 'unsubscribed', reason: `the contact is unsubscribed from topic ${topic.topic} (${topic.source}): the entry ends` };
  if (capped) return { kind: 'skip', outcome: 'frequency_capped', reason: `${capped}: this message is skipped, the entry goes on` };
  if (quiet) return { kind: 'hold', until: quiet.at };
  state.sendCounts.add(email, channel, now);
  return { kind: 'send' };
}
