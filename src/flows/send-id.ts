/**
 * The send id: derived from the send key (org, flow, contact, event_id), so every attempt, retry or
 * re-run of one key carries the same id, and receivers dedupe by it (webhook-id, Message-ID).
 */
import { v5 as uuidv5 } from 'uuid';

// A fixed namespace for Audience send ids (any constant UUID works; this one is ours).
const SEND_NAMESPACE = '8f0c6b1e-2f4a-4d6e-9a51-3c1d2b7e9f10';

export function sendIdFor(org: string, flowId: string, email: string, eventId: string): string {
  return 'msg_' + uuidv5(JSON.stringify([org, flowId, email, eventId]), SEND_NAMESPACE).replaceAll('-', '');
}
