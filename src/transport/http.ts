import type { IncomingMessage, ServerResponse } from 'node:http';
import proxyAddr from 'proxy-addr';
import { RpcError } from '../protocol/errors.js';
import type { EncodedReply, FrameCodec } from '../protocol/frame-codec.js';
import { serialize } from '../protocol/frames.js';
import { failure, isJsonObject, type Response } from '../protocol/messages.js';
import { accessFor } from '../protocol/method-table.js';
import { mergeReplies, requestId, screen, type Screened } from '../protocol/screen.js';
import type { NotificationSink, Reply } from '../protocol/session.js';
import type { Admission } from './admission.js';
import { authorize, type ApiKeys, type Caller } from './auth.js';
import { corsHeaders, foreignOrigin } from './cors.js';
import type { HttpSessionStore, SessionRef } from './http-sessions.js';
import { rcpRoute, type RcpRoute } from './http-route.js';
import { BodyAbandoned, BodyRefusal, receiveBody, type BodyBudget } from './body.js';
import type { FrontListener } from './connections.js';
import { refuse, sendJson } from './json-answer.js';
import { refuseMediaType, unreadableBody } from './media-type.js';
import { refuseUnread } from './unread-refusal.js';
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
  /** Where a request that could not be answered is reported. */
  log: { error(details: object, message: string): void };
}

/** One RCP request on its way: where it came from and where its answer goes. */
interface Exchange {
  readonly request: IncomingMessage;
  readonly response: ServerResponse;
  readonly route: RcpRoute;
  /** The API key's caller when keys are configured (§15.6). */
  readonly caller: Caller | undefined;
  /** Who rate limits, session ownership and turns count against: the key's id, else the client's address. */
  readonly callerId: string;
}

const SESSION_HEADER = 'rcp-session';

/**
 * §5.2 HTTP: `POST <base>/<method>` (a batch may also be posted to `<base>` itself). Every JSON-RPC answer,
 * errors included, is HTTP 200; a notification is 204; other paths and methods are left to the listener's Fastify
 * instance (404, preflights, the operator endpoints). With `Accept: text/event-stream` and `streaming` advertised, the
 * answer is an SSE stream of notifications/progress frames followed by exactly one final frame.
 *
 * Served on Node's request and response, beside Fastify rather than through it: an RCP request needs none of its
 * routing, hooks, body parsing or reply machinery (the body is read here, under the limits of §15.5), and going
 * through them cost a ping about a quarter of its CPU (npm run bench -- http).
 */
export function rcpHttp(options: HttpTransportOptions): FrontListener {
  const base = options.base.replace(/\/+$/, '');
  const listener = {
    ...options,
    cors: corsHeaders(options.corsOrigins),
    origins: new Set(options.corsOrigins),
    addressOf: clientAddress(options.trustProxy),
  };
  return (request, response) => {
    const route = request.method === 'POST' ? rcpRoute(base, request.url ?? '/') : undefined;
    if (route === undefined) return false;
    // Whatever fails past this point is answered -32603: nothing thrown here reaches Node's request listener.
    receive(request, response, route, listener).catch((error: unknown) => failed(response, error, options));
    return true;
  };
}

/** The listener's options with what it prepares once: CORS headers and the client's address. */
type Listener = HttpTransportOptions & {
  readonly cors: ReturnType<typeof corsHeaders>;
  readonly origins: ReadonlySet<string>;
  readonly addressOf: (request: IncomingMessage) => string;
};

/**
 * §15.6: authentication before any work: an unauthenticated request is answered one small -32012 from its headers
 * alone, whatever its body (discarded as it arrives: never buffered, parsed or answered per member). The answer is
 * the same for every method, shape and batch, so it tells the caller nothing.
 */
function authenticate(request: IncomingMessage, auth: ApiKeys | undefined): Caller | RpcError | undefined {
  return auth?.enabled === true ? auth.authenticate(request.headers.authorization) : undefined;
}

/** The client's address: its socket's, or what configured proxies say it is (X-Forwarded-For). */
function clientAddress(trustProxy: readonly string[]): (request: IncomingMessage) => string {
  if (trustProxy.length === 0) return (request) => request.socket.remoteAddress ?? '';
  const trusted = proxyAddr.compile([...trustProxy]);
  return (request) => proxyAddr(request, trusted);
}

/**
 * The caller authenticated, the body refused unread unless it is JSON (§5.2, HTTP 415), read as it arrives and
 * refused as soon as it is too much (§15.5), answered.
 */
async function receive(
  request: IncomingMessage,
  response: ServerResponse,
  route: RcpRoute,
  listener: Listener,
): Promise<void> {
  listener.cors?.(request, response);
  const foreign = foreignOrigin(request.headers, listener.origins);
  if (foreign !== undefined) return refuseUnread(response, 403, 'Forbidden', foreign);
  const caller = authenticate(request, listener.auth);
  if (caller instanceof RpcError) return void refuse(response, caller);
  const unreadable = unreadableBody(request.headers);
  if (unreadable !== undefined) return refuseMediaType(response, unreadable);
  const exchange = { request, response, route, caller, callerId: caller?.id ?? listener.addressOf(request) };
  const declared = Number(request.headers['content-length'] ?? Number.NaN);
  const limits = { maxBytes: listener.bodyLimit, maxTokens: listener.maxFrameValues };
  let body: Buffer;
  try {
    body = await receiveBody(request, Number.isNaN(declared) ? undefined : declared, limits, listener.bodies);
  } catch (error) {
    if (error instanceof BodyAbandoned) return; // no one to answer
    if (!(error instanceof BodyRefusal)) throw error;
    // The rest of the body is not read: the connection closes after this answer.
    const refusal =
      error.reason === 'busy' ? RpcError.rateLimited(1000, error.message) : RpcError.payloadTooLarge(error.message);
    return void refuse(response, refusal, { connection: 'close' });
  }
  await answer(exchange, body, listener);
}

/** §5.2: a JSON-RPC answer can still be produced, so it is HTTP 200 carrying -32603 (unless one has begun). */
function failed(response: ServerResponse, error: unknown, options: HttpTransportOptions): void {
  options.log.error({ err: error }, 'HTTP dispatch failed');
  if (response.headersSent) response.destroy();
  else refuse(response, RpcError.internal());
}

/** The frame parsed, screened (path, scopes, load), handled and answered. */
async function answer(exchange: Exchange, body: Buffer, options: HttpTransportOptions): Promise<void> {
  const { caller, callerId } = exchange;
  // A small frame is parsed at once (a large one in the codec's worker).
  const parsing = options.codec.parse(body, callerId);
  const parsed = parsing instanceof Promise ? await parsing : parsing;
  if (!parsed.ok) return sendJson(exchange.response, serialize(parsed.reply));
  const byPath = checkPathMethod(parsed.value, exchange.route.method);
  // Authenticated before the body was read; each member needs its method's scope.
  const byScope: Screened =
    caller === undefined ? { accepted: byPath.accepted, rejected: [] } : await checkScopes(byPath.accepted, caller);
  // Load shedding and per-caller rate limits by method class: a refused member is -32011 with retryAfterMs. A frame
  // without work (the lifecycle, notifications) is never refused, so it is not screened at all.
  const admission = options.admission?.appliesTo(byScope.accepted) === true ? options.admission : undefined;
  const byLoad: Screened =
    admission !== undefined
      ? await screen(byScope.accepted, (method) => admission.check(callerId, method))
      : { accepted: byScope.accepted, rejected: [] };
  // §15.5: work past what the process serves at once is refused now (-32011), never queued behind the rest.
  const place = admission?.enterWork(callerId, byLoad.accepted);
  const byWork: Screened =
    place instanceof RpcError
      ? await screen(byLoad.accepted, (method) => (admission!.isWork(method) ? place : undefined))
      : { accepted: byLoad.accepted, rejected: [] };
  const rejected = [...byPath.rejected, ...byScope.rejected, ...byLoad.rejected, ...byWork.rejected];
  try {
    await serve(exchange, byWork.accepted, { rejected, batch: Array.isArray(parsed.value) }, options);
  } finally {
    if (place !== undefined && !(place instanceof RpcError)) place.release();
  }
}

/** The screened frame, handled in its session, answered with the answers of the members refused before it. */
async function serve(
  exchange: Exchange,
  accepted: unknown,
  { rejected, batch }: { rejected: Response[]; batch: boolean },
  options: HttpTransportOptions,
): Promise<void> {
  // Members refused above keep their own answers; only what is left needs a session.
  if (accepted === undefined) return await sendReplies(exchange, mergeReplies(undefined, rejected, batch), options);
  const ref = sessionRef(exchange);
  const finding = ref instanceof RpcError ? ref : options.sessions.find(ref, exchange.callerId, isInitialize(accepted));
  const session = finding instanceof Promise ? await finding : finding;
  if (session instanceof RpcError) {
    return await sendReplies(exchange, mergeReplies(answerEach(accepted, session), rejected, batch), options);
  }

  // §13.1: a client hanging up abandons its request. Only work can be abandoned: the lifecycle methods answer at once,
  // so a frame of those alone needs no signal (nor a listener on the connection).
  const hangUp = cancellable(accepted) ? hangUpSignal(exchange.response) : undefined;

  if (wantsStream(exchange.request) && isJsonObject(accepted) && 'id' in accepted && session.streams) {
    const run = (sink: NotificationSink) => session.handle(accepted, sink, hangUp);
    return stream(exchange, options, run);
  }
  const replies = mergeReplies(await session.handle(accepted, undefined, hangUp), rejected, batch);
  const sharing = options.sessions.share(session);
  if (sharing !== undefined) await sharing;
  const sending = sendReplies(exchange, replies, options);
  if (sending !== undefined) await sending;
}

/** Aborts when the client hangs up before its answer is written (§13.1). */
function hangUpSignal(response: ServerResponse): AbortSignal {
  const hangUp = new AbortController();
  response.on('close', () => response.writableFinished || hangUp.abort());
  return hangUp.signal;
}

/**
 * Whether any member of the frame runs a method that can be cancelled (§13): anything but the lifecycle methods and
 * notifications (the method table's `lifecycle` access), which the session answers at once, never a handler.
 */
function cancellable(value: unknown): boolean {
  const members: unknown[] = Array.isArray(value) ? value : [value];
  return members.some(
    (member) => isJsonObject(member) && (typeof member.method !== 'string' || accessFor(member.method) !== 'lifecycle'),
  );
}

/**
 * §5.2: the answer as HTTP 200 JSON, or 204 when there is nothing to answer (notifications only). Sent at once when
 * the answer was serialised here (a promise only while a large one is serialised in the codec's worker).
 */
function sendReplies(
  exchange: Exchange,
  replies: Reply | undefined,
  options: HttpTransportOptions,
): Promise<void> | undefined {
  if (replies === undefined) return void exchange.response.writeHead(204).end();
  const send = (body: string | Buffer) => sendJson(exchange.response, body);
  const body = outgoing(replies, options, exchange.callerId);
  return body instanceof Promise ? body.then(send) : void send(body);
}

/** The answer's text, capped in size; -32011 for each member while unread answers fill the outbox (§15.5). */
function outgoing(
  replies: Reply,
  options: HttpTransportOptions,
  caller: string,
): string | Buffer | Promise<string | Buffer> {
  const admit = ({ body, bytes }: EncodedReply): string | Buffer => {
    if (options.outbox === undefined || options.outbox.admits(bytes)) return body;
    const busy = RpcError.rateLimited(1000, `answers of ${options.outbox.held} bytes wait for clients to read them`);
    return serialize(Array.isArray(replies) ? replies.map((r) => failure(r.id, busy)) : failure(replies.id, busy));
  };
  const encoding = options.codec.serializeReply(replies, options.maxResponseBytes, caller);
  return encoding instanceof Promise ? encoding.then(admit) : admit(encoding);
}

/**
 * §5.2: the method in the path must match the body's; a mismatch is -32600. For a batch posted to a
 * method path, each mismatching member gets its own -32600 and the rest proceed (§11).
 */
function checkPathMethod(value: unknown, pathMethod: string | undefined): Screened {
  if (pathMethod === undefined) return { accepted: value, rejected: [] };
  const mismatch = (member: unknown): member is Record<string, unknown> =>
    isJsonObject(member) && typeof member.method === 'string' && member.method !== pathMethod;
  const reject = (member: Record<string, unknown>): Response =>
    failure(
      requestId(member),
      RpcError.invalidRequest(`path method '${pathMethod}' does not match body method '${String(member.method)}'`),
    );
  if (!Array.isArray(value)) {
    return mismatch(value) ? { accepted: undefined, rejected: [reject(value)] } : { accepted: value, rejected: [] };
  }
  const rejected = value.filter(mismatch).map(reject);
  const accepted = value.filter((member) => !mismatch(member));
  // An all-mismatched batch must not become an empty batch (which would be a different error).
  return { accepted: accepted.length === 0 && value.length > 0 ? undefined : accepted, rejected };
}

/** Members whose method the caller's scopes do not allow get -32012; the rest proceed. */
function checkScopes(value: unknown, caller: Caller): Promise<Screened> {
  return screen(value, (method) => authorize(caller, method));
}

/** A session name in the path, else the `RCP-Session` header's token, else none (answered statelessly). */
function sessionRef({ request, route }: Exchange): SessionRef | RpcError {
  const name = route.session;
  if (name !== undefined) {
    if (SESSION_NAME.test(name)) return { name };
    return RpcError.invalidRequest('a session name is 1 to 64 characters of A-Z a-z 0-9 . _ ~ -');
  }
  const header = request.headers[SESSION_HEADER];
  return typeof header === 'string' && header !== '' ? { token: header } : undefined;
}

const SESSION_NAME = /^[\w.~-]{1,64}$/;

/** `error` for every member that awaits an answer (a batch stays a batch, §11); §4.5: notifications get none. */
function answerEach(value: unknown, error: RpcError): Reply | undefined {
  const answer = (member: unknown): Response[] =>
    isJsonObject(member) && !('id' in member) ? [] : [failure(isJsonObject(member) ? requestId(member) : null, error)];
  if (!Array.isArray(value)) return answer(value)[0];
  const answers = value.flatMap(answer);
  return answers.length === 0 ? undefined : answers;
}

/** Whether the frame is an `initialize`, or a batch holding one (which then opens the session it asks for). */
function isInitialize(value: unknown): boolean {
  const members = Array.isArray(value) ? value : [value];
  return members.some((member) => isJsonObject(member) && member.method === 'initialize');
}

function wantsStream(request: IncomingMessage): boolean {
  return (request.headers.accept ?? '').includes('text/event-stream');
}

/** §5.2 SSE: progress frames as they happen, then exactly one final frame, then the stream ends. */
async function stream(
  exchange: Exchange,
  options: HttpTransportOptions,
  run: (sink: NotificationSink) => Promise<Reply | undefined>,
): Promise<void> {
  const raw = exchange.response;
  raw.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'x-accel-buffering': 'no',
  });
  const sendText = (text: string | Buffer): void => {
    if (!raw.writable) return;
    if (typeof text === 'string') return void raw.write(`data: ${text}\n\n`);
    raw.write('data: ');
    raw.write(text);
    raw.write('\n\n');
  };
  try {
    const final = await run((frame) => sendText(serialize(frame)));
    if (final !== undefined) sendText(await outgoing(final, options, exchange.callerId));
  } catch (error) {
    options.log.error({ err: error }, 'SSE dispatch failed');
  } finally {
    raw.end();
  }
}
