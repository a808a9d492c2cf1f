import type { IncomingMessage, ServerResponse } from 'node:http';
import proxyAddr from 'proxy-addr';
import { RpcError } from '../protocol/errors.js';
import type { FrameCodec } from '../protocol/frame-codec.js';
import type { Admission } from './admission.js';
import type { ApiKeys } from './auth.js';
import type { BodyBudget } from './body.js';
import type { FrontListener } from './connections.js';
import { callerOfAddress, callerOfSocket } from './address-caller.js';
import { corsHeaders } from './cors.js';
import { serveRcp } from './http-request.js';
import { rcpRoute } from './http-route.js';
import type { HttpSessionStore } from './http-sessions.js';
import type { CorpusLanes } from './corpus-lanes.js';
import { refuse } from './json-answer.js';
import type { Outbox } from './outbox.js';

export interface HttpTransportOptions {
  /** The RCP base path (§5.2 default `/rcp`). */
  base: string;
  sessions: HttpSessionStore;
  /** Bytes, and JSON values; a larger body is answered -32013 (§15.5). */
  bodyLimit: number;
  maxFrameValues: number;
  /** Bodies being received, all connections together: past it a body is refused -32011 (retry later). */
  bodies: BodyBudget;
  /** Bytes; a larger answer is -32013 per member (§15.5). */
  maxResponseBytes: number;
  /** Parses bodies and serialises answers (large ones off the event loop). */
  codec: FrameCodec;
  /** Answers not yet read by their clients, across connections: a large one past its bound is -32011. */
  outbox?: Outbox | undefined;
  /** Origins allowed by CORS; empty means no cross-origin access (no CORS headers; preflights: see cors.ts). */
  corsOrigins: readonly string[];
  /** The proxies whose `X-Forwarded-For` names the client; empty: a client is its socket's address. */
  trustProxy: readonly string[];
  /** API keys; when any are configured every request must carry one (§15.6). */
  auth?: ApiKeys | undefined;
  /** Load shedding and per-caller rate limits: -32011 with retryAfterMs. */
  admission?: Admission | undefined;
  /**
   * -32011 when `caller`'s share of the work `method` needs is already spent (§15.5: an `index/add` while its caller's
   * texts waiting at the model are past the queue's bound): asked from the path, before the body is read.
   */
  spentShare?: ((caller: string, method: string) => RpcError | undefined) | undefined;
  /** The named corpora served beside the default one (docs/tenants.md). */
  corpora?: CorpusLanes | undefined;
  /** Where a request that could not be answered is reported. */
  log: { error(details: object, message: string): void };
}

/**
 * §5.2 HTTP: `POST <base>/<method>` (a batch may also be posted to `<base>` itself). Every JSON-RPC answer,
 * errors included, is HTTP 200; a notification is 204; other paths and methods are left to the listener's Fastify
 * instance (404, preflights, the operator endpoints). With `Accept: text/event-stream` and `streaming` advertised, the
 * answer is an SSE stream of notifications/progress frames followed by exactly one final frame.
 *
 * Served on Node's request and response, beside Fastify rather than through it: an RCP request needs none of its
 * routing, hooks, body parsing or reply machinery (the body is read in http-request.ts, under the limits of §15.5), and going
 * through them cost a ping about a quarter of its CPU (npm run bench -- http).
 */
export function rcpHttp(options: HttpTransportOptions): FrontListener {
  const base = options.base.replace(/\/+$/, '');
  // What every request needs, prepared once: the CORS headers and the client's address.
  const listener = {
    ...options,
    cors: corsHeaders(options.corsOrigins),
    origins: new Set(options.corsOrigins),
    addressOf: clientAddress(options.trustProxy),
  };
  return (request, response) => {
    const route = request.method === 'POST' ? rcpRoute(base, request.url ?? '/') : undefined;
    if (route === undefined) return false;
    // The request's steps (http-request.ts). Whatever fails past this point is answered -32603: nothing thrown here
    // reaches Node's request listener.
    serveRcp(request, response, route, listener).catch((error: unknown) => failed(response, error, options));
    return true;
  };
}

/**
 * The caller the client's address stands for (`callerOfAddress`: an IPv6 address's /64): its socket's address, or
 * what configured proxies say it is (X-Forwarded-For).
 */
function clientAddress(trustProxy: readonly string[]): (request: IncomingMessage) => string {
  if (trustProxy.length === 0) return (request) => callerOfSocket(request.socket);
  const trusted = proxyAddr.compile([...trustProxy]);
  return (request) => callerOfAddress(proxyAddr(request, trusted));
}

/** §5.2: a JSON-RPC answer can still be produced, so it is HTTP 200 carrying -32603 (unless one has begun). */
function failed(response: ServerResponse, error: unknown, options: HttpTransportOptions): void {
  options.log.error({ err: error }, 'HTTP dispatch failed');
  if (response.headersSent) response.destroy();
  else refuse(response, RpcError.internal());
}
