import cors from '@fastify/cors';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { RpcError } from '../protocol/errors.js';
import type { EncodedReply, FrameCodec } from '../protocol/frame-codec.js';
import { serialize } from '../protocol/frames.js';
import { failure, isJsonObject, type Response } from '../protocol/messages.js';
import { accessFor } from '../protocol/method-table.js';
import { mergeReplies, requestId, screen, type Screened } from '../protocol/screen.js';
import type { NotificationSink, Reply } from '../protocol/session.js';
import type { Admission } from './admission.js';
import { authorize, type ApiKeys, type Caller } from './auth.js';
import type { HttpSessionStore, SessionRef } from './http-sessions.js';
import { BodyRefusal, receiveBody, type BodyBudget } from './body.js';
import type { Outbox } from './outbox.js';
import { lazyChildLogger } from './lazy-logger.js';

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
  /** Origins allowed by CORS; empty means no cross-origin access (no CORS headers, and no preflight route: 404). */
  corsOrigins: readonly string[];
  /** API keys; when any are configured every request must carry one (§15.6). */
  auth?: ApiKeys | undefined;
  /** Load shedding and per-caller rate limits: -32011 with retryAfterMs. */
  admission?: Admission | undefined;
}

const SESSION_HEADER = 'rcp-session';
/** The API key's caller for each authenticated request. */
const callers = new WeakMap<FastifyRequest, Caller>();

/**
 * §5.2 HTTP: `POST <base>/<method>` (a batch may also be posted to `<base>` itself). Every JSON-RPC answer,
 * errors included, is HTTP 200; a notification is 204; unknown paths are 404 (Fastify's default).
 * With `Accept: text/event-stream` and `streaming` advertised, the answer is an SSE stream of
 * notifications/progress frames followed by exactly one final frame.
 */
export async function rcpHttp(app: FastifyInstance, options: HttpTransportOptions): Promise<void> {
  const base = options.base.replace(/\/+$/, '');

  // Without origins there is nothing for CORS to add: no plugin, so no hook runs per request, and a preflight is
  // Fastify's plain 404 (as the plugin's own route answers it when the origin is refused).
  if (options.corsOrigins.length > 0) {
    await app.register(cors, {
      origin: [...options.corsOrigins],
      methods: ['POST', 'OPTIONS'],
      allowedHeaders: ['Content-Type', 'Authorization', 'Accept', 'RCP-Session'],
      exposedHeaders: ['RCP-Session'],
    });
  }

  await app.register((scope, _options, done) => {
    // A request's logger is made when something logs through it (errors only), not for every request.
    scope.setChildLoggerFactory(lazyChildLogger);
    // We parse bodies ourselves so that bad JSON is a JSON-RPC -32700, whatever the Content-Type says.
    scope.removeAllContentTypeParsers();
    // Read as it arrives, so that a body too large, too complex to parse or past the shared budget is refused early.
    const limits = { maxBytes: options.bodyLimit, maxTokens: options.maxFrameValues };
    scope.addContentTypeParser('*', (request, payload, done) => {
      const declared = Number(request.headers['content-length'] ?? Number.NaN);
      receiveBody(payload, Number.isNaN(declared) ? undefined : declared, limits, options.bodies).then(
        (body) => done(null, body),
        (error: Error) => done(error, undefined),
      );
    });
    scope.setErrorHandler((error: Error & { code?: string; statusCode?: number }, request, reply) => {
      if (error instanceof BodyRefusal) {
        // The rest of the body is not read: the connection closes after this answer.
        const refusal =
          error.reason === 'busy' ? RpcError.rateLimited(1000, error.message) : RpcError.payloadTooLarge(error.message);
        return reply.code(200).header('connection', 'close').send(failure(null, refusal));
      }
      if (error.statusCode !== undefined && error.statusCode < 500) throw error;
      // §5.2: a JSON-RPC answer can still be produced, so it is HTTP 200 carrying -32603.
      request.log.error({ err: error }, 'HTTP dispatch failed');
      return reply.code(200).send(failure(null, RpcError.internal()));
    });

    // §15.6: authentication before any work: an unauthenticated request is answered one small -32012 from its
    // headers alone, whatever its body (discarded as it arrives: never buffered, parsed or answered per member). The
    // answer is the same for every method, shape and batch, so it tells the caller nothing.
    const auth = options.auth;
    if (auth?.enabled === true) {
      scope.addHook('onRequest', async (request, reply) => {
        const who = auth.authenticate(request.headers.authorization);
        if (who instanceof RpcError) return reply.code(200).send(failure(null, who));
        callers.set(request, who);
      });
    }

    const handler = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
      const pathMethod = (request.params as { '*'?: string })['*'];
      await answer(request, reply, pathMethod === undefined || pathMethod === '' ? undefined : pathMethod, options);
    };
    // A client that sends no headers names its session in the path (see http-sessions.ts).
    for (const prefix of [base, `${base}/sessions/:name`]) {
      scope.post(prefix === '' ? '/' : prefix, handler);
      scope.post(`${prefix}/*`, handler);
    }
    done();
  });
}

async function answer(
  request: FastifyRequest,
  reply: FastifyReply,
  pathMethod: string | undefined,
  options: HttpTransportOptions,
): Promise<void> {
  // Authenticated before the body was read (the onRequest hook); each member needs its method's scope.
  const caller = callers.get(request);
  const callerId = caller?.id ?? request.ip;
  // A small frame is parsed at once (a large one in the codec's worker).
  const parsing = options.codec.parse(Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0), callerId);
  const parsed = parsing instanceof Promise ? await parsing : parsing;
  if (!parsed.ok) return void reply.code(200).send(parsed.reply);
  const byPath = checkPathMethod(parsed.value, pathMethod);
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
    await serve(request, reply, byWork.accepted, rejected, { ...options, caller: callerId });
  } finally {
    if (place !== undefined && !(place instanceof RpcError)) place.release();
  }
}

/** The screened frame, handled in its session, answered. */
async function serve(
  request: FastifyRequest,
  reply: FastifyReply,
  accepted: unknown,
  rejected: Response[],
  options: HttpTransportOptions & { caller: string },
): Promise<void> {
  const callerId = options.caller;
  // Members refused above keep their own answers; only what is left needs a session.
  if (accepted === undefined) return await sendReplies(reply, mergeReplies(undefined, rejected), options, callerId);
  const ref = sessionRef(request);
  const finding = ref instanceof RpcError ? ref : options.sessions.find(ref, callerId, isInitialize(accepted));
  const session = finding instanceof Promise ? await finding : finding;
  if (session instanceof RpcError) {
    return await sendReplies(reply, mergeReplies(answerEach(accepted, session), rejected), options, callerId);
  }

  // §13.1: a client hanging up abandons its request. Only work can be abandoned: the lifecycle methods answer at once,
  // so a frame of those alone needs no signal (nor a listener on the connection).
  const hangUp = cancellable(accepted) ? hangUpSignal(reply) : undefined;

  if (wantsStream(request) && isJsonObject(accepted) && 'id' in accepted && session.streams) {
    const run = (sink: NotificationSink) => session.handle(accepted, sink, hangUp);
    return stream(request, reply, options, run);
  }
  const replies = mergeReplies(await session.handle(accepted, undefined, hangUp), rejected);
  const sharing = options.sessions.share(session);
  if (sharing !== undefined) await sharing;
  const sending = sendReplies(reply, replies, options, callerId);
  if (sending !== undefined) await sending;
}

/** Aborts when the client hangs up before its answer is written (§13.1). */
function hangUpSignal(reply: FastifyReply): AbortSignal {
  const hangUp = new AbortController();
  reply.raw.on('close', () => reply.raw.writableFinished || hangUp.abort());
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
  reply: FastifyReply,
  replies: Reply | undefined,
  options: HttpTransportOptions,
  caller: string,
): Promise<void> | undefined {
  if (replies === undefined) return void reply.code(204).send();
  const send = (body: string | Buffer) =>
    void reply.code(200).header('content-type', 'application/json; charset=utf-8').send(body);
  const body = outgoing(replies, options, caller);
  return body instanceof Promise ? body.then(send) : send(body);
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
function sessionRef(request: FastifyRequest): SessionRef | RpcError {
  const name = (request.params as { name?: string }).name;
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

function wantsStream(request: FastifyRequest): boolean {
  return (request.headers.accept ?? '').includes('text/event-stream');
}

/** §5.2 SSE: progress frames as they happen, then exactly one final frame, then the stream ends. */
async function stream(
  request: FastifyRequest,
  reply: FastifyReply,
  options: HttpTransportOptions & { caller: string },
  run: (sink: NotificationSink) => Promise<Reply | undefined>,
): Promise<void> {
  reply.hijack();
  const raw = reply.raw;
  // Hijacking skips Fastify's header writing, so carry over what hooks (CORS) set.
  for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) raw.setHeader(name, value);
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
    if (final !== undefined) sendText(await outgoing(final, options, options.caller));
  } catch (error) {
    request.log.error({ err: error }, 'SSE dispatch failed');
  } finally {
    raw.end();
  }
}
