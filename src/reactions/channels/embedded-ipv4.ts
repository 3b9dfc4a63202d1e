/**
 * IPv4 addresses that IPv6 transition mechanisms carry inside an IPv6 address. A packet to such an
 * address can end at the IPv4 one (a NAT64 gateway, a 6to4 or Teredo relay translates it), so the
 * SSRF guard judges the IPv4 inside: `64:ff9b::a9fe:a9fe` is the metadata service 169.254.169.254.
 */
import ipaddr from 'ipaddr.js';

/** RFC 6052 well-known NAT64 prefix: the IPv4 is the last 32 bits. */
const NAT64 = ipaddr.parseCIDR('64:ff9b::/96');
/**
 * RFC 8215 local-use NAT64 prefix: operators use a /96 inside it (IPv4 last) or the /48 itself, where
 * RFC 6052 puts the IPv4 in bits 48–64 and 72–88 (around the zero `u` octet) and zeros after it.
 */
const NAT64_LOCAL = ipaddr.parseCIDR('64:ff9b:1::/48');
/** RFC 3056: 2002:AABB:CCDD::/48 carries the IPv4 AA.BB.CC.DD in bits 16–48. */
const SIX_TO_FOUR = ipaddr.parseCIDR('2002::/16');
/** RFC 4380: 2001:0:SSSS:SSSS:flags:port:CCCC:CCCC, server IPv4 S, client IPv4 C inverted (XOR 0xffffffff). */
const TEREDO = ipaddr.parseCIDR('2001::/32');

function ipv4(high: number, low: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
}

/** Every IPv4 the address may lead to; empty for an address that embeds none. */
export function embeddedIPv4(addr: ipaddr.IPv6): ipaddr.IPv4[] {
  const p = addr.parts;
  if (addr.match(NAT64)) return [ipv4(p[6]!, p[7]!)];
  if (addr.match(NAT64_LOCAL)) {
    // Which layout a gateway uses is its configuration, unknown here; the zero suffix tells them apart.
    const zeroSuffix = (p[5]! & 0xff) === 0 && p[6] === 0 && p[7] === 0;
    return zeroSuffix ? [new ipaddr.IPv4([p[3]! >> 8, p[3]! & 0xff, p[4]! & 0xff, p[5]! >> 8])] : [ipv4(p[6]!, p[7]!)];
  }
  if (addr.match(SIX_TO_FOUR)) return [ipv4(p[1]!, p[2]!)];
  if (addr.match(TEREDO)) return [ipv4(p[2]!, p[3]!), ipv4(p[6]! ^ 0xffff, p[7]! ^ 0xffff)];
  return [];
}
