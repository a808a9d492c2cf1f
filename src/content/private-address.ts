import { BlockList, isIP } from 'node:net';

/**
 * §15.5: which addresses a Content `uri` fetch must not reach unless the operator allows private networks. An IPv6
 * address can carry an IPv4 one (mapped, compatible, translated, NAT64, 6to4): such an address is judged by the IPv4
 * address it carries, since that is where a translator or relay delivers the request.
 */
const PRIVATE = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this network", 0.0.0.0 reaches the local host
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata endpoints
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24], // documentation ranges: never a real public host
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved and broadcast
] as const) {
  PRIVATE.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['64:ff9b:1::', 48], // local-use NAT64 (RFC 8215): translates into the operator's own network
  ['100::', 64], // discard-only
  ['2001::', 32], // Teredo: a relay tunnels to an IPv4 address hidden in the bits; refused whole
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique-local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated, still routed by some stacks)
  ['ff00::', 8], // multicast
] as const) {
  PRIVATE.addSubnet(network, prefix, 'ipv6');
}

/** IPv6 prefixes that carry an IPv4 address, and the 16-bit group where its first half sits. */
const EMBEDDINGS = (
  [
    ['::ffff:0:0', 96, 6], // IPv4-mapped
    ['::', 96, 6], // IPv4-compatible (deprecated, RFC 4291 §2.5.5.1)
    ['::ffff:0:0:0', 96, 6], // IPv4-translated (RFC 2765)
    ['64:ff9b::', 96, 6], // NAT64 well-known prefix (RFC 6052)
    ['2002::', 16, 1], // 6to4 (RFC 3056)
  ] as const
).map(([network, prefix, group]) => {
  const list = new BlockList();
  list.addSubnet(network, prefix, 'ipv6');
  return { list, group };
});

/** Whether an IP address is private, loopback, link-local or otherwise non-public, or carries such an IPv4 address. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return PRIVATE.check(address, 'ipv4');
  if (family !== 6) return true; // not an address: refuse rather than guess
  const bare = address.replace(/%.*$/, ''); // a zone id (fe80::1%eth0) names an interface, not part of the address
  if (PRIVATE.check(bare, 'ipv6')) return true;
  const embedded = embeddedIpv4(bare);
  return embedded !== undefined && PRIVATE.check(embedded, 'ipv4');
}

/** The IPv4 address an IPv6 address carries, when it is in one of the embedding prefixes. */
function embeddedIpv4(address: string): string | undefined {
  const embedding = EMBEDDINGS.find(({ list }) => list.check(address, 'ipv6'));
  if (embedding === undefined) return undefined;
  const groups = ipv6Groups(address);
  const high = groups[embedding.group] ?? 0;
  const low = groups[embedding.group + 1] ?? 0;
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
}

/** The eight 16-bit groups of a valid IPv6 address (`isIP` has checked it), a trailing dotted quad counting as two. */
function ipv6Groups(address: string): number[] {
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(address);
  let text = address;
  if (quad !== null) {
    const [a = 0, b = 0, c = 0, d = 0] = quad.slice(1).map(Number);
    text = `${address.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const parse = (part: string | undefined) => (part ? part.split(':').map((group) => parseInt(group, 16)) : []);
  const [head, tail] = text.split('::');
  if (tail === undefined) return parse(head);
  const front = parse(head);
  const back = parse(tail);
  return [...front, ...new Array<number>(8 - front.length - back.length).fill(0), ...back];
}
