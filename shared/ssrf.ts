// Which addresses a webhook may be delivered to
// (docs/decisions/0035-delivery-requests-and-retries.md): public unicast only. Loopback, private,
// link-local (cloud metadata 169.254.169.254 included), CGNAT, documentation, multicast and other
// special-purpose ranges are refused. The check runs on the address actually connected to (see
// guardedLookup), so a name that resolves to a private address is refused too.
import dns from 'node:dns';
import net from 'node:net';

// Separate lists per family: a BlockList checks IPv4 addresses against IPv4-mapped IPv6 subnets too.
const blockedV4 = new net.BlockList();
const blockedV6 = new net.BlockList();
for (const [address, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16],
  ['172.16.0.0', 12], ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16],
  ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) blockedV4.addSubnet(address, prefix, 'ipv4');
// IPv4-mapped and 6to4 addresses can embed any IPv4 address, so they are refused as a whole.
for (const [address, prefix] of [
  ['::', 128], ['::1', 128], ['::ffff:0:0', 96], ['64:ff9b:1::', 48], ['100::', 64], ['2001:db8::', 32],
  ['2002::', 16], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8],
] as const) blockedV6.addSubnet(address, prefix, 'ipv6');

export function isPublicAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 0) return false;
  return family === 4 ? !blockedV4.check(address, 'ipv4') : !blockedV6.check(address, 'ipv6');
}

export class AddressRefusedError extends Error {
  readonly code = 'ERR_WEBHOOK_ADDRESS_REFUSED';
  constructor(host: string, address: string) {
    super(host === address ? `address ${address} is not public` : `${host} resolves to ${address}, which is not public`);
    this.name = 'AddressRefusedError';
  }
}

/** The host of a URL as an IP literal (brackets of IPv6 removed), or null for a name. */
export function ipLiteral(url: string): string | null {
  const host = new URL(url).hostname.replace(/^\[(.*)\]$/, '$1');
  return net.isIP(host) ? host : null;
}

/** Refuses a URL whose host is a non-public IP literal (names are checked when they resolve). */
export function checkUrlHost(url: string): void {
  const literal = ipLiteral(url);
  if (literal && !isPublicAddress(literal)) throw new AddressRefusedError(literal, literal);
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

/**
 * A dns.lookup for http(s) agents that refuses a name when any of its addresses is not public.
 * Node connects to what lookup returns, so the address checked is the address connected to; IP
 * literals skip lookup and are checked by checkUrlHost before the request.
 */
export function guardedLookup(hostname: string, options: dns.LookupOptions, callback: LookupCallback): void {
  dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error, []);
    const refused = addresses.find((a) => !isPublicAddress(a.address));
    if (refused) return callback(new AddressRefusedError(hostname, refused.address) as NodeJS.ErrnoException, []);
    if (options.all) return callback(null, addresses);
    const first = addresses[0];
    if (!first) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), []);
    callback(null, first.address, first.family);
  });
}
