/**
 * What the flow runner hands a channel, and what one delivery attempt answers.
 * The runner has already rendered the template; channels only move bytes and classify the outcome.
 */

/** A rendered message, by channel (SPEC 8); `unsubscribeUrl` for a flow that is not transactional. */
export type RenderedMessage =
  | { channel: 'webhook'; url: string; body: unknown; unsubscribeUrl?: string }
  | { channel: 'email'; subject: string; text: string; html?: string; unsubscribeUrl?: string }
  | { channel: 'outbox'; content: Record<string, unknown> };

export type ChannelName = RenderedMessage['channel'];

export interface Delivery {
  /** Derived from the send key (flow, contact, event_id): the idempotency key given to the receiver. */
  sendId: string;
  org: string;
  flowId: string;
  /** Experiment variant label, or null when the flow has no experiment. */
  variant: string | null;
  email: string;
  eventId: string;
  message: RenderedMessage;
}

/** One attempt: delivered, worth retrying (429, 5xx, network, timeout), or failed for good (other 4xx, refused target). */
export type AttemptOutcome =
  | { kind: 'delivered'; detail?: string }
  | { kind: 'retry'; reason: string; retryAfterMs?: number }
  | { kind: 'failed'; reason: string };

/** After every attempt: delivered, or given up (dead-lettered after the last retry, or failed without retry). */
export type DeliveryResult =
  | { kind: 'delivered'; attempts: number }
  | { kind: 'failed'; attempts: number; reason: string }
  | { kind: 'dead'; attempts: number; reason: string };

export interface Channel {
  attempt(delivery: Delivery): Promise<AttemptOutcome>;
  close?(): Promise<void>;
}
