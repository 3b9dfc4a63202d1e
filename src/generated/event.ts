/* Generated from schemas/ by src/tools/generate-types.ts (npm run types). Do not edit. */
import type {
  AuthenticationProperties,
  CartChangeProperties,
  CartProperties,
  CompleteTransactionProperties,
  CustomProperties,
  EventContext,
  FavoriteProperties,
  IdentifyTraits,
  PageViewProperties,
  ProductViewProperties,
  RegistrationProperties,
  SearchProperties,
  Traits,
  WaitlistProperties
} from './event-parts.js';

/**
 * One event as POSTed to /http/v1/collect (SPEC 4.2): the partner's credentials and an event body. Unknown top-level members are rejected. Every body member is also listed here (as true) because additionalProperties only sees the properties of its own schema; unevaluatedProperties would drop the annotations of a failing branch and then report every member of a slightly wrong event as unknown.
 */
export type Event = EventBody & {
  partnerId: PartnerId;
  partnerSecret: PartnerSecret;
  writeKey?: WriteKey;
  clientId?: unknown;
  sentAt?: unknown;
  type?: unknown;
  context?: unknown;
  messageId?: unknown;
  timestamp?: unknown;
  ipAddress?: unknown;
  timezone?: unknown;
  traits?: unknown;
  userId?: unknown;
  event?: unknown;
  properties?: unknown;
  previousId?: unknown;
};
/**
 * An event without credentials: the members common to every event, then the members of its type.
 *
 * This interface was referenced by `undefined`'s JSON-Schema
 * via the `definition` "eventBody".
 */
export type EventBody = EventCommon & (TrackEvent | IdentifyEvent | AliasEvent);
/**
 * Something the person did: one of the predefined events or custom, each with its own properties.
 *
 * This interface was referenced by `undefined`'s JSON-Schema
 * via the `definition` "trackEvent".
 */
export type TrackEvent = (
  | PageViewEvent
  | ProductViewEvent
  | CartChangeEvent
  | CartEvent
  | CompleteTransactionEvent
  | RegistrationEvent
  | AuthenticationEvent
  | FavoriteEvent
  | WaitlistEvent
  | SearchEvent
  | CustomEvent
) & {
  type: 'track';
  event:
    | 'page_view'
    | 'product_view'
    | 'add_to_cart'
    | 'remove_from_cart'
    | 'update_cart'
    | 'cart'
    | 'complete_transaction'
    | 'registration'
    | 'authentication'
    | 'favorite'
    | 'waitlist'
    | 'search'
    | 'custom';
};
/**
 * This interface was referenced by `undefined`'s JSON-Schema
 * via the `definition` "partnerId".
 */
export type PartnerId = string;
/**
 * This interface was referenced by `undefined`'s JSON-Schema
 * via the `definition` "partnerSecret".
 */
export type PartnerSecret = string;
/**
 * Ignored here and never stored: accepted so that an environment's credentials (partnerId, partnerSecret, writeKey) can be sent as they were given. The write key authenticates the tracking API (/v1/*), not this endpoint.
 *
 * This interface was referenced by `undefined`'s JSON-Schema
 * via the `definition` "writeKey".
 */
export type WriteKey = string;
/**
 * One member of a batch (SPEC 4.1): an event body without credentials (those are on the batch). A member carrying partnerId or partnerSecret is rejected. Its members are listed as in Event, for the same reason.
 *
 * This interface was referenced by `undefined`'s JSON-Schema
 * via the `definition` "batchMember".
 */
export type BatchMember = EventBody & {
  clientId?: unknown;
  sentAt?: unknown;
  type?: unknown;
  context?: unknown;
  messageId?: unknown;
  timestamp?: unknown;
  ipAddress?: unknown;
  timezone?: unknown;
  traits?: unknown;
  userId?: unknown;
  event?: unknown;
  properties?: unknown;
  previousId?: unknown;
};

/**
 * Members common to every event (SPEC 4.2).
 *
 * This interface was referenced by `undefined`'s JSON-Schema
 * via the `definition` "eventCommon".
 */
export interface EventCommon {
  /**
   * The client's anonymous id (e.g. a first-party cookie).
   */
  clientId: string;
  /**
   * When the client sent the event, epoch milliseconds by the client's clock; with timestamp it corrects clock skew (SPEC 4.4). From 2000-01-01 to 2100-01-01 UTC: a value in seconds (about 1.7e9 today) is below the minimum and refused instead of being read as January 1970.
   */
  sentAt: number;
  type: 'track' | 'identify' | 'alias';
  context?: EventContext;
  /**
   * Dedupe key within 24 h (SPEC 4.4). Absent: the server assigns a UUIDv7.
   */
  messageId?: string;
  /**
   * When the event happened, by the client's clock (RFC 3339, with offset).
   */
  timestamp?: string;
  /**
   * 45: the longest textual IPv6 address (with an IPv4 tail).
   */
  ipAddress?: string;
  /**
   * Minutes, as JS Date.getTimezoneOffset() (UTC+14 is -840).
   */
  timezone?: number;
  traits?: Traits;
  userId?: string;
}
/**
 * This interface was referenced by `undefined`'s JSON-Schema
 * via the `definition` "pageViewEvent".
 */
export interface PageViewEvent {
  event: 'page_view';
  properties?: PageViewProperties;
}
/**
 * This interface was referenced by `undefined`'s JSON-Schema
 * via the `definition` "productViewEvent".
 */
export interface ProductViewEvent {
  event: 'product_view';
  properties: ProductViewProperties;
}
/**
 * This interface was referenced by `undefined`'s JSON-Schema
 * via the `definition` "cartChangeEvent".
 */
export interface CartChangeEvent {
  event: 'add_to_cart' | 'remove_from_cart';
  properties: CartChangeProperties;
}
/**
 * This interface was referenced by `undefined`'s JSON-Schema
 * via the `definition` "cartEvent".
 */
export interface CartEvent {
  event: 'update_cart' | 'cart';
  properties: CartProperties;
}
/**
 * This interface was referenced by `undefined`'s JSON-Schema
 * via the `definition` "completeTransactionEvent".
 */
export interface CompleteTransactionEvent {
  event: 'complete_transaction';
  properties: CompleteTransactionProperties;
}
/**
 * This interface was referenced by `undefined`'s JSON-Schema
 * via the `definition` "registrationEvent".
 */
export interface RegistrationEvent {
  event: 'registration';
  properties: RegistrationProperties;
}
/**
 * This interface was referenced by `undefined`'s JSON-Schema
 * via the `definition` "authenticationEvent".
 */
export interface AuthenticationEvent {
  event: 'authentication';
  properties: AuthenticationProperties;
}
/**
 * This interface was referenced by `undefined`'s JSON-Schema
 * via the `definition` "favoriteEvent".
 */
export interface FavoriteEvent {
  event: 'favorite';
  properties: FavoriteProperties;
}
/**
 * This interface was referenced by `undefined`'s JSON-Schema
 * via the `definition` "waitlistEvent".
 */
export interface WaitlistEvent {
  event: 'waitlist';
  properties: WaitlistProperties;
}
/**
 * This interface was referenced by `undefined`'s JSON-Schema
 * via the `definition` "searchEvent".
 */
export interface SearchEvent {
  event: 'search';
  properties: SearchProperties;
}
/**
 * This interface was referenced by `undefined`'s JSON-Schema
 * via the `definition` "customEvent".
 */
export interface CustomEvent {
  event: 'custom';
  properties: CustomProperties;
}
/**
 * Maps the clientId to traits.email for 7 days (SPEC 4.5). Carries no event or properties.
 *
 * This interface was referenced by `undefined`'s JSON-Schema
 * via the `definition` "identifyEvent".
 */
export interface IdentifyEvent {
  type: 'identify';
  traits: IdentifyTraits;
  event?: never;
  properties?: never;
}
/**
 * Says previousId (an earlier clientId, e.g. an anonymous one) is the same person as this event's clientId: previousId is mapped to the e-mail clientId is mapped to, and its waiting events are released: when the alias is compacted, or, when clientId is not identified yet, when the identify that releases the alias comes (docs/partners.md). Carries no event or properties.
 *
 * This interface was referenced by `undefined`'s JSON-Schema
 * via the `definition` "aliasEvent".
 */
export interface AliasEvent {
  type: 'alias';
  /**
   * The earlier clientId.
   */
  previousId: string;
  event?: never;
  properties?: never;
}
