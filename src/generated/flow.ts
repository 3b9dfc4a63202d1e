/* Generated from schemas/ by src/tools/generate-types.ts (npm run types). Do not edit. */
import type { FrequencyCap, QuietHours } from './org.js';

/**
 * This interface was referenced by `FlowDefinition`'s JSON-Schema
 * via the `definition` "Message".
 */
export type Message = (WebhookMessage | EmailMessage | OutboxMessage) & {
  channel: 'webhook' | 'email' | 'outbox';
};
/**
 * This interface was referenced by `FlowDefinition`'s JSON-Schema
 * via the `definition` "queryName".
 */
export type QueryName = string;

/**
 * An event-triggered flow as POST/PUT /admin/v1/orgs/{slug}/flows take it (SPEC 8).
 */
export interface FlowDefinition {
  id: string;
  name: string;
  category: 'triggered';
  entry: 'when_contact_triggers_event';
  /**
   * Name of a trigger file queries/<org>/<trigger>.sql
   */
  trigger: string;
  /**
   * Flows run on production events only; staging is refused with a reason.
   */
  environment?: 'production' | 'staging';
  /**
   * An entry whose event happened longer ago than this when the flow runs is decided too_old and never sent (replays, imports, late events). Default: 86400
   */
  maxEventAgeSeconds?: number;
  /**
   * The subscription topic of the flow's messages (PUT /admin/v1/orgs/{slug}/topics/{topic}): a contact unsubscribed from it, or from all, is decided unsubscribed. Default: all. Not with transactional
   */
  topic?: string;
  /**
   * Messages a contact needs whatever they subscribed to (a receipt, a password reset): the org's frequencyCaps neither cap nor count them. Default: false
   */
  transactional?: boolean;
  /**
   * At most maxSends of this flow's messages to one contact within withinSeconds; an entry over it is decided frequency_capped. The org's frequencyCaps apply as well
   */
  frequencyCap?: FrequencyCap;
  /**
   * This flow's quiet hours, instead of the org's
   */
  quietHours?: QuietHours;
  /**
   * Seconds between runs. Default: 60
   */
  scheduleSeconds?: number;
  segmentFilter?: {
    /**
     * Name of a segment file queries/<org>/segments/<segment>.sql returning email
     */
    segment: string;
    /**
     * Default: exclude
     */
    mode?: 'exclude' | 'include';
  };
  experiment?: {
    /**
     * @minItems 1
     * @maxItems 20
     */
    variants: Variant[];
  };
  /**
   * @maxItems 50
   */
  branches?: Branch[];
  message: Message;
  goal?: Goal;
  /**
   * Default: every_event
   */
  reentry?:
    | ('every_event' | 'once')
    | {
        afterSeconds: number;
      };
}
/**
 * This interface was referenced by `FlowDefinition`'s JSON-Schema
 * via the `definition` "Variant".
 */
export interface Variant {
  label: string;
  weight: number;
  /**
   * Sends nothing; the contact is still recorded in the variant
   */
  holdout?: boolean;
  message?: Message;
}
/**
 * This interface was referenced by `FlowDefinition`'s JSON-Schema
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
 * This interface was referenced by `FlowDefinition`'s JSON-Schema
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
 * This interface was referenced by `FlowDefinition`'s JSON-Schema
 * via the `definition` "OutboxMessage".
 */
export interface OutboxMessage {
  channel: 'outbox';
  /**
   * Any JSON object; its strings are Liquid templates
   */
  template: {};
}
/**
 * This interface was referenced by `FlowDefinition`'s JSON-Schema
 * via the `definition` "Branch".
 */
export interface Branch {
  when: Condition;
  message: Message;
}
/**
 * This interface was referenced by `FlowDefinition`'s JSON-Schema
 * via the `definition` "Condition".
 */
export interface Condition {
  /**
   * A dotted path into the template data, e.g. event.properties.nights
   */
  field: string;
  op: 'eq' | 'ne' | 'gt' | 'gte' | 'lt' | 'lte' | 'in' | 'exists';
  /**
   * Compared with the field; an array for in; absent for exists
   */
  value?: string | number | boolean | null | unknown[];
}
/**
 * What counts as a conversion: GET /admin/v1/orgs/{slug}/flows/{id}/results compares the variants and the holdout on it
 *
 * This interface was referenced by `FlowDefinition`'s JSON-Schema
 * via the `definition` "Goal".
 */
export interface Goal {
  /**
   * The event name as stored (events.event_name, the admin API's eventType): a predefined name such as complete_transaction, identify, or custom_<eventName>
   */
  event: string;
  /**
   * A contact converts when the goal event happens (its event_time) at or after the flow entered them and at most this many seconds later; at most 90 days
   */
  withinSeconds: number;
}
/**
 * A flow as the admin API returns it: the definition and its state.
 *
 * This interface was referenced by `FlowDefinition`'s JSON-Schema
 * via the `definition` "Flow".
 */
export interface Flow {
  definition: FlowDefinition;
  status: 'draft' | 'live' | 'paused';
  createdAt: string;
  updatedAt: string;
  liveSince: string | null;
  /**
   * End of the last window run (microsecond precision)
   */
  cursorAt: string | null;
  lastRunAt: string | null;
  lastError: string | null;
}
