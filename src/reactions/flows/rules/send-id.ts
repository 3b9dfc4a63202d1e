/**
 * The send id: derived from the send key (org, flow, contact, event_id), so every attempt, retry or
 * re-run of one key carries the same id, and receivers dedupe by it (webhook-id, Message-ID).
 */
import { createHash } from 'node:crypto';

export function sendIdFor(org: string, flowId: string, email: string, eventId: string): string {
  // JSON of the parts keeps the key unambiguous whatever characters the parts hold.
  return 'msg_' + createHash('sha256').update(JSON.stringify([org, flowId, email, eventId])).digest('hex').slice(0, 32);
}
