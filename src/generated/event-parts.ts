/* Generated from schemas/ by src/tools/generate-types.ts (npm run types). Do not edit. */

/**
 * This interface was referenced by `EventParts`'s JSON-Schema
 * via the `definition` "email".
 */
export type Email = string;
/**
 * Text without control characters: no C0 (U+0000-U+001F), DEL (U+007F) or C1 (U+0080-U+009F, U+009B is a terminal's CSI), no line or paragraph separator (U+2028, U+2029), no bidirectional mark, embedding, override or isolate (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069). Names partners send are printed in operators' terminals and lists: an escape sequence in one could write the clipboard or retitle the window, and a bidi override makes two names look alike.
 *
 * This interface was referenced by `EventParts`'s JSON-Schema
 * via the `definition` "controlFree".
 */
export type ControlFree = string;
/**
 * This interface was referenced by `EventParts`'s JSON-Schema
 * via the `definition` "productId".
 */
export type ProductId = string;
/**
 * This interface was referenced by `EventParts`'s JSON-Schema
 * via the `definition` "variant".
 */
export type ProductVariant = string;
/**
 * This interface was referenced by `EventParts`'s JSON-Schema
 * via the `definition` "quantity".
 */
export type Quantity = number;
/**
 * This interface was referenced by `EventParts`'s JSON-Schema
 * via the `definition` "cartItems".
 */
export type CartItems = CartItem[];
/**
 * @minItems 1
 */
export type TransactionCartItems = CartItem[];

/**
 * Shared parts of collected events (SPEC 4.2): context, traits, cart items and the properties of every predefined track event. Only the $defs are meant to be referenced. Predefined properties objects, cart items, context and traits accept extra keys (as Segment does): clients add their own and they are kept in the stored event. Only the custom event's own properties object is closed, because it has a dedicated free-form bag (properties.properties).
 */
export interface EventParts {
  [k: string]: unknown;
}
/**
 * About the sending client. Extra keys are accepted (clients add their own). Absent means {}.
 *
 * This interface was referenced by `EventParts`'s JSON-Schema
 * via the `definition` "context".
 */
export interface EventContext {
  /**
   * When true, a rejected event's 412 answer lists every schema error (without it, the first three). Default: false
   */
  debug?: boolean;
  /**
   * True for history (an import, a replay): stored and counted in profiles, but never enters a flow (decision backfill). Default: false
   */
  backfill?: boolean;
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
 * What is known about the person. Extra keys are accepted and kept on the profile.
 *
 * This interface was referenced by `EventParts`'s JSON-Schema
 * via the `definition` "traits".
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
  subscriptions?: Subscriptions;
  address?: Address;
  [k: string]: unknown;
}
/**
 * Consent changes, by topic: the contact subscribed or unsubscribed at the event's time (a later change from the admin API or the unsubscribe link wins over an earlier one). Topics the org has not defined are kept for when it does.
 */
export interface Subscriptions {
  [k: string]: 'subscribed' | 'unsubscribed';
}
export interface Address {
  city?: string;
  state?: string;
  country?: string;
  postalCode?: string;
  [k: string]: unknown;
}
/**
 * Traits of an identify event: traits.email is what the clientId is mapped to (SPEC 4.5).
 *
 * This interface was referenced by `EventParts`'s JSON-Schema
 * via the `definition` "identifyTraits".
 */
export interface IdentifyTraits {
  email: Email;
}
/**
 * One line of a cart. Extra keys are accepted.
 *
 * This interface was referenced by `EventParts`'s JSON-Schema
 * via the `definition` "cartItem".
 */
export interface CartItem {
  productId: ProductId;
  variant: ProductVariant;
  quantity: Quantity;
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
/**
 * This interface was referenced by `EventParts`'s JSON-Schema
 * via the `definition` "pageViewProperties".
 */
export interface PageViewProperties {
  title?: string;
  referrer?: string;
  url?: string;
  [k: string]: unknown;
}
/**
 * This interface was referenced by `EventParts`'s JSON-Schema
 * via the `definition` "productViewProperties".
 */
export interface ProductViewProperties {
  productId: ProductId;
  [k: string]: unknown;
}
/**
 * Properties of add_to_cart and remove_from_cart.
 *
 * This interface was referenced by `EventParts`'s JSON-Schema
 * via the `definition` "cartChangeProperties".
 */
export interface CartChangeProperties {
  productId: ProductId;
  variant: ProductVariant;
  quantity: Quantity;
  [k: string]: unknown;
}
/**
 * Properties of update_cart and cart: the whole cart as it now is (empty when emptied).
 *
 * This interface was referenced by `EventParts`'s JSON-Schema
 * via the `definition` "cartProperties".
 */
export interface CartProperties {
  cartItems: CartItems;
  [k: string]: unknown;
}
/**
 * This interface was referenced by `EventParts`'s JSON-Schema
 * via the `definition` "completeTransactionProperties".
 */
export interface CompleteTransactionProperties {
  transactionId: string;
  /**
   * Excluding shipping and tax.
   */
  revenue: number;
  cartItems: TransactionCartItems;
  [k: string]: unknown;
}
/**
 * This interface was referenced by `EventParts`'s JSON-Schema
 * via the `definition` "registrationProperties".
 */
export interface RegistrationProperties {
  email: Email;
  [k: string]: unknown;
}
/**
 * This interface was referenced by `EventParts`'s JSON-Schema
 * via the `definition` "authenticationProperties".
 */
export interface AuthenticationProperties {
  userId: string;
  isLoggedIn: boolean;
  [k: string]: unknown;
}
/**
 * This interface was referenced by `EventParts`'s JSON-Schema
 * via the `definition` "favoriteProperties".
 */
export interface FavoriteProperties {
  productId: ProductId;
  [k: string]: unknown;
}
/**
 * This interface was referenced by `EventParts`'s JSON-Schema
 * via the `definition` "waitlistProperties".
 */
export interface WaitlistProperties {
  productId: ProductId;
  variant: ProductVariant;
  [k: string]: unknown;
}
/**
 * This interface was referenced by `EventParts`'s JSON-Schema
 * via the `definition` "searchProperties".
 */
export interface SearchProperties {
  term: string;
  [k: string]: unknown;
}
/**
 * Properties of a custom event. Closed: the client's own key-values go in the free-form properties.properties, so a key misplaced one level up is reported instead of silently ignored by triggers.
 *
 * This interface was referenced by `EventParts`'s JSON-Schema
 * via the `definition` "customProperties".
 */
export interface CustomProperties {
  /**
   * The custom event's name, stored as custom_<eventName>: 1 to 38 characters, none of them a control character (controlFree).
   */
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
