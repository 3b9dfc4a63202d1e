/* Generated from schemas/ by src/tools/generate-types.ts (npm run types). Do not edit. */
import type { FrequencyCap, QuietHours } from './org.js';
import type { Branch, Message } from './message.js';

/**
 * Whose local time: the org's timeZone, or each contact's profile timezone (else the org's)
 *
 * This interface was referenced by `FlowDefinition`'s JSON-Schema
 * via the `definition` "scheduleZone".
 */
export type ScheduleZone = 'org' | 'contact';
/**
 * This interface was referenced by `FlowDefinition`'s JSON-Schema
 * via the `definition` "Step".
 */
export type Step = WaitStep | WaitUntilStep | MessageStep;
/**
 * An event name as stored (events.event_name, the admin API's eventType: a predefined name such as complete_transaction, or custom_<eventName>), or else the name of a trigger of the org (then its rows for the contact count)
 *
 * This interface was referenced by `FlowDefinition`'s JSON-Schema
 * via the `definition` "EventRef".
 */
export type EventRef = string;
/**
 * This interface was referenced by `FlowDefinition`'s JSON-Schema
 * via the `definition` "queryName".
 */
export type QueryName = string;
/**
 * YYYY-MM-DD
 *
 * This interface was referenced by `FlowDefinition`'s JSON-Schema
 * via the `definition` "localDate".
 */
export type LocalDate = string;

/**
 * A flow as POST/PUT /admin/v1/orgs/{slug}/flows take it (SPEC 8): triggered by events, or a scheduled or recurring send to a segment.
 */
export interface FlowDefinition {
  id: string;
  name: string;
  /**
   * triggered: each row of a trigger enters its contact (entry, trigger). scheduled: one send to the members of a segment at a set time; recurring: every day or week (audience, schedule, message; no trigger)
   */
  category: 'triggered' | 'scheduled' | 'recurring';
  entry?: 'when_contact_triggers_event';
  /**
   * Name of a trigger file queries/<org>/<trigger>.sql
   */
  trigger?: string;
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
   * Seconds between runs at most: a real-time flow also runs as soon as the org's new events are stored. Default: 60
   */
  scheduleSeconds?: number;
  /**
   * Run the trigger as soon as the org's new events are stored (within a fraction of a second), besides every scheduleSeconds. false: every scheduleSeconds only, for a trigger too heavy to run on each commit. Default: true
   */
  realTime?: boolean;
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
  message?: Message;
  /**
   * scheduled and recurring: who is sent
   */
  audience?: {
    /**
     * Name of a segment file queries/<org>/segments/<segment>.sql returning email: its members when an occurrence starts are sent
     */
    segment: string;
  };
  /**
   * scheduled: once (at); recurring: every day or week (every, time)
   */
  schedule?: OnceSchedule | RecurringSchedule;
  /**
   * scheduled and recurring: at most this many contacts decided (and sent) per second, whatever the segment's size. Default: 100
   */
  sendRatePerSecond?: number;
  /**
   * Instead of message (a flow has one or the other): what happens to each entry, in order (waits, waits for an event, messages). An entry waiting is stored, not held in memory: GET /admin/v1/orgs/{slug}/flows/{id}/waits lists them
   *
   * @minItems 1
   * @maxItems 50
   */
  steps?: Step[];
  /**
   * With steps: when this event of the contact arrives after they entered, every entry of theirs still in the flow ends (exited) and sends nothing more
   */
  exit?: {
    event: EventRef;
  };
  goal?: Goal;
  /**
   * A triggered flow: true lets an Audience API token of the org ask what a run would decide for one contact now (GET /audience/v2/contacts/eligibility). Default: false (that lookup answers 404 flow_not_found)
   */
  exposeEligibility?: boolean;
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
 * via the `definition` "OnceSchedule".
 */
export interface OnceSchedule {
  /**
   * Local date and time, without an offset: 2026-12-01T09:00
   */
  at: string;
  timeZone: ScheduleZone;
}
/**
 * This interface was referenced by `FlowDefinition`'s JSON-Schema
 * via the `definition` "RecurringSchedule".
 */
export interface RecurringSchedule {
  every: 'day' | 'week';
  /**
   * Local time of day, HH:MM
   */
  time: string;
  /**
   * Required with every: week
   */
  weekday?: 'monday' | 'tuesday' | 'wednesday' | 'thursday' | 'friday' | 'saturday' | 'sunday';
  timeZone: ScheduleZone;
  /**
   * The first local date an occurrence may fall on
   */
  startsOn?: string;
  /**
   * The last local date an occurrence may fall on
   */
  endsOn?: string;
}
/**
 * This interface was referenced by `FlowDefinition`'s JSON-Schema
 * via the `definition` "WaitStep".
 */
export interface WaitStep {
  wait: {
    seconds: number;
  };
}
/**
 * This interface was referenced by `FlowDefinition`'s JSON-Schema
 * via the `definition` "WaitUntilStep".
 */
export interface WaitUntilStep {
  waitUntil: {
    event: EventRef;
    timeoutSeconds: number;
  };
  /**
   * When the contact's event arrives before the timeout: continue with the next step at once, or exit the flow. At the timeout the entry always continues. Later steps read which in wait.outcome ('event' or 'timeout')
   */
  then: 'continue' | 'exit';
}
/**
 * This interface was referenced by `FlowDefinition`'s JSON-Schema
 * via the `definition` "MessageStep".
 */
export interface MessageStep {
  message: Message;
  /**
   * The first branch whose condition holds sends its message instead
   *
   * @maxItems 50
   */
  branches?: Branch[];
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
  /**
   * archived: deleted; it never runs again, its history and id stay
   */
  status: 'draft' | 'live' | 'paused' | 'archived';
  createdAt: string;
  updatedAt: string;
  liveSince: string | null;
  /**
   * End of the last window run (microsecond precision)
   */
  cursorAt: string | null;
  /**
   * When the flow last ran, a run that found nothing new included. Stored at most once a minute for runs that found nothing, so after a restart an idle flow's may be up to a minute older.
   */
  lastRunAt: string | null;
  lastError: string | null;
}
