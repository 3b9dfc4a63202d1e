/* Generated from schemas/ by src/tools/generate-types.ts (npm run types). Do not edit. */

/**
 * A batch as POSTed to /http/v1/batch (SPEC 4.1): credentials once, then up to 2,500 event bodies. The envelope ($defs/envelope) is checked first and every member then on its own against event.schema.json#/$defs/batchMember, so each rejected member gets its own reasons (and quarantine row) while the batch stays atomic.
 */
export type BatchRequest = BatchEnvelope & {
  batch?: BatchMember[];
};
/**
 * One member of a batch (SPEC 4.1): an event body without credentials (those are on the batch). A member carrying partnerId or partnerSecret is rejected. Its members are listed as in Event, for the same reason.
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
};
/**
 * An event without credentials: the members common to every event, then the members of its type.
 */
export type EventBody = EventCommon & (TrackEvent | IdentifyEvent);
/**
 * Something the person did: one of the predefined events or custom, each with its own properties.
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
export type CartItems = CartItem[];
/**
 * @minItems 1
 */
export type CartItems1 = CartItem[];

/**
 * The batch without its members' contents: what can be checked before looking at any member.
 *
 * This interface was referenced by `undefined`'s JSON-Schema
 * via the `definition` "envelope".
 */
export interface BatchEnvelope {
  partnerId: string;
  partnerSecret: string;
  context?: EventContext;
  /**
   * 2,500: SPEC 4.1's cap, with 500 KB per batch and 32 KB per event enforced on the body's size.
   *
   * @minItems 1
   * @maxItems 2500
   */
  batch: unknown[];
}
/**
 * About the sending client. Extra keys are accepted (clients add their own). Absent means {}.
 */
export interface EventContext {
  /**
   * When true, a rejected event's 412 answer lists the schema errors. Default: false
   */
  debug?: boolean;
  userAgent?: string;
  page?: ContextPage;
  library?: ContextLibrary;
  [k: string]: unknown;
}
export interface ContextPage {
  url?: string;
  [k: string]: unknown;
}
export interface ContextLibrary {
  name?: string;
  version?: string;
  [k: string]: unknown;
}
/**
 * Members common to every event (SPEC 4.2).
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
  type: 'track' | 'identify';
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
 * What is known about the person. Extra keys are accepted and kept on the profile.
 */
export interface Traits {
  /**
   * The contact key once trimmed and lower-cased (SPEC 4.5).
   */
  email?: string;
  userId?: string;
  firstName?: string;
  lastName?: string;
  name?: string;
  address?: Address;
  [k: string]: unknown;
}
export interface Address {
  city?: string;
  state?: string;
  country?: string;
  postalCode?: string;
  [k: string]: unknown;
}
export interface PageViewEvent {
  event: 'page_view';
  properties?: PageViewProperties;
}
export interface PageViewProperties {
  title?: string;
  referrer?: string;
  url?: string;
  [k: string]: unknown;
}
export interface ProductViewEvent {
  event: 'product_view';
  properties: ProductViewProperties;
}
export interface ProductViewProperties {
  productId: string;
  [k: string]: unknown;
}
export interface CartChangeEvent {
  event: 'add_to_cart' | 'remove_from_cart';
  properties: CartChangeProperties;
}
/**
 * Properties of add_to_cart and remove_from_cart.
 */
export interface CartChangeProperties {
  productId: string;
  variant: string;
  quantity: number;
  [k: string]: unknown;
}
export interface CartEvent {
  event: 'update_cart' | 'cart';
  properties: CartProperties;
}
/**
 * Properties of update_cart and cart: the whole cart as it now is (empty when emptied).
 */
export interface CartProperties {
  cartItems: CartItems;
  [k: string]: unknown;
}
/**
 * One line of a cart. Extra keys are accepted.
 */
export interface CartItem {
  productId: string;
  variant: string;
  quantity: number;
  /**
   * Unit price.
   */
  price?: number;
  productName?: string;
  productUrl?: string;
  productImageUrl?: string;
  brand?: string;
  category?: string;
  color?: string;
  size?: string;
  style?: string;
  [k: string]: unknown;
}
export interface CompleteTransactionEvent {
  event: 'complete_transaction';
  properties: CompleteTransactionProperties;
}
export interface CompleteTransactionProperties {
  transactionId: string;
  /**
   * Excluding shipping and tax.
   */
  revenue: number;
  cartItems: CartItems1;
  [k: string]: unknown;
}
export interface RegistrationEvent {
  event: 'registration';
  properties: RegistrationProperties;
}
export interface RegistrationProperties {
  email: string;
  [k: string]: unknown;
}
export interface AuthenticationEvent {
  event: 'authentication';
  properties: AuthenticationProperties;
}
export interface AuthenticationProperties {
  userId: string;
  isLoggedIn: boolean;
  [k: string]: unknown;
}
export interface FavoriteEvent {
  event: 'favorite';
  properties: FavoriteProperties;
}
export interface FavoriteProperties {
  productId: string;
  [k: string]: unknown;
}
export interface WaitlistEvent {
  event: 'waitlist';
  properties: WaitlistProperties;
}
export interface WaitlistProperties {
  productId: string;
  variant: string;
  [k: string]: unknown;
}
export interface SearchEvent {
  event: 'search';
  properties: SearchProperties;
}
export interface SearchProperties {
  term: string;
  [k: string]: unknown;
}
export interface CustomEvent {
  event: 'custom';
  properties: CustomProperties;
}
/**
 * Properties of a custom event. Closed: the client's own key-values go in the free-form properties.properties, so a key misplaced one level up is reported instead of silently ignored by triggers.
 */
export interface CustomProperties {
  eventName: string;
  /**
   * When false, the event is stored even when no identity resolves (SPEC 4.5). Default: true
   */
  requiresIdentity?: boolean;
  /**
   * Free key-values.
   */
  properties?: {
    [k: string]: unknown;
  };
}
/**
 * Maps the clientId to traits.email for 7 days (SPEC 4.5). Carries no event or properties.
 */
export interface IdentifyEvent {
  type: 'identify';
  traits: IdentifyTraits;
  event?: never;
  properties?: never;
}
/**
 * Traits of an identify event: traits.email is what the clientId is mapped to (SPEC 4.5).
 */
export interface IdentifyTraits {
  email: string;
}
