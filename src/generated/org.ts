/* Generated from schemas/ by src/tools/generate-types.ts (npm run types). Do not edit. */

/**
 * This interface was referenced by `Org`'s JSON-Schema
 * via the `definition` "slug".
 */
export type Slug = string;
/**
 * This interface was referenced by `Org`'s JSON-Schema
 * via the `definition` "name".
 */
export type Name = string;
/**
 * The premium Audience API is enabled. Default: false
 *
 * This interface was referenced by `Org`'s JSON-Schema
 * via the `definition` "audienceApi".
 */
export type AudienceApi = boolean;
/**
 * Audience API requests/s for the whole org, also the burst. Default: 50
 *
 * This interface was referenced by `Org`'s JSON-Schema
 * via the `definition` "rateLimit".
 */
export type RateLimit = number;
/**
 * Prefix of total_lifetime_value_jde. Default: $
 *
 * This interface was referenced by `Org`'s JSON-Schema
 * via the `definition` "currencySymbol".
 */
export type CurrencySymbol = string;
/**
 * Profile fields the Audience API returns, in this order. Default: every default profile field
 *
 * This interface was referenced by `Org`'s JSON-Schema
 * via the `definition` "contentFields".
 */
export type ContentFields = string[];
/**
 * Status of an unknown contact. Default: 404
 *
 * This interface was referenced by `Org`'s JSON-Schema
 * via the `definition` "notFoundStatus".
 */
export type NotFoundStatus = 404 | 400;
/**
 * At most this many sends to one contact
 *
 * This interface was referenced by `Org`'s JSON-Schema
 * via the `definition` "capMaxSends".
 */
export type CapMaxSends = number;
/**
 * in any window of this many seconds (a rolling window ending at the decision)
 *
 * This interface was referenced by `Org`'s JSON-Schema
 * via the `definition` "capWithinSeconds".
 */
export type CapWithinSeconds = number;
/**
 * Org-wide caps per contact, counted over the sends of every non-transactional flow of the org (pending or delivered); an entry over any cap is decided frequency_capped. PATCH replaces the whole list ([] removes every cap).
 *
 * @maxItems 20
 *
 * This interface was referenced by `Org`'s JSON-Schema
 * via the `definition` "frequencyCaps".
 */
export type FrequencyCaps = {
  /**
   * Only sends on this channel count, and only they are capped. Absent: every channel
   */
  channel?: 'email' | 'webhook' | 'outbox';
  maxSends: CapMaxSends;
  withinSeconds: CapWithinSeconds;
}[];
/**
 * The org's IANA time zone (e.g. Europe/Lisbon), for quiet hours of contacts whose own zone is unknown. Default: UTC
 *
 * This interface was referenced by `Org`'s JSON-Schema
 * via the `definition` "timeZone".
 */
export type TimeZone = string;
/**
 * This interface was referenced by `Org`'s JSON-Schema
 * via the `definition` "email".
 */
export type EmailAddress = string;

/**
 * An org as the admin API returns it (SPEC 3).
 */
export interface Org {
  slug: Slug;
  name: Name;
  audienceApi: AudienceApi;
  rateLimit: RateLimit;
  currencySymbol: CurrencySymbol;
  contentFields: ContentFields;
  notFoundStatus: NotFoundStatus;
  createdAt: string;
  updatedAt: string;
  retention?: Retention;
  frequencyCaps?: FrequencyCaps;
  quietHours?: QuietHours;
  timeZone?: TimeZone;
}
/**
 * Days each kind of row is kept for this org (0: forever), overriding the service's RETENTION_* settings; a member left out follows the setting. PATCH replaces the whole object ({} drops every override). See docs/operations/retention.md
 *
 * This interface was referenced by `Org`'s JSON-Schema
 * via the `definition` "retention".
 */
export interface Retention {
  /**
   * events received longer ago are deleted (RETENTION_EVENTS_DAYS)
   */
  eventsDays?: number;
  /**
   * events whose event time is older are deleted (RETENTION_EVENTS_BY_EVENT_TIME_DAYS)
   */
  eventsByEventTimeDays?: number;
  /**
   * rejected events (RETENTION_QUARANTINE_DAYS)
   */
  quarantineDays?: number;
  /**
   * flow decisions (RETENTION_DECISIONS_DAYS)
   */
  decisionsDays?: number;
  /**
   * the rendered content of finished sends (RETENTION_SENDS_CONTENT_DAYS)
   */
  sendsContentDays?: number;
}
/**
 * No message is sent between start and end, local time: an entry decided then is deferred (deferred_quiet_hours) and sent once the window ends, checked again against consent, suppression and caps. start > end spans midnight. A flow's own quietHours replace the org's.
 *
 * This interface was referenced by `Org`'s JSON-Schema
 * via the `definition` "QuietHours".
 */
export interface QuietHours {
  /**
   * HH:MM, 24-hour
   */
  start: string;
  /**
   * HH:MM, 24-hour; not equal to start
   */
  end: string;
  /**
   * "contact": the contact's timezone profile field (from events' context.timezone or traits.timezone, or an imported timezone column), the org's timeZone when unknown; else an IANA zone such as Europe/Lisbon
   */
  timeZone: string;
}
/**
 * This interface was referenced by `Org`'s JSON-Schema
 * via the `definition` "OrgCreate".
 */
export interface OrgCreate {
  slug: Slug;
  name: Name;
  audienceApi?: AudienceApi;
  rateLimit?: RateLimit;
  currencySymbol?: CurrencySymbol;
  contentFields?: ContentFields;
  notFoundStatus?: NotFoundStatus;
  retention?: Retention;
  frequencyCaps?: FrequencyCaps;
  quietHours?: QuietHours;
  timeZone?: TimeZone;
}
/**
 * This interface was referenced by `Org`'s JSON-Schema
 * via the `definition` "OrgPatch".
 */
export interface OrgPatch {
  name?: Name;
  audienceApi?: AudienceApi;
  rateLimit?: RateLimit;
  currencySymbol?: CurrencySymbol;
  contentFields?: ContentFields;
  notFoundStatus?: NotFoundStatus;
  retention?: Retention;
  frequencyCaps?: FrequencyCaps;
  /**
   * null removes the org's quiet hours
   */
  quietHours?: QuietHours | null;
  timeZone?: TimeZone;
}
/**
 * This interface was referenced by `Org`'s JSON-Schema
 * via the `definition` "FrequencyCap".
 */
export interface FrequencyCap {
  maxSends: CapMaxSends;
  withinSeconds: CapWithinSeconds;
}
