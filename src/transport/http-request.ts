import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { RpcError } from '../protocol/errors.js';
import type { FrameCodec } from '../protocol/frame-codec.js';
import { serialize } from '../protocol/frames.js';
import { failure, isJsonObject, requestId, type Response } from '../protocol/messages.js';
import { accessFor } from '../protocol/method-table.js';
import { mergeReplies, screen, type Screened } from '../protocol/screen.js';
import type { Reply, Session } from '../protocol/session.js';
import type { Inbound } from '../protocol/tracing.js';
import type { Admission } from './admission.js';
import { authorize, authorizer, type ApiKeys, type Caller } from './auth.js';
import { BodyAbandoned, BodyRefusal, dropRest, receiveBody, type BodyBudget } from './body.js';
import { sendReplies, stream, type AnswerOptions } from './http-answer.js';
import type { RcpRoute } from './http-route.js';
import type { HttpSessionStore, SessionRef } from './http-sessions.js';
import { refuse, sendJson } from './json-answer.js';
import { foreignOrigin } from './cors.js';
import { refuseMediaType, unreadableBody } from './media-type.js';
import { refuseUnread } from './unread-refusal.js';
import type { WorkTicket } from './work-gate.js';
import type { CorpusLanes, HeldLane } from './corpus-lanes.js';
import { DEFAULT_CORPUS, isCorpusName, NO_SUCH_CORPUS } from '../protocol/corpus-name.js';

/** What the steps of an RCP request need of its listener (transport/http.ts prepares it once). */
export interface RcpListener extends AnswerOptions {
  /** The default corpus's sessions. */
  readonly sessions: HttpSessionStore;
  /** The named corpora served beside it (docs/tenants.md); none when `corpora.root` is unset. */
  readonly corpora?: CorpusLanes | undefined;
  /** Bytes, and JSON values; a larger body is answered -32013 (§15.5). */
  readonly bodyLimit: number;
  readonly maxFrameValues: number;
  /** Bodies being received, all connections together: past it a body is refused -32011 (retry later). */
  readonly bodies: BodyBudget;
  /** API keys; when any are configured every request must carry one (§15.6). */
  readonly auth?: ApiKeys | undefined;
  /** Load shedding and per-caller rate limits: -32011 with retryAfterMs. */
  readonly admission?: Admission | undefined;
  /** Adds the CORS headers for the request's origin (cors.ts); undefined when no origin is allowed. */
  readonly cors: ((request: IncomingMessage, response: ServerResponse) => void) | undefined;
  /** `http.corsOrigins`: the browser origins whose requests are served (cors.ts foreignOrigin). */
  readonly origins: ReadonlySet<string>;
  /** The client's address: its socket's, or what configured proxies say it is. */
  readonly addressOf: (request: IncomingMessage) => string;
  /** -32011 when `caller`'s share of the work `method` needs is spent (http.ts `HttpTransportOptions.spentShare`). */
  readonly spentShare?: ((caller: string, method: string) => RpcError | undefined) | undefined;
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
  /** The corpus the path names (screened: one the caller may use, and that exists). */
  readonly corpus: string;
  /** performance.now() when the request's headers were read: a traced request's span starts there. */
  readonly arrivedAt: number;
}

/** A frame on its way through the screens: what is left of it, and the answers of the members refused so far. */
interface Members {
  /** What the session should handle; undefined when nothing is left. */
  readonly accepted: unknown;
  readonly rejected: readonly Response[];
  /** §11: a batch is answered with an array, even when one member of it is answered. */
  readonly batch: boolean;
}

/** A step's answer that ends the request there: `send` writes it (nothing, when no one is left to answer). */
class Refused {
  constructor(readonly send: () => void | Promise<void>) {}
}

/**
 * The life of an RCP request over HTTP (docs/architecture.md §4.1), one named step after another: each returns the
 * next step's input or a `Refused` that answers the request where it stands, and none calls back into this file.
 * Authentication comes before the body is read, admission before any work (docs/architecture.md §1).
 */
export async function serveRcp(
  request: IncomingMessage,
  response: ServerResponse,
  route: RcpRoute,
  listener: RcpListener,
): Promise<void> {
  const arrivedAt = performance.now();
  listener.cors?.(request, response);
  const foreign = screenOrigin(request, response, listener.origins);
  if (foreign instanceof Refused) return foreign.send();
  const caller = authenticate(request, response, listener.auth);
  if (caller instanceof Refused) return caller.send();
  const typed = screenMediaType(request, response);
  if (typed instanceof Refused) return typed.send();
  const scoped = screenPathScope(response, route.method, caller);
  if (scoped instanceof Refused) return scoped.send();
  const corpus = await screenCorpus(response, route.corpus, caller, listener);
  if (corpus instanceof Refused) return corpus.send();
  const callerId = caller?.id ?? listener.addressOf(request);
  return serveFrame({ request, response, route, caller, callerId, corpus, arrivedAt }, listener);
}

/** The request's steps past its headers: its body read, parsed, screened, admitted, then handled in its corpus. */
async function serveFrame(exchange: Exchange, listener: RcpListener): Promise<void> {
  const { route, caller } = exchange;
  const spent = screenSpentShare(exchange, listener);
  if (spent instanceof Refused) return spent.send();
  const body = await readBody(exchange, listener);
  if (body instanceof Refused) return body.send();
  const frame = await parse(exchange, body, listener.codec);
  if (frame instanceof Refused) return frame.send();
  const byPath = checkPathMethod(frame, route.method);
  const byScope = await checkScopes(byPath, caller);
  const { members, place } = await admit(byScope, exchange.callerId, listener.admission);
  try {
    // Members refused above keep their own answers; with none left, nothing needs a corpus or a session.
    const { rejected, batch } = members;
    if (members.accepted === undefined)
      return await answered(exchange, mergeReplies(undefined, rejected, batch), listener).send();
    const lane = await holdCorpus(exchange, members, listener);
    if (lane instanceof Refused) return await lane.send();
    try {
      await serveInLane(exchange, lane.sessions, members, listener);
    } finally {
      lane.release();
    }
  } finally {
    place?.release();
  }
}

/** The frame handled in a session of its corpus (held open meanwhile), and answered. */
async function serveInLane(
  exchange: Exchange,
  sessions: HttpSessionStore,
  members: Members,
  listener: RcpListener,
): Promise<void> {
  const { request, response } = exchange;
  const session = await resolveSession(exchange, sessions, members, listener);
  if (session instanceof Refused) return session.send();
  const hangUp = hangUpSignal(response, members.accepted);
  const inbound = inboundTrace(exchange);
  const sse = wantsStream(request, members.accepted, session);
  if (sse) return stream(response, exchange.callerId, listener, { session, frame: members.accepted, hangUp, inbound });
  const replies = await dispatch(session, members, hangUp, inbound);
  await sessions.share(session);
  await sendReplies(response, replies, exchange.callerId, listener);
}

/** §5.2: a browser request from an origin not allowed is refused (403) before it runs, its body unread (cors.ts). */
function screenOrigin(
  request: IncomingMessage,
  response: ServerResponse,
  origins: ReadonlySet<string>,
): Refused | undefined {
  const foreign = foreignOrigin(request.headers, origins);
  return foreign === undefined ? undefined : new Refused(() => refuseUnread(response, 403, 'Forbidden', foreign));
}

/**
 * §15.6: authentication before any work: an unauthenticated request is answered one small -32012 from its headers
 * alone, whatever its body (discarded as it arrives: never buffered, parsed or answered per member). The answer is
 * the same for every method, shape and batch, so it tells the caller nothing.
 */
function authenticate(
  request: IncomingMessage,
  response: ServerResponse,
  auth: ApiKeys | undefined,
): Caller | undefined | Refused {
  if (auth?.enabled !== true) return undefined;
  const caller = auth.authenticate(request.headers.authorization);
  return caller instanceof RpcError ? refusedWith(response, caller) : caller;
}

/** §5.2: a body that is not JSON by its headers is refused unread, HTTP 415 (media-type.ts). */
function screenMediaType(request: IncomingMessage, response: ServerResponse): Refused | undefined {
  const unreadable = unreadableBody(request.headers);
  return unreadable === undefined ? undefined : new Refused(() => refuseMediaType(response, unreadable));
}

/**
 * §15.6 before the body: `POST /rcp/<method>` names its method (§5.2: a body member naming another is -32600, so none
 * can run another), and a key without that method's scope is answered -32012 from the path alone, the body unread
 * (the connection closes after the answer) rather than read and parsed first. `POST /rcp` names no method: its
 * members are checked once parsed (checkScopes).
 */
function screenPathScope(
  response: ServerResponse,
  pathMethod: string | undefined,
  caller: Caller | undefined,
): Refused | undefined {
  if (pathMethod === undefined || caller === undefined) return undefined;
  const refusal = authorize(caller, pathMethod);
  return refusal === undefined ? undefined : refusedWith(response, refusal, { connection: 'close' });
}

/**
 * §15.6 before the body: the corpus the path names (docs/tenants.md), when the caller may use it and it exists. One
 * that does not exist and one the key may not use get the same answer, -32012 from the path alone, so a key never
 * learns that another tenant's corpus exists.
 */
async function screenCorpus(
  response: ServerResponse,
  name: string | undefined,
  caller: Caller | undefined,
  listener: RcpListener,
): Promise<string | Refused> {
  const corpus = name ?? DEFAULT_CORPUS;
  const usable = isCorpusName(corpus) && (caller === undefined || caller.mayUse(corpus));
  // The default corpus is the process's own: only a named one is looked for.
  const exists = usable && (corpus === DEFAULT_CORPUS || (await listener.corpora?.exists(corpus)) === true);
  return exists ? corpus : refusedWith(response, NO_SUCH_CORPUS, { connection: 'close' });
}

const DEFAULT_LANE: Omit<HeldLane, 'sessions'> = { release: () => undefined };

/**
 * The corpus, held open for the request once its body is in (a client still sending holds none; docs/tenants.md):
 * one that cannot be had now answers each member with why (-32011 while every open corpus is in use, -32010 while it
 * opens or when it fails to), one dropped meanwhile as one that does not exist.
 */
async function holdCorpus(exchange: Exchange, members: Members, listener: RcpListener): Promise<HeldLane | Refused> {
  if (exchange.corpus === DEFAULT_CORPUS) return { ...DEFAULT_LANE, sessions: listener.sessions };
  const held = await listener.corpora?.hold(exchange.corpus, exchange.callerId);
  if (held !== undefined && !(held instanceof RpcError)) return held;
  return refusedEach(exchange, members, held ?? NO_SUCH_CORPUS, listener);
}

/**
 * §15.5: a caller whose share is spent (its own texts waiting at the model past the queue's bound, for `index/add`) is
 * answered -32011 from the path alone, before its body is parsed and validated: a flood of writes refused after
 * that work cost the event loop a parse and a validation of every body it refused. The answer is written at once and
 * the body is read and dropped as it arrives (`refusedUnread`), so the connection stays open and a client still
 * writing reads its answer. A body declared past the limit is left to readBody's -32013.
 */
function screenSpentShare(
  { request, response, route, callerId }: Exchange,
  listener: RcpListener,
): Refused | undefined {
  if (route.method === undefined || listener.spentShare === undefined) return undefined;
  if ((declaredBytes(request) ?? 0) > listener.bodyLimit) return undefined;
  const refusal = listener.spentShare(callerId, route.method);
  return refusal === undefined ? undefined : refusedUnread(request, response, refusal, listener.bodyLimit);
}

/**
 * §15.5: the body, read as it arrives and refused as soon as it is too much (-32013), or when bodies being received
 * fill their budget (-32011). The answer goes at once; the rest of a refused body is read and dropped (`refusedUnread`),
 * so a client still sending it reads its answer rather than a reset.
 */
async function readBody({ request, response }: Exchange, listener: RcpListener): Promise<Buffer | Refused> {
  const declared = declaredBytes(request);
  const limits = { maxBytes: listener.bodyLimit, maxTokens: listener.maxFrameValues };
  try {
    return await receiveBody(request, declared, limits, listener.bodies);
  } catch (error) {
    if (error instanceof BodyAbandoned) return NO_ONE_TO_ANSWER;
    if (!(error instanceof BodyRefusal)) throw error;
    const refusal =
      error.reason === 'busy' ? RpcError.rateLimited(1000, error.message) : RpcError.payloadTooLarge(error.message);
    return refusedUnread(request, response, refusal, listener.bodyLimit);
  }
}

/** The body's length as its `Content-Length` declares it; undefined when it declares none. */
function declaredBytes(request: IncomingMessage): number | undefined {
  const declared = Number(request.headers['content-length'] ?? Number.NaN);
  return Number.isNaN(declared) ? undefined : declared;
}

/**
 * `refusal` for a request whose body is not (all) read: the rest is read and dropped as it arrives (body.ts
 * `dropRest`) and the connection stays open. A body declared past twice the limit is not read: the connection closes
 * after the answer (a client still sending may then see it reset), and one undeclared that runs past it is cut.
 */
function refusedUnread(
  request: IncomingMessage,
  response: ServerResponse,
  refusal: RpcError,
  bodyLimit: number,
): Refused {
  const dropping = dropRest(request, declaredBytes(request), 2 * bodyLimit, () => request.socket.destroy());
  return refusedWith(response, refusal, dropping ? {} : { connection: 'close' });
}

const NO_ONE_TO_ANSWER = new Refused(() => undefined);

/** The frame, parsed at once when small (a large one in the codec's worker); not JSON is -32700, too deep -32600. */
async function parse({ response, callerId }: Exchange, body: Buffer, codec: FrameCodec): Promise<unknown> {
  const parsed = await codec.parse(body, callerId);
  return parsed.ok ? parsed.value : new Refused(() => sendJson(response, serialize(parsed.reply)));
}

/**
 * §5.2: the method in the path must match the body's; a mismatch is -32600. For a batch posted to a
 * method path, each mismatching member gets its own -32600 and the rest proceed (§11).
 */
function checkPathMethod(value: unknown, pathMethod: string | undefined): Members {
  const batch = Array.isArray(value);
  if (pathMethod === undefined) return { accepted: value, rejected: [], batch };
  const mismatch = (member: unknown): member is Record<string, unknown> =>
    isJsonObject(member) && typeof member.method === 'string' && member.method !== pathMethod;
  const reject = (member: Record<string, unknown>): Response =>
    failure(
      requestId(member),
      RpcError.invalidRequest(`path method '${pathMethod}' does not match body method '${String(member.method)}'`),
    );
  if (!Array.isArray(value)) {
    return mismatch(value)
      ? { accepted: undefined, rejected: [reject(value)], batch }
      : { accepted: value, rejected: [], batch };
  }
  const rejected = value.filter(mismatch).map(reject);
  const accepted = value.filter((member) => !mismatch(member));
  // An all-mismatched batch must not become an empty batch (which would be a different error).
  return { accepted: accepted.length === 0 && value.length > 0 ? undefined : accepted, rejected, batch };
}

/** §15.6: authenticated before the body was read; each member needs its method's scope, else -32012. */
async function checkScopes(members: Members, caller: Caller | undefined): Promise<Members> {
  if (caller === undefined) return members;
  return screened(members, await screen(members.accepted, authorizer(caller)));
}

/**
 * §15.5: load shedding and the caller's rate limit by method class, member by member (-32011 with retryAfterMs), then
 * a place among the work in flight, never a queue behind it: without one, each work member is -32011 at once. A single
 * lifecycle request or notification is never refused; a batch of several requests needs a place whatever it asks
 * (admission.ts `enterWork`).
 */
async function admit(
  members: Members,
  callerId: string,
  gate: Admission | undefined,
): Promise<{ members: Members; place?: WorkTicket | undefined }> {
  if (gate?.enabled !== true) return { members };
  const byLoad = gate.appliesTo(members.accepted)
    ? screened(members, await screen(members.accepted, gate.checkFor(callerId)))
    : members;
  const place = gate.enterWork(callerId, byLoad.accepted);
  if (!(place instanceof RpcError)) return { members: byLoad, place };
  return { members: screened(byLoad, await screen(byLoad.accepted, gate.refuseWork(place, byLoad.accepted))) };
}

/** `members` after one more screen: what it let through, and the answers of all refused so far, in order. */
function screened(members: Members, { accepted, rejected }: Screened): Members {
  return { accepted, rejected: [...members.rejected, ...rejected], batch: members.batch };
}

/**
 * The session the frame's members left (some) run in (http-sessions.ts): none named, a fresh stateless one; one that
 * cannot be had answers each member that is left.
 */
async function resolveSession(
  exchange: Exchange,
  sessions: HttpSessionStore,
  members: Members,
  listener: RcpListener,
): Promise<Session | Refused> {
  const ref = sessionRef(exchange);
  const found = ref instanceof RpcError ? ref : sessions.find(ref, exchange.callerId, isInitialize(members.accepted));
  const session = await found;
  return session instanceof RpcError ? refusedEach(exchange, members, session, listener) : session;
}

/** `error` for each member left, with the answers of the members refused before (a batch stays a batch, §11). */
function refusedEach(exchange: Exchange, members: Members, error: RpcError, listener: RcpListener): Refused {
  const { accepted, rejected, batch } = members;
  return answered(exchange, mergeReplies(answerEach(accepted, error), rejected, batch), listener);
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

const SESSION_HEADER = 'rcp-session';
const SESSION_NAME = /^[\w.~-]{1,64}$/;

/** Whether the frame is an `initialize`, or a batch holding one (which then opens the session it asks for). */
function isInitialize(value: unknown): boolean {
  const members = Array.isArray(value) ? value : [value];
  return members.some((member) => isJsonObject(member) && member.method === 'initialize');
}

/** `error` for every member that awaits an answer (a batch stays a batch, §11); §4.5: notifications get none. */
function answerEach(value: unknown, error: RpcError): Reply | undefined {
  const answer = (member: unknown): Response[] =>
    isJsonObject(member) && !('id' in member) ? [] : [failure(isJsonObject(member) ? requestId(member) : null, error)];
  if (!Array.isArray(value)) return answer(value)[0];
  const answers = value.flatMap(answer);
  return answers.length === 0 ? undefined : answers;
}

/**
 * §13.1: a client hanging up abandons its request; the signal aborts when it hangs up before its answer is written.
 * Only work can be abandoned: the lifecycle methods answer at once, so a frame of those alone gets no signal (nor a
 * listener on the connection).
 */
function hangUpSignal(response: ServerResponse, frame: unknown): AbortSignal | undefined {
  if (!cancellable(frame)) return undefined;
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

/** §5.2: an SSE answer for a single request with `Accept: text/event-stream`, when `streaming` is advertised. */
function wantsStream(request: IncomingMessage, frame: unknown, session: Session): boolean {
  const accepts = (request.headers.accept ?? '').includes('text/event-stream');
  return accepts && isJsonObject(frame) && 'id' in frame && session.streams;
}

/** The frame handled in its session (§4.4), answered with the answers of the members refused before it. */
async function dispatch(
  session: Session,
  members: Members,
  hangUp: AbortSignal | undefined,
  inbound: Inbound,
): Promise<Reply | undefined> {
  const replies = await session.handle(members.accepted, undefined, hangUp, inbound);
  return mergeReplies(replies, members.rejected, members.batch);
}

/** §17.2: the W3C trace headers a request came with, and when it arrived (docs/operations.md "Tracing"). */
function inboundTrace({ request, arrivedAt }: Exchange): Inbound {
  const { traceparent, tracestate } = request.headers;
  return {
    traceparent: typeof traceparent === 'string' ? traceparent : undefined,
    tracestate: typeof tracestate === 'string' ? tracestate : undefined,
    arrivedAt,
  };
}

/** One error answering the whole frame, id null (json-answer.ts). */
function refusedWith(response: ServerResponse, error: RpcError, headers?: OutgoingHttpHeaders): Refused {
  return new Refused(() => refuse(response, error, headers));
}

/** Answers refused before dispatch, written as a dispatched frame's are (http-answer.ts). */
function answered({ response, callerId }: Exchange, replies: Reply | undefined, listener: RcpListener): Refused {
  return new Refused(() => sendReplies(response, replies, callerId, listener));
}
