/* Generated from schemas/ by src/tools/generate-types.ts (npm run types). Do not edit. */

/**
 * This interface was referenced by `FlowMessage`'s JSON-Schema
 * via the `definition` "Message".
 */
export type Message = (WebhookMessage | EmailMessage | OutboxMessage) & {
  channel: 'webhook' | 'email' | 'outbox';
};

/**
 * What a flow sends (SPEC 8): a message on one channel, and the branches that choose another by a condition on the template data. Only the $defs are meant to be referenced (flow.schema.json does, for a flow's message, its steps' and its variants').
 */
export interface FlowMessage {
  [k: string]: unknown;
}
/**
 * This interface was referenced by `FlowMessage`'s JSON-Schema
 * via the `definition` "Branch".
 */
export interface Branch {
  when: Condition;
  message: Message;
}
/**
 * This interface was referenced by `FlowMessage`'s JSON-Schema
 * via the `definition` "Condition".
 */
export interface Condition {
  /**
   * A dotted path into the template data, e.g. event.properties.nights, variant.label, or (in a step after waitUntil) wait.outcome
   */
  field: string;
  op: 'eq' | 'ne' | 'gt' | 'gte' | 'lt' | 'lte' | 'in' | 'exists';
  /**
   * Compared with the field; an array for in; absent for exists
   */
  value?: string | number | boolean | null | unknown[];
}
/**
 * This interface was referenced by `FlowMessage`'s JSON-Schema
 * via the `definition` "WebhookMessage".
 */
export interface WebhookMessage {
  channel: 'webhook';
  url: string;
  template: {
    /**
     * Liquid: a string that renders to JSON, or a JSON value whose strings are Liquid templates
     */
    body: string | {} | unknown[];
  };
}
/**
 * This interface was referenced by `FlowMessage`'s JSON-Schema
 * via the `definition` "EmailMessage".
 */
export interface EmailMessage {
  channel: 'email';
  template: {
    subject: string;
    text: string;
    html?: string;
  };
}
/**
 * This interface was referenced by `FlowMessage`'s JSON-Schema
 * via the `definition` "OutboxMessage".
 */
export interface OutboxMessage {
  channel: 'outbox';
  /**
   * Any JSON object; its strings are Liquid templates
   */
  template: {};
}
