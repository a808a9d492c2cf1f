import { isIPv6, type Socket } from 'node:net';

/**
 * The caller a client address stands for where no API key names one (§15.6): an IPv4 address itself; an IPv6
 * address's /64 network, the block one host or one subscriber is given. Counted one by one, the 2^64 addresses of
 * one network were as many callers, each with its own connections, sessions and rate limit: enough to fill the
 * session table or every per-address share from one machine.
 */
export function callerOfAddress(address: string): string {
  const zone = address.indexOf('%'); // a zone index (fe80::1%eth0) names an interface, not a host
  const bare = zone < 0 ? address : address.slice(0, zone);
  if (!isIPv6(bare)) return address;
  const groups = expanded(bare);
  // IPv4 written as IPv6 (::ffff:192.0.2.1): the IPv4 host.
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff)
    return bare.slice(bare.lastIndexOf(':') + 1);
  return `${groups
    .slice(0, 4)
    .map((group) => group.toString(16))
    .join(':')}::/64`;
}

const socketCallers = new WeakMap<Socket, string>();

/**
 * `callerOfAddress` of a connection's remote address, worked out once per connection: the connection cap, the
 * per-address turns and the request's caller all ask it of the same socket.
 */
export function callerOfSocket(socket: Socket): string {
  let caller = socketCallers.get(socket);
  if (caller === undefined) socketCallers.set(socket, (caller = callerOfAddress(socket.remoteAddress ?? '')));
  return caller;
}

/** The eight 16-bit groups of an IPv6 address (`isIPv6` has accepted it), an embedded IPv4 tail as two. */
function expanded(address: string): number[] {
  const groupsOf = (part: string): number[] =>
    part === ''
      ? []
      : part.split(':').flatMap((group) => {
          if (!group.includes('.')) return [parseInt(group, 16)];
          const [a, b, c, d] = group.split('.').map(Number) as [number, number, number, number];
          return [(a << 8) | b, (c << 8) | d];
        });
  const [head, tail] = address.split('::') as [string, string | undefined];
  const left = groupsOf(head);
  const right = tail === undefined ? [] : groupsOf(tail);
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}
