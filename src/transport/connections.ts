import { readFileSync } from 'node:fs';
import type { IncomingMessage, Server } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Connection hygiene for the HTTP listener (§15.5): how long a client may take to send its headers and its body,
 * how long an idle keep-alive connection is kept, how long a connection may sit with nothing moving (a client that
 * stops reading its answer), and how many connections are open at once — never so many that the process runs out
 * of file descriptors for its own files, and never more than a share of them from one address, so one client cannot
 * take every slot. Past the per-address share a connection is closed at once; past the total, it takes the place of
 * a connection that has not yet sent a whole request, or is closed. The others are served on.
 */
export interface ConnectionLimits {
  readonly headersTimeoutMs: number;
  readonly bodyTimeoutMs: number;
  readonly keepAliveTimeoutMs: number;
  readonly idleTimeoutMs: number;
  readonly maxConnections: number;
  readonly maxConnectionsPerAddress: number;
}

/** Descriptors kept for the process's own use (store, indexes, logs, workers, model files) below the limit. */
const RESERVED_DESCRIPTORS = 64;

/** Fastify's server options for these limits; the longest answer (`requestTimeoutMs`) never counts as idle. */
export function serverOptions(limits: ConnectionLimits, requestTimeoutMs: number) {
  return {
    // Node's requestTimeout bounds receiving the request (headers and body), not producing the answer.
    requestTimeout: limits.bodyTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    connectionTimeout: Math.max(limits.idleTimeoutMs, requestTimeoutMs + 1000),
    // Timeouts are checked this often (Node's default, 30 s, would let a slow client overstay by that much).
    http: {
      headersTimeout: limits.headersTimeoutMs,
      connectionsCheckingInterval: Math.min(1000, limits.headersTimeoutMs),
    },
  };
}

/** Caps open connections on `server` below the descriptor limit, and per client address; returns the cap applied. */
export function capConnections(server: Server, limits: ConnectionLimits): number {
  const descriptors = descriptorLimit();
  const cap =
    descriptors === undefined
      ? limits.maxConnections
      : Math.max(1, Math.min(limits.maxConnections, descriptors - RESERVED_DESCRIPTORS));
  capPerAddress(server, limits.maxConnectionsPerAddress);
  capTotal(server, cap);
  return cap;
}

/**
 * At most `cap` connections. When full, a newcomer takes the place of the oldest connection that has not yet sent
 * a whole request (a client trickling headers or a body holds a slot it has not used), so clients that reconnect
 * as fast as they are cut cannot keep everyone else out; with no such connection, the newcomer is closed.
 */
function capTotal(server: Server, cap: number): void {
  const open = new Set<Socket>(); // in arrival order
  const served = new WeakSet<Socket>();
  server.on('request', (request: IncomingMessage) => served.add(request.socket));
  server.on('connection', (socket: Socket) => {
    if (socket.destroyed) return; // refused for its address already
    if (open.size >= cap) {
      const idle = [...open].find((held) => !served.has(held));
      if (idle === undefined) {
        socket.destroy();
        return;
      }
      idle.destroy();
      open.delete(idle);
    }
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  });
}

/** Closes a connection at once when its address already holds `cap` open ones; the count map holds open ones only. */
function capPerAddress(server: Server, cap: number): void {
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    const count = (open.get(address) ?? 0) + 1;
    if (count > cap) {
      socket.destroy();
      return;
    }
    open.set(address, count);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left === 0) open.delete(address);
      else open.set(address, left);
    });
  });
}

/** The soft limit on open files (Linux `/proc/self/limits`); undefined where unknown or unlimited. */
function descriptorLimit(): number | undefined {
  try {
    const line = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    return line?.[1] === undefined ? undefined : Number(line[1]);
  } catch {
    return undefined;
  }
}
