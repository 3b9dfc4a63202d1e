/**
 * Segment's message format (also RudderStack's and Jitsu's, which copied it) turned into this service's
 * own events, so the tracking API (routes/http/tracking.ts) feeds the same validate and commit steps as
 * /http/v1/batch. The table of what maps to what is in docs/partners.md ("Moving from Segment"); in short:
 * - ids: anonymousId, else userId, is the clientId (an id longer than 45 characters becomes `h_` and
 *   43 characters of its SHA-256, the same every time); userId is kept as userId;
 * - identify with an e-mail (traits.email) maps every id it carries (anonymousId and userId) to it; without
 *   one it is kept as the custom event `identify` (its traits in properties);
 * - track: the ecommerce spec events become the predefined event that fits when their properties carry
 *   what that event needs, else (and every other name) `custom` with the name in snake case;
 * - page → page_view; screen and group → custom; alias → alias;
 * - times: timestamp (else originalTimestamp) is when it happened and sentAt when it was sent, by the
 *   client's clock, so the usual clock-skew correction applies (a back-dated call sets timestamp: RudderStack
 *   then puts the call's own time in originalTimestamp); /v1/import marks events as history
 *   (context.backfill: never enters a flow).
 * A message that cannot become an event at all (no id, a type Segment does not have) is a rejection with
 * the reason, which the route keeps in quarantine like any rejected event.
 */
import { hash } from 'node:crypto';
import type { ProblemDetail } from '../../core/errors.js';
import { CONTROL_CHARACTERS_MESSAGE, isControlFree } from './control-free.js';
import { type Body, isObject } from './to-log-entry.js';
import { validateBatchMember } from './validate-event.js';

export type SegmentTranslation = { ok: true; events: Body[] } | { ok: false; errors: ProblemDetail[] };

/** Segment's message types, and the one-letter paths analytics.js posts them to. */
export const SEGMENT_TYPES = ['track', 'identify', 'page', 'screen', 'group', 'alias'] as const;
export type SegmentType = (typeof SEGMENT_TYPES)[number];

const MAX_CLIENT_ID = 45;
const MAX_MESSAGE_ID = 100;
const MAX_EVENT_NAME = 38;

/**
 * The native event(s) one Segment message stands for. `type` is the path's type (/v1/track) when the
 * message does not say; `receivedAt` stands in for a missing sentAt; `history` marks /v1/import.
 */
export function fromSegment(message: unknown, options: { type?: SegmentType; receivedAt: number; history?: boolean }): SegmentTranslation {
  if (!isObject(message)) return rejected('/', 'must be a JSON object (a Segment message)');
  const type = message.type ?? options.type;
  if (typeof type !== 'string' || !(SEGMENT_TYPES as readonly string[]).includes(type)) {
    return rejected('/type', `must be one of ${SEGMENT_TYPES.join(', ')}`);
  }
  const anonymousId = idText(message.anonymousId);
  const userId = idText(message.userId);
  const clientId = anonymousId ?? userId;
  if (clientId === undefined) return rejected('/', 'needs a userId or an anonymousId (a non-empty string or number)');

  const given = isObject(message.context) ? message.context : undefined;
  const context: Body | undefined = options.history ? { ...given, backfill: true } : given;
  // context.traits stays in the context; of it the event needs only the e-mail (its identity), so the
  // stored event does not carry the traits twice.
  const contextEmail = isObject(given?.traits) ? given.traits.email : undefined;
  const traits = isObject(message.traits) ? message.traits : contextEmail !== undefined ? { email: contextEmail } : undefined;
  const properties: Body = isObject(message.properties) ? message.properties : {};
  const m: Parts = { message, receivedAt: options.receivedAt, userId, context, traits };

  switch (type as SegmentType) {
    case 'identify': {
      if (typeof traits?.email !== 'string') return ok([customEvent(m, clientId, 'identify', traits ?? {})]);
      // Every id the identify carries is mapped, so events sent with either one resolve.
      const ids = [...new Set([anonymousId, userId].filter((id): id is string => id !== undefined).map(asClientId))];
      return ok(
        ids.map((id, i) => {
          const event = baseEvent(m, id, 'identify');
          if (i > 0 && typeof event.messageId === 'string') event.messageId = bounded(`${event.messageId}:${i}`, MAX_MESSAGE_ID);
          return event;
        }),
      );
    }
    case 'alias': {
      const previousId = idText(message.previousId);
      if (previousId === undefined) return rejected('/previousId', 'an alias needs previousId, the id the person had before');
      const event = baseEvent(m, userId ?? clientId, 'alias');
      delete event.traits;
      event.previousId = asClientId(previousId);
      return ok([event]);
    }
    case 'page': {
      const event = baseEvent(m, clientId, 'track');
      event.event = 'page_view';
      // The page's name: Segment's message.name; Jitsu's page(name, properties) puts it in properties.name.
      const title = properties.title ?? textOf(message.name) ?? textOf(properties.name);
      event.properties = title !== undefined && properties.title === undefined ? { ...properties, title } : properties;
      return ok([event]);
    }
    case 'screen':
      return ok([customEvent(m, clientId, 'screen', typeof message.name === 'string' ? { name: message.name, ...properties } : properties)]);
    case 'group':
      return ok([customEvent(m, clientId, 'group', { groupId: idText(message.groupId) ?? null, ...(isObject(message.traits) ? { traits: message.traits } : {}) })]);
    case 'track': {
      if (typeof message.event !== 'string') return rejected('/event', 'a track needs event, the name of what happened (any non-empty string)');
      // The original name is kept in context.eventName, and shown as it is to whoever reads the event.
      if (!isControlFree(message.event)) return rejected('/event', CONTROL_CHARACTERS_MESSAGE);
      const name = eventName(message.event);
      if (name === '') return rejected('/event', 'must contain a letter or a digit');
      const predefined = specEvent(message.event, properties, traits, userId);
      if (predefined) {
        const event = baseEvent(m, clientId, 'track');
        event.event = predefined.event;
        event.properties = predefined.properties;
        if (validateBatchMember(event).ok) return ok([event]);
      }
      return ok([customEvent(m, clientId, name, properties, message.event)]);
    }
  }
}

/** What every event made from one message shares. */
interface Parts {
  message: Body;
  receivedAt: number;
  userId: string | undefined;
  context: Body | undefined;
  traits: Body | undefined;
}

// Built by assignment, not spreads: this runs per message on the collect path (bench/run.ts --only segment).
function baseEvent({ message, receivedAt, userId, context, traits }: Parts, id: string, type: string): Body {
  const event: Body = { clientId: asClientId(id), sentAt: epochMs(message.sentAt) ?? receivedAt, type };
  const at = timestampOf(message);
  if (at !== undefined) event.timestamp = at;
  if (typeof message.messageId === 'string' && message.messageId !== '') event.messageId = bounded(message.messageId, MAX_MESSAGE_ID);
  if (typeof context?.ip === 'string' && context.ip.length <= 45) event.ipAddress = context.ip;
  if (userId !== undefined) event.userId = userId;
  if (context !== undefined) event.context = context;
  if (traits !== undefined) event.traits = traits;
  return event;
}

/** A custom event; `original`: the Segment name, kept in context.eventName when the custom name differs. */
function customEvent(parts: Parts, id: string, name: string, properties: Body, original?: string): Body {
  const event = baseEvent(parts, id, 'track');
  event.event = 'custom';
  event.properties = { eventName: name, properties };
  if (original !== undefined && original !== name) event.context = { ...parts.context, eventName: original };
  return event;
}

/** Names seen lately and their custom names: a site sends a few dozen names over and over. */
const NAMES = new Map<string, string>();
const NAMES_KEPT = 1000;

/** A Segment event name as a custom event's name: lower snake case, at most 38 characters ("Order Shipped" → order_shipped). */
export function eventName(name: string): string {
  let known = NAMES.get(name);
  if (known === undefined) {
    known = snakeCase(name);
    if (NAMES.size >= NAMES_KEPT) NAMES.clear();
    if (name.length <= 200) NAMES.set(name, known);
  }
  return known;
}

function snakeCase(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, MAX_EVENT_NAME)
    .replace(/_+$/, '');
}

/**
 * Segment's ecommerce spec (and sign-up / sign-in) events as the predefined event that fits. The result is
 * only used when it passes the predefined event's schema; otherwise the event stays custom.
 */
function specEvent(name: string, p: Body, traits: Body | undefined, userId: string | undefined): { event: string; properties: Body } | undefined {
  const productId = idText(p.product_id) ?? idText(p.productId) ?? idText(p.sku);
  switch (name) {
    case 'Product Viewed':
      return { event: 'product_view', properties: { ...p, productId } };
    case 'Product Added':
    case 'Product Removed':
      return { event: name === 'Product Added' ? 'add_to_cart' : 'remove_from_cart', properties: { ...p, ...cartItem(p) } };
    case 'Cart Viewed':
      return { event: 'cart', properties: { ...p, cartItems: cartItems(p.products) } };
    case 'Order Completed':
      return {
        event: 'complete_transaction',
        properties: { ...p, transactionId: idText(p.order_id) ?? idText(p.checkout_id), revenue: p.revenue ?? p.total ?? p.subtotal, cartItems: cartItems(p.products) },
      };
    case 'Products Searched':
      return { event: 'search', properties: { ...p, term: p.query } };
    case 'Product Added to Wishlist':
      return { event: 'favorite', properties: { ...p, productId } };
    case 'Signed Up':
      return { event: 'registration', properties: { ...p, email: p.email ?? traits?.email } };
    case 'Signed In':
      // The spec puts the id in properties; SDKs send it as the message's userId.
      return { event: 'authentication', properties: { ...p, userId: idText(p.userId) ?? idText(p.user_id) ?? userId, isLoggedIn: true } };
    default:
      return undefined;
  }
}

/** A spec product as a cart line: quantity 1 and variant "default" when the product does not say. */
function cartItem(p: Body): Body {
  return { productId: idText(p.product_id) ?? idText(p.productId) ?? idText(p.sku), variant: idText(p.variant) ?? 'default', quantity: p.quantity ?? 1 };
}

function cartItems(products: unknown): unknown[] | undefined {
  return Array.isArray(products) ? products.map((p) => (isObject(p) ? { ...p, ...cartItem(p) } : p)) : undefined;
}

function ok(events: Body[]): SegmentTranslation {
  return { ok: true, events };
}

function rejected(path: string, message: string): SegmentTranslation {
  return { ok: false, errors: [{ path, message }] };
}

function textOf(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** Segment ids may be strings or numbers. */
function idText(value: unknown): string | undefined {
  if (typeof value === 'string') return value.trim() === '' ? undefined : value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return undefined;
}

function asClientId(id: string): string {
  return bounded(id, MAX_CLIENT_ID);
}

/** The text itself when it fits, else `h_` and the start of its SHA-256 (base64url): the same id every time. */
function bounded(text: string, max: number): string {
  return text.length <= max ? text : 'h_' + hash('sha256', text, 'base64url').slice(0, max - 2);
}

/** An ISO-8601 time (or epoch ms) as epoch ms, when it is one. */
function epochMs(value: unknown): number | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return Math.trunc(value);
  if (typeof value !== 'string') return undefined;
  const ms = Date.parse(value);
  return Number.isFinite(ms) ? ms : undefined;
}

/**
 * When it happened, by the client's clock: timestamp, else originalTimestamp, as RFC 3339 (none when
 * implausible). The caller's back-dated time is in timestamp for every SDK (analytics.js and analytics-node
 * send only it; RudderStack sends the call's own time as originalTimestamp beside it).
 */
function timestampOf(message: Body): string | undefined {
  const at = epochMs(message.timestamp) ?? epochMs(message.originalTimestamp);
  return at === undefined || at < 946684800000 || at > 4102444800000 ? undefined : new Date(at).toISOString();
}
