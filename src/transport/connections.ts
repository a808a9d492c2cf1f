import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { RpcError } from '../protocol/errors.js';
import { callerOfSocket } from './address-caller.js';
import { AddressReads } from './address-reads.js';
import type { BodyBudget } from './body.js';
import { refuse } from './json-answer.js';

/**
 * Connection hygiene for the HTTP listener (§15.5): how long a client may take to send its headers and its body,
 * how long an idle keep-alive connection is kept, how long a connection may sit with nothing moving (a client that
 * stops reading its answer), and how many connections are open at once — never so many that the process runs out
 * of file descriptors for its own files, and never more than a share of them from one address, so one client cannot
 * take every slot. Past the per-address share a connection is closed at once; past the total, it takes the place of
 * one its client is not using — of the address holding the most, or one still sending a request — or is closed
 * (`capOpen`). The others are served on.
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

/** Header lines of a request kept (Node's default is 2,000; the rest are dropped unread by any handler). */
const MAX_HEADERS = 64;

/** Requests of one connection in the handler at once; more wait their turn (see `pipelineGate`). */
export const PIPELINE_IN_FLIGHT = 4;
/** Requests of one connection waiting their turn at most; a client with more is cut. */
export const PIPELINE_WAITING = 1024;

/**
 * Requests from one client address started in one turn of the event loop at most; more start in later turns, ahead of
 * what that address sends next. A turn serves every connection with something to read: 64 connections of one client
 * each bringing a 128-member batch made a turn of ~30 ms that every other client waited out.
 */
export const ADDRESS_STARTS_PER_TURN = 8;

/** Serves a request it recognises (true: the RCP routes, transport/http.ts); the rest go on to Fastify (false). */
export type FrontListener = (request: IncomingMessage, response: ServerResponse) => boolean;

/**
 * Fastify's server options for these limits: a server of our own (Fastify's `serverFactory`), so that every request
 * is counted against its address's reads of the turn (`AddressReads`), passes the pipelining gate, then `front` (the
 * RCP routes, served beside Fastify), then Fastify. With a factory Fastify applies none of its timeout options, so
 * every timeout is set here; the longest answer (`requestTimeoutMs`) never counts as idle.
 */
export function serverOptions(
  limits: ConnectionLimits,
  requestTimeoutMs: number,
  bodies?: WaitingBodies,
  front?: FrontListener,
) {
  return {
    serverFactory: (handler: RequestListener): Server => {
      const listener: RequestListener =
        front === undefined
          ? handler
          : (request, response) => front(request, response) || void handler(request, response);
      const reads = new AddressReads();
      const gate = pipelineGate(listener, bodies);
      const server = createServer(
        {
          // Node's requestTimeout bounds receiving the request (headers and body), not producing the answer.
          requestTimeout: limits.bodyTimeoutMs,
          headersTimeout: limits.headersTimeoutMs,
          // Timeouts are checked this often (Node's default, 30 s, would let a slow client overstay by that much).
          connectionsCheckingInterval: Math.min(1000, limits.headersTimeoutMs),
          // Node answers these before any listener sees them, so `reads` would not count them: answered below.
          requireHostHeader: false,
        },
        (request, response) => {
          reads.read(request.socket);
          if (request.httpVersion === '1.1' && request.headers.host === undefined) return void hostMissing(response);
          gate(request, response);
        },
      );
      server.on('connection', (socket: Socket) => reads.watch(socket));
      server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => {
        reads.read(request.socket);
        response.writeHead(417).end();
      });
      server.keepAliveTimeout = limits.keepAliveTimeoutMs;
      server.maxHeadersCount = MAX_HEADERS;
      server.setTimeout(Math.max(limits.idleTimeoutMs, requestTimeoutMs + 1000));
      return server;
    },
  };
}

/**
 * RFC 9112 §3.2: an HTTP/1.1 request without a Host header is answered 400, and the connection closed, as Node's own
 * check does (`requireHostHeader`); it is made here so that such requests count against their address's reads: one
 * address pipelining them on 250 connections held every other client 4.1-4.6 s when Node answered them uncounted
 * (an unknown `Expect` likewise, answered 417 by the server's `checkExpectation` listener).
 */
function hostMissing(response: ServerResponse): void {
  response.writeHead(400, { connection: 'close' }).end();
}

/** The budget of bodies being received, and the largest body a request may have. */
export interface WaitingBodies {
  readonly budget: BodyBudget;
  readonly maxBodyBytes: number;
}

interface Pipeline {
  active: number;
  /** Requests waiting their turn, with the body bytes each declared (held against the body budget meanwhile). */
  readonly waiting: [IncomingMessage, ServerResponse, number][];
  scheduled: boolean;
  /** The turn of the event loop in which its last answer finished (see `currentTurn`). */
  lastClosedTurn: number;
}

let turn = 0;
let turning = false;

/** A number that changes once per turn of the event loop in which it is asked for (one shared immediate a turn). */
function currentTurn(): number {
  if (!turning) {
    turning = true;
    setImmediate(() => {
      turn++;
      turning = false;
    });
  }
  return turn;
}

/**
 * Each request starts on a turn of the event loop of its own (§15.5). Node parses the next request pipelined on a
 * connection as soon as the previous answer is written, inside the same chain of callbacks, so a burst of pipelined
 * requests ran back to back without the loop ever serving anyone else: 500 pipelined pings held it 150-600 ms,
 * unauthenticated ones included. Here every request waits for a later turn (a millisecond's fraction), at most
 * `PIPELINE_IN_FLIGHT` of a connection are in the handler at once, and a connection is cut when more than
 * `PIPELINE_WAITING` wait or their declared bodies do not fit the budget of bodies being received (Node reads a
 * waiting request's body all the same). Answers keep their order: Node writes them in request order regardless.
 */
export function pipelineGate(handler: RequestListener, waitingBodies?: WaitingBodies): RequestListener {
  const bodies = waitingBodies?.budget;
  const pipelines = new WeakMap<Socket, Pipeline>();
  const turns = new AddressTurns();
  const start = (pipeline: Pipeline, request: IncomingMessage, response: ServerResponse) => {
    pipeline.active++;
    response.once('close', () => {
      pipeline.active--;
      pipeline.lastClosedTurn = currentTurn();
      schedule(pipeline);
    });
    turns.start(callerOfSocket(request.socket), () => void handler(request, response));
  };
  const schedule = (pipeline: Pipeline) => {
    if (pipeline.scheduled || pipeline.waiting.length === 0 || pipeline.active >= PIPELINE_IN_FLIGHT) return;
    pipeline.scheduled = true;
    setImmediate(() => {
      pipeline.scheduled = false;
      const next = pipeline.waiting.shift();
      if (next === undefined) return;
      const [request, response, declared] = next;
      bodies?.give(declared);
      start(pipeline, request, response);
      schedule(pipeline);
    });
  };
  const open = (socket: Socket): Pipeline => {
    const pipeline: Pipeline = { active: 0, waiting: [], scheduled: false, lastClosedTurn: -1 };
    pipelines.set(socket, pipeline);
    // A connection cut with requests still waiting gives their bodies' share back.
    socket.once('close', () => {
      for (const [, , declared] of pipeline.waiting.splice(0)) bodies?.give(declared);
    });
    return pipeline;
  };
  return (request, response) => {
    const pipeline = pipelines.get(request.socket) ?? open(request.socket);
    // A body over the limit is refused unread when its request starts (-32013): it holds nothing meanwhile.
    const length = Math.max(0, Number(request.headers['content-length'] ?? 0) || 0);
    const declared = length > (waitingBodies?.maxBodyBytes ?? Infinity) ? 0 : length;
    // A connection with nothing in the handler or waiting, whose last answer went out in an earlier turn, starts its
    // request now: it came from a read of the socket, a turn of its own (the common case: one request at a time per
    // connection). What Node hands over inside the chain that wrote the previous answer waits for a later turn.
    const idle = pipeline.active === 0 && pipeline.waiting.length === 0 && !pipeline.scheduled;
    if (idle && pipeline.lastClosedTurn !== currentTurn()) {
      return start(pipeline, request, response);
    }
    if (pipeline.waiting.length >= PIPELINE_WAITING) return void request.socket.destroy();
    if (!(bodies?.take(declared) ?? true)) return busy(response, bodies!);
    pipeline.waiting.push([request, response, declared]);
    schedule(pipeline);
  };
}

/**
 * Each client address starts at most `ADDRESS_STARTS_PER_TURN` requests a turn (§15.5); the rest wait, in arrival
 * order per address, and each later turn starts that many more of every address with some waiting. What waits is
 * bounded by the connections (`capOpen`) and the requests each may have in the handler (`PIPELINE_IN_FLIGHT`).
 */
class AddressTurns {
  readonly #started = new Map<string, number>();
  readonly #waiting = new Map<string, (() => void)[]>();
  #turn = -1;
  #scheduled = false;

  start(address: string, begin: () => void): void {
    const turn = currentTurn();
    if (turn !== this.#turn) {
      this.#turn = turn;
      this.#started.clear();
    }
    const started = this.#started.get(address) ?? 0;
    const waiting = this.#waiting.get(address);
    if (waiting === undefined && started < ADDRESS_STARTS_PER_TURN) {
      this.#started.set(address, started + 1);
      return begin();
    }
    if (waiting === undefined) this.#waiting.set(address, [begin]);
    else waiting.push(begin);
    this.#schedule();
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      for (const [address, waiting] of this.#waiting) {
        for (const begin of waiting.splice(0, ADDRESS_STARTS_PER_TURN)) begin();
        if (waiting.length === 0) this.#waiting.delete(address);
      }
      if (this.#waiting.size > 0) this.#schedule();
    });
  }
}

/** §15.5 the body would not fit the budget of bodies being received: -32011, retry later; the connection closes. */
function busy(response: ServerResponse, bodies: BodyBudget): void {
  const error = RpcError.rateLimited(1000, `request bodies being received exceed ${bodies.maxBytes} bytes; retry`);
  refuse(response, error, { connection: 'close' });
}

/** Caps open connections on `server` below the descriptor limit, and per client address; returns the cap applied. */
export function capConnections(server: Server, limits: ConnectionLimits): number {
  const descriptors = descriptorLimit();
  const cap =
    descriptors === undefined
      ? limits.maxConnections
      : Math.max(1, Math.min(limits.maxConnections, descriptors - RESERVED_DESCRIPTORS));
  capOpen(server, cap, limits.maxConnectionsPerAddress);
  return cap;
}

/** The connections open from one client address. */
interface Holder {
  readonly address: string;
  open: number;
}

/** An open connection, its address's `Holder`, and its last request and answer (see `turnOf`). */
interface Held {
  readonly socket: Socket;
  readonly holder: Holder;
  request?: IncomingMessage;
  response?: ServerResponse;
  /** When it opened, or its last request's headers arrived: how long it has been sending, while it is. */
  since: number;
}

/**
 * How long a connection may send its request before it can lose its place to a newcomer: a client that just
 * connected is not yet slow, and without it a newcomer from one address is cut by the next from another before its
 * first request is read (a thousand addresses reconnecting as fast as they are cut would keep everyone out).
 */
const SENDING_GRACE_MS = 250;

/**
 * Whose turn it is on a connection: its client's while it sends a request (headers or body), or once the answer is
 * written (idle between requests, or reading the answer); the server's while a request it has whole is unanswered.
 * Only the last request of a connection counts: Node answers pipelined requests in order.
 */
type Turn = 'sending' | 'answering' | 'idle';

function turnOf({ request, response }: Held): Turn {
  if (request === undefined || !request.complete) return 'sending';
  return response?.writableEnded === true ? 'idle' : 'answering';
}

/** An idle one's last answer wholly handed to the kernel: closing it costs its client a reconnect, nothing more. */
function answerSent({ socket, response }: Held): boolean {
  return response?.writableFinished === true && socket.writableLength === 0;
}

/**
 * At most `perAddress` open connections from one address (past it, a newcomer is closed at once) and `cap` in all.
 * When full, a newcomer from an address holding `n` takes the place of, first, the oldest connection whose turn it is
 * not the server's (see `Turn`) of the address holding the most, if that is more than `n + 1` (a few addresses that
 * took every slot give them up to newcomers from others, down to an even share); else the oldest connection still
 * sending a request for a while (SENDING_GRACE_MS), of its own address or one holding more than `n` (clients
 * trickling headers or bodies, however many addresses they come from, cannot keep others out by reconnecting as fast
 * as they are cut); else the oldest connection idle between requests, its last answer sent, of an address holding
 * more than `n` (a thousand addresses each holding one idle keep-alive connection cannot keep others out either);
 * else the newcomer is closed. Below the cap nothing is ever closed for another, and a connection the server is
 * answering never is.
 */
function capOpen(server: Server, cap: number, perAddress: number): void {
  const open = new Set<Held>(); // in arrival order
  const holders = new Map<string, Holder>(); // addresses holding some connections only
  const connections = new WeakMap<Socket, Held>();
  const forget = (held: Held) => {
    if (!open.delete(held)) return;
    if (--held.holder.open === 0) holders.delete(held.holder.address);
  };
  /**
   * The connection a newcomer from `own` takes the place of; undefined if none. One pass over the open ones, which
   * allocates nothing: a client reconnecting as fast as it is refused brings a pass each time, and a refusal among
   * 1,024 connections costs about what it did when only connections that never sent headers were looked for (0.1-0.2
   * ms on loopback, most of it closing the socket).
   */
  const placeFor = (own: Holder): Held | undefined => {
    let most: Held | undefined;
    let mostHeld = own.open + 1;
    let sending: Held | undefined;
    let idle: Held | undefined;
    const now = performance.now();
    for (const held of open) {
      const turn = turnOf(held);
      if (turn === 'answering') continue;
      const theirs = held.holder.open;
      if (theirs > mostHeld) [most, mostHeld] = [held, theirs];
      const slow = turn === 'sending' && now - held.since >= SENDING_GRACE_MS;
      if (sending === undefined && slow && (held.holder === own || theirs > own.open)) sending = held;
      if (idle === undefined && turn === 'idle' && theirs > own.open && answerSent(held)) idle = held;
    }
    return most ?? sending ?? idle;
  };
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const held = connections.get(request.socket);
    if (held === undefined) return;
    held.request = request;
    held.since = performance.now();
    held.response = response;
  });
  server.on('connection', (socket: Socket) => {
    const address = callerOfSocket(socket);
    const holder = holders.get(address) ?? { address, open: 0 };
    if (holder.open >= perAddress) return void socket.destroy();
    if (open.size >= cap) {
      const place = placeFor(holder);
      if (place === undefined) return void socket.destroy();
      forget(place);
      place.socket.destroy();
    }
    const held: Held = { socket, holder, since: performance.now() };
    open.add(held);
    connections.set(socket, held);
    holder.open++;
    holders.set(address, holder);
    socket.once('close', () => forget(held));
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
