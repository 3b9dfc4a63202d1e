/**
 * The key a client address is limited under. An IPv6 client usually holds a whole /64 (SLAAC, privacy
 * addresses: 2^64 addresses to rotate through), so keying by the full address would give a guesser a
 * fresh budget per request; IPv6 is limited per /64, IPv4 (and IPv4-mapped IPv6) per address.
 */
import ipaddr from 'ipaddr.js';

export function clientAddressKey(ip: string | undefined): string {
  if (ip === undefined || !ipaddr.isValid(ip)) return String(ip);
  const addr = ipaddr.process(ip);
  if (addr.kind() === 'ipv4') return addr.toString();
  return `${(addr as ipaddr.IPv6).parts.slice(0, 4).map((part) => part.toString(16)).join(':')}::/64`;
}
