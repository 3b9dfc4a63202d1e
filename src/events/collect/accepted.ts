/** What a validate step hands the commit step: the entries to store and the answer once they are durable. */
import type { PartnerIdentity } from '../../control/partner-registry.js';
import type { LogEntry } from '../log/types.js';

/** The 200 body (SPEC 4.3): the event's messageId, or a batch's in member order. */
export type CollectAnswer = { messageId: string } | { messageIds: string[] };

export interface Accepted {
  who: PartnerIdentity;
  entries: LogEntry[];
  answer: CollectAnswer;
}
