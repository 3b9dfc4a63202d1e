/**
 * An admin HTTP request and its answer as NATS messages: the body is the message data, byte for byte
 * (no base64: a relayed import keeps all of max_payload); method, URL and status are `Audience-*`
 * headers, and HTTP headers travel as `Http-<name>`, so no HTTP header can pass for a relay one.
 */
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import { headers as natsHeaders, type MsgHdrs } from '@nats-io/transport-node';

/** Of the relay messages' layout; the shard's service advertises it (`$SRV.INFO.audience-shard`). */
export const RELAY_PROTOCOL_VERSION = '1.0.0';

/** nats-server's default max_payload, for the moments a connection has no server info (reconnecting). */
export const DEFAULT_MAX_PAYLOAD = 1024 * 1024;

const METHOD = 'Audience-Method';
const URL = 'Audience-Url';
const REQUEST_ID = 'Audience-Request-Id';
const STATUS = 'Audience-Status';
const HTTP = 'Http-';

/**
 * What the org-database routes read: the body's type, what the client accepts, and the admin key (the
 * shard checks it again). Cookies, forwarding headers and the rest stay on the api process.
 */
const FORWARDED_REQUEST_HEADERS = ['content-type', 'accept', 'authorization'] as const;

/** Hop-by-hop headers (RFC 9110 7.6.1) and those each process sets for itself. */
const LOCAL_ANSWER_HEADERS = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'content-length',
  'date',
  'request-id',
]);

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']);

export interface RelayRequest {
  method: string;
  /** Path and query string, as the client sent them. */
  url: string;
  /** The api process's Request-Id: the shard answers problems with it. */
  requestId: string;
  headers: Record<string, string>;
  body: Uint8Array;
}

export interface RelayAnswer {
  status: number;
  headers: Record<string, string | string[]>;
  body: Uint8Array;
}

export function encodeRequest(request: Omit<RelayRequest, 'body' | 'headers'>, http: IncomingHttpHeaders): MsgHdrs {
  const h = natsHeaders();
  h.set(METHOD, request.method);
  h.set(URL, request.url);
  h.set(REQUEST_ID, request.requestId);
  for (const name of FORWARDED_REQUEST_HEADERS) {
    const value = http[name];
    if (typeof value === 'string') h.set(HTTP + name, value);
  }
  return h;
}

/** undefined when the message is not a relay request (a stray or hostile publisher). */
export function decodeRequest(h: MsgHdrs | undefined, body: Uint8Array): RelayRequest | undefined {
  const method = h?.get(METHOD) ?? '';
  const url = h?.get(URL) ?? '';
  if (!h || !METHODS.has(method) || !url.startsWith('/')) return undefined;
  const headers: Record<string, string> = {};
  for (const name of FORWARDED_REQUEST_HEADERS) {
    if (h.has(HTTP + name)) headers[name] = h.get(HTTP + name);
  }
  return { method, url, requestId: relayedRequestId(h), headers, body };
}

/** The api process's Request-Id of a relay request ('' when absent). */
export function relayedRequestId(h: MsgHdrs | undefined): string {
  return h?.get(REQUEST_ID) ?? '';
}

export function encodeAnswer(status: number, http: OutgoingHttpHeaders): MsgHdrs {
  const h = natsHeaders();
  h.set(STATUS, String(status));
  for (const [name, values] of Object.entries(relayableAnswerHeaders(http))) {
    for (const value of Array.isArray(values) ? values : [values]) h.append(HTTP + name, value);
  }
  return h;
}

/** undefined when the message is not a relay answer. The headers are filtered again: anyone can answer. */
export function decodeAnswer(h: MsgHdrs | undefined, body: Uint8Array): RelayAnswer | undefined {
  const status = Number(h?.get(STATUS));
  if (!h || !Number.isInteger(status) || status < 200 || status > 599) return undefined;
  const http: Record<string, string | string[]> = {};
  for (const [key, values] of h) {
    // One value as a string: Fastify treats an array as a repeated header (Set-Cookie), even Content-Type.
    if (key.startsWith(HTTP)) http[key.slice(HTTP.length).toLowerCase()] = values.length === 1 ? values[0]! : values;
  }
  return { status, headers: relayableAnswerHeaders(http), body };
}

/** The answer's headers minus hop-by-hop ones, those `Connection` names, and those set per process. */
export function relayableAnswerHeaders(http: OutgoingHttpHeaders): Record<string, string | string[]> {
  const named = String(http.connection ?? '')
    .split(',')
    .map((token) => token.trim().toLowerCase());
  const kept: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(http)) {
    const key = name.toLowerCase();
    if (value === undefined || LOCAL_ANSWER_HEADERS.has(key) || named.includes(key)) continue;
    kept[key] = Array.isArray(value) ? value.map(String) : String(value);
  }
  return kept;
}

/** Bytes the headers take in the message, as the client counts them against max_payload. */
export function natsHeaderBytes(h: MsgHdrs): number {
  let bytes = Buffer.byteLength('NATS/1.0') + 4;
  for (const [key, values] of h) {
    for (const value of values) bytes += 4 + Buffer.byteLength(key) + Buffer.byteLength(value);
  }
  return bytes;
}
