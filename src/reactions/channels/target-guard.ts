/**
 * SSRF guard for webhook targets (SPEC 8): a flow's URL must not reach the service's own host or
 * network (cloud metadata at 169.254.169.254, admin ports on loopback, internal services) unless the
 * operator allows private targets.
 *
 * Two checks, because neither suffices alone: checkWebhookUrl refuses literal addresses and localhost
 * when a flow is created (a clear error early), and the guarded Agent checks every address DNS returns
 * at connect time, so a name that resolves (or later re-resolves: DNS rebinding) to a private address
 * is refused on the very connection that would have used it.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { Agent } from 'undici';
import { embeddedIPv4 } from './embedded-ipv4.js';

/**
 * ipaddr.js range names no webhook should reach. Public unicast stays allowed, and so do NAT64, 6to4
 * and Teredo addresses whose embedded IPv4 is public (an IPv6-only host reaches IPv4 services that way).
 */
const FORBIDDEN_RANGES = new Set([
  'unspecified', 'loopback', 'private', 'linkLocal', 'uniqueLocal', 'carrierGradeNat', 'multicast',
  'broadcast', 'reserved', 'deprecatedSiteLocal', 'rfc6145',
]);
/** ::/96 (IPv4-compatible, deprecated) holds nothing legitimate and can smuggle ::127.0.0.1. */
const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96');

export function isForbiddenAddress(ip: string): boolean {
  if (!ipaddr.isValid(ip)) return true;
  // process() turns IPv4-mapped IPv6 (::ffff:127.0.0.1) into the IPv4 it carries.
  const addr = ipaddr.process(ip);
  if (FORBIDDEN_RANGES.has(addr.range())) return true;
  if (addr.kind() === 'ipv4') return false;
  const v6 = addr as ipaddr.IPv6;
  if (v6.match(IPV4_COMPATIBLE)) return true;
  // 64:ff9b::7f00:1 is 127.0.0.1 through a NAT64 gateway: judge the IPv4 the address leads to.
  return embeddedIPv4(v6).some((v4) => FORBIDDEN_RANGES.has(v4.range()));
}

/** Why a webhook URL is refused, or null. `localhost` names never go to DNS, so they are refused by name. */
export function checkWebhookUrl(url: string, allowPrivate: boolean): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'not a valid URL';
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return 'only http and https URLs are allowed';
  if (parsed.username || parsed.password) return 'credentials in the URL are not allowed';
  if (allowPrivate) return null;
  const host = parsed.hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return 'localhost targets are not allowed';
  if (isIP(host) && isForbiddenAddress(host)) return `private or reserved address ${host} is not allowed`;
  return null;
}

/** The error code a refused connection carries, so the channel can tell it from a network failure. */
export const FORBIDDEN_TARGET = 'ERR_FORBIDDEN_TARGET';

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * Host name lookups of webhook targets at once. Each is a getaddrinfo call holding a thread of libuv's
 * pool until the resolver answers (seconds when an org's DNS server is slow, or made slow on purpose),
 * and the embedded log writes every acknowledged event on that pool: lookups may hold 2 of its 4 threads
 * (threadpool.ts), never all of them. Connections are kept alive, so a lookup is rare per target.
 */
const MAX_LOOKUPS = 2;
let lookups = 0;
const waitingLookups: Array<() => void> = [];

function boundedLookup(hostname: string, options: LookupOptions & { all: true }, callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void): void {
  if (lookups >= MAX_LOOKUPS) {
    waitingLookups.push(() => boundedLookup(hostname, options, callback));
    return;
  }
  lookups++;
  dnsLookup(hostname, options, (err, addresses) => {
    lookups--;
    waitingLookups.shift()?.();
    callback(err, addresses);
  });
}

/**
 * A net.connect lookup (bounded, above); `guarded`: it refuses the host when any address it resolves to
 * is forbidden.
 */
function lookupFor(guarded: boolean) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    boundedLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, []);
      const bad = guarded ? addresses.find((a) => isForbiddenAddress(a.address)) : undefined;
      if (bad) {
        const refused = Object.assign(new Error(`${hostname} resolves to forbidden address ${bad.address}`), {
          code: FORBIDDEN_TARGET,
        });
        return callback(refused, []);
      }
      // Node asks for all addresses when it races IPv4/IPv6 (autoSelectFamily), else for one.
      if (options.all) return callback(null, addresses);
      const first = addresses[0];
      if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), []);
      callback(null, first.address, first.family);
    });
  };
}

/** The dispatcher webhooks are sent with; private targets pass only when allowed. */
export function createGuardedAgent(opts: { allowPrivate: boolean; connectTimeoutMs: number }): Agent {
  return new Agent({
    connect: { timeout: opts.connectTimeoutMs, lookup: lookupFor(!opts.allowPrivate) },
  });
}
