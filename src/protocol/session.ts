import {
  LOG_LEVELS,
  requestMeta,
  type LogLevel,
  type ProgressUpdate,
  type RequestContext,
  type SessionView,
} from './context.js';
import { RpcError } from './errors.js';
import { answerTooLarge, approximateBytes, serializedOnce } from './frames.js';
import {
  classify,
  failure,
  isJsonObject,
  notification,
  success,
  type JsonObject,
  type JsonRpcId,
  type Notification,
  type RequestMessage,
  type Response,
} from './messages.js';
import { accessFor, capabilityFor, isCoreMethod } from './method-table.js';
import {
  PROTOCOL_VERSION,
  conformanceLevel,
  negotiate,
  MAX_CLIENT_CAPABILITY_BYTES,
  validateInitializeParams,
  validatePingParams,
} from './lifecycle.js';
import type { MethodRegistry, OptionRule, RegisteredMethod } from './registry.js';
import { requestTrace, type Inbound } from './tracing.js';

export interface ServerIdentity {
  name: string;
  version: string;
}

export interface SessionLimits {
  /** §11: the most members a batch may carry; a larger batch is one -32013 answer (§12, §15.5). */
  maxBatchSize: number;
  /** The largest answer, in bytes: a batch's members together stay within it (§15.5). */
  maxResponseBytes?: number;
  /** §13.1: the server's own deadline for a request; `_meta.deadlineMs` may only shorten it. */
  requestTimeoutMs: number;
  /** Told of every fault that becomes a bare -32603 on the wire, so the operator sees what the client cannot. */
  onInternalError?: (error: unknown, method: string) => void;
  /** Told of every answered request: its method, the error code (0 for success), how long it took, its params. */
  onAnswered?: (method: string, code: number, ms: number, params: JsonObject) => void;
  /** Told of every finished pipeline stage: a stage ends where the method reports progress into the next (§9). */
  onStage?: (method: string, stage: string, ms: number) => void;
}

export interface SessionOptions {
  /** §5.2 stateless HTTP: every request is implicitly initialized and `initialize` is answered idempotently. */
  implicit?: boolean;
  /** §5.2 stateful HTTP: the token returned in `initialize.result._meta.session`. */
  token?: string;
  /**
   * Who the session belongs to (an API key, else the client's address; one client on a stdio pipe): state kept for
   * a client beyond one request (idempotency keys, `sessionId` dedup) is kept per caller (§15.6).
   */
  caller?: string;
  /** Called once, synchronously, when `shutdown` is answered, so a transport stops reading (§13.1). */
  onShutdown?: () => void;
  /** An initialized session continued here (an HTTP session another replica opened): what it negotiated. */
  restored?: SessionState | undefined;
}

/** What an initialized session negotiated (§13), enough to continue it in another process. */
export interface SessionState {
  readonly protocolVersion: number;
  readonly clientCapabilities: JsonObject;
  readonly logFloor?: number | undefined;
}

/** Where the frames a request emits before its answer go (progress over stdio or SSE); absent means nowhere. */
export type NotificationSink = (frame: Notification) => void;

export type Reply = Response | Response[];

/** The caller of a session no transport named: the one client of a stdio pipe or an in-process session. */
export const LOCAL_CALLER = 'local';

interface InFlight {
  controller: AbortController;
}

/**
 * One RCP session: the lifecycle of §13 and the dispatch ladder of docs/architecture.md §4.4 over one connection
 * (a stdio pipe, or an HTTP session). It never throws: every request ends in exactly one Response.
 */
export class Session {
  readonly #registry: MethodRegistry;
  readonly #identity: ServerIdentity;
  readonly #limits: SessionLimits;
  readonly #options: SessionOptions;
  readonly #inFlight = new Map<JsonRpcId, InFlight>();
  readonly #idleWaiters: (() => void)[] = [];
  #capabilities: JsonObject | undefined;
  /** The `info` answer, once it can no longer change (see #info). */
  #infoResult: JsonObject | undefined;
  #view: SessionView = { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} };
  /** §17.1: the least severe level this client wants; undefined when it did not advertise `log`. */
  #logFloor: number | undefined;
  #shutDown = false;

  constructor(registry: MethodRegistry, identity: ServerIdentity, limits: SessionLimits, options: SessionOptions = {}) {
    this.#registry = registry;
    this.#identity = identity;
    this.#limits = limits;
    this.#options = options;
    if (options.implicit === true) this.#capabilities = registry.frozenCapabilities();
    if (options.restored !== undefined) {
      const { protocolVersion, clientCapabilities, logFloor } = options.restored;
      this.#view = { protocolVersion, clientCapabilities };
      // §13.2: every replica serves one configuration, so its frozen set is the one the client was given.
      this.#capabilities = registry.frozenCapabilities();
      this.#logFloor = logFloor;
    }
  }

  get initialized(): boolean {
    return this.#capabilities !== undefined;
  }

  /** What this session negotiated, once initialized (not for an implicit one: it negotiated nothing). */
  get state(): SessionState | undefined {
    if (!this.initialized || this.#options.implicit === true) return undefined;
    return { ...this.#view, logFloor: this.#logFloor };
  }

  get shutDown(): boolean {
    return this.#shutDown;
  }

  /** Whether this session may emit progress frames: `streaming` is in its capability set (§5.2, §9). */
  get streams(): boolean {
    return 'streaming' in (this.#capabilities ?? this.#registry.capabilities());
  }

  /**
   * Handles one parsed JSON value: a single message or a batch (§11). Resolves to the reply, or to
   * undefined when nothing must be sent (a notification, or a batch of notifications only).
   */
  async handle(
    value: unknown,
    sink?: NotificationSink,
    transport?: AbortSignal,
    inbound?: Inbound,
  ): Promise<Reply | undefined> {
    // §13.1: a request's deadline counts from when its frame arrived, so a batch member that waits its turn (§11) has
    // waited part of it: a batch as a whole ends within the server's request timeout, however many members it has.
    const arrival: Arrival = { sink, transport, receivedAt: performance.now(), inbound };
    if (!Array.isArray(value)) return this.#handleOne(value, arrival);
    // §11: an empty array is one non-array -32600 with id null.
    if (value.length === 0) return failure(null, RpcError.invalidRequest('empty batch'));
    if (value.length > this.#limits.maxBatchSize) {
      return failure(
        null,
        RpcError.payloadTooLarge(`batch of ${value.length} exceeds the limit of ${this.#limits.maxBatchSize}`),
      );
    }
    // §11: members run concurrently; one member's error never fails the others.
    // §15.5: the members' answers together stay within the answer cap; past it, results are dropped as they
    // complete (each member answered -32013) rather than all kept until the batch ends.
    const maxBytes = this.#limits.maxResponseBytes ?? Number.POSITIVE_INFINITY;
    let bytes = 0;
    const replies = await mapConcurrently(value, BATCH_CONCURRENCY, async (member) => {
      const reply = await this.#handleOne(member, arrival);
      if (reply === undefined || !Number.isFinite(maxBytes)) return reply;
      bytes += approximateBytes(reply);
      return bytes <= maxBytes ? reply : failure(reply.id, answerTooLarge(maxBytes));
    });
    const answered = replies.filter((reply): reply is Response => reply !== undefined);
    return answered.length === 0 ? undefined : answered;
  }

  /** Aborts every in-flight request (transport death, server shutdown). They are not answered. */
  abortAll(reason: RpcError): void {
    for (const { controller } of this.#inFlight.values()) controller.abort(reason);
  }

  /** Resolves once no request is in flight (EOF and shutdown drain, §5.1). */
  async idle(): Promise<void> {
    if (this.#inFlight.size === 0) return;
    await new Promise<void>((resolve) => this.#idleWaiters.push(resolve));
  }

  async #handleOne(value: unknown, arrival: Arrival): Promise<Response | undefined> {
    const message = classify(value);
    switch (message.kind) {
      case 'invalid':
        return failure(message.id, message.error);
      case 'notification':
        // §4.5: never answered. §7.14: cancel aborts the named in-flight request; anything else is ignored.
        if (message.method === 'notifications/cancel') this.#cancel(message.params);
        return undefined;
      case 'request':
        return this.#request(message, arrival);
    }
  }

  #cancel(params: JsonObject): void {
    const { id, reason } = params;
    if (typeof id !== 'string' && typeof id !== 'number') return;
    // §7.14: an unknown or already-answered id is a no-op.
    this.#inFlight.get(id)?.controller.abort(RpcError.cancelled(typeof reason === 'string' ? reason : undefined));
  }

  /**
   * §17.2: a request that runs in a trace (named by its caller, or traced here) runs inside it, its log lines with
   * it, and carries its id in `_meta.traceId`.
   */
  async #request(request: RequestMessage, arrival: Arrival): Promise<Response> {
    const traced = requestTrace(request.method, request.id, request.params, arrival.inbound);
    if (traced === undefined) return this.#answered(request, arrival);
    const response = await traced.run(() => this.#answered(request, arrival));
    traced.answered('error' in response ? response.error.code : 0);
    return withTraceId(response, traced.traceId);
  }

  async #answered(request: RequestMessage, arrival: Arrival): Promise<Response> {
    const started = performance.now();
    const response = await this.#answer(request, arrival);
    const code = 'error' in response ? response.error.code : 0;
    this.#limits.onAnswered?.(request.method, code, performance.now() - started, request.params);
    return response;
  }

  async #answer(request: RequestMessage, arrival: Arrival): Promise<Response> {
    const { id, method, params } = request;
    if (this.#shutDown) {
      // §13.1: nothing received after the shutdown answer is processed.
      return failure(id, RpcError.notInitialized('the session was shut down; open a new one with initialize'));
    }
    if (method.startsWith('notifications/')) {
      return failure(id, RpcError.invalidRequest(`'${method}' is a notification and must not carry an id (§4.5)`));
    }
    try {
      switch (method) {
        case 'initialize':
          return success(id, this.#initialize(params));
        case 'info':
          return success(id, this.#info());
        case 'ping':
          return success(id, ping(params));
        case 'shutdown':
          return success(id, this.#shutdown());
      }
      const target = this.#resolve(method);
      checkOptions(target.options, params);
      const validParams = target.validate(params);
      return success(id, await this.#run(request, target, validParams, arrival));
    } catch (error) {
      // docs/architecture.md §6: the one place an unknown throw (a defect) becomes -32603; it is logged here, with its
      // stack.
      if (!(error instanceof RpcError)) this.#limits.onInternalError?.(error, method);
      return failure(id, RpcError.from(error));
    }
  }

  #initialize(params: JsonObject): JsonObject {
    // §5.2 stateless HTTP answers initialize idempotently, but still as §7.1 says: invalid params are -32602, and a
    // client whose versions share none with the server's gets -32002, as it would in any other session.
    if (this.#options.implicit === true) {
      negotiate(validateInitializeParams(params).protocolVersion);
      return this.#info();
    }
    // §13: a second initialize after success is -32600: renegotiating would invalidate cached capabilities.
    if (this.initialized) throw RpcError.invalidRequest('already initialized; re-negotiation is not permitted (§13)');
    const { protocolVersion, capabilities } = validateInitializeParams(params);
    if (capabilities !== undefined && approximateBytes(capabilities) > MAX_CLIENT_CAPABILITY_BYTES) {
      throw RpcError.invalidParams('capabilities', `larger than ${MAX_CLIENT_CAPABILITY_BYTES} bytes`);
    }
    // §13: a failed negotiation (-32002) throws here and leaves the session uninitialized.
    const negotiated = negotiate(protocolVersion);
    this.#view = { protocolVersion: negotiated, clientCapabilities: capabilities ?? {} };
    // §13.2: the capability set is fixed for the session's lifetime.
    this.#capabilities = this.#registry.frozenCapabilities();
    // §7.1/§17.1: logs only to a client that opted in with `log`, from its `_meta.logLevel` up (default info).
    if (capabilities !== undefined && 'log' in capabilities && 'log' in this.#capabilities) {
      const floor = LOG_LEVELS.indexOf((isJsonObject(params._meta) ? params._meta.logLevel : undefined) as LogLevel);
      this.#logFloor = floor < 0 ? LOG_LEVELS.indexOf('info') : floor;
    }
    return this.#info();
  }

  /**
   * §7.2/§13.2: the session's fixed set once initialized, else the server's default (maximum) set. Once initialized
   * the answer never changes: one object, serialized once however often it is asked (a batch of 128 `info` took
   * milliseconds of the event loop in JSON alone).
   */
  #info(): JsonObject {
    if (this.#infoResult !== undefined) return this.#infoResult;
    const result = this.#describe();
    if (this.initialized) this.#infoResult = serializedOnce(result);
    return result;
  }

  #describe(): JsonObject {
    const capabilities = this.#capabilities ?? this.#registry.capabilities();
    const level = conformanceLevel(capabilities);
    const meta: JsonObject = {};
    if (level !== undefined) meta.conformance = level;
    if (this.#options.token !== undefined) meta.session = this.#options.token;
    return {
      protocolVersion: this.#view.protocolVersion,
      server: { ...this.#identity },
      capabilities,
      ...(Object.keys(meta).length > 0 ? { _meta: meta } : {}),
    };
  }

  #shutdown(): JsonObject {
    this.#shutDown = true;
    this.#options.onShutdown?.();
    return {};
  }

  /** docs/architecture.md §4.4 rungs 7-9: -32001 before initialize, -32004 beats -32003, -32003 when not advertised. */
  #resolve(method: string): RegisteredMethod {
    const capabilities = this.#capabilities;
    if (capabilities === undefined) throw RpcError.notInitialized();
    const capability = capabilityFor(method);
    const registered = this.#registry.get(method);
    if (!isCoreMethod(method) && registered === undefined) throw RpcError.unknownMethod(method);
    if (capability === undefined || registered === undefined || !(capability in capabilities)) {
      throw RpcError.capabilityMissing(method, capability ?? method);
    }
    return registered;
  }

  async #run(
    request: RequestMessage,
    target: RegisteredMethod,
    params: unknown,
    arrival: Arrival,
  ): Promise<JsonObject> {
    const { sink, transport, receivedAt: startedAt } = arrival;
    const { id, method } = request;
    if (this.#inFlight.has(id)) {
      // §4.7: ids are unique among in-flight requests; a duplicate would make replies and cancels ambiguous.
      throw RpcError.invalidRequest(`id ${JSON.stringify(id)} is already in flight`);
    }
    const meta = requestMeta(request.params);
    const controller = new AbortController();
    const deadlineMs = effectiveDeadline(this.#limits.requestTimeoutMs, meta.deadlineMs);
    const expire = () => controller.abort(RpcError.timeout(deadlineMs));
    const leftMs = deadlineMs - (performance.now() - startedAt);
    // A batch member whose deadline passed while it waited its turn is not started (-32014 below).
    if (leftMs <= 0) expire();
    const timer = setTimeout(expire, Math.max(0, leftMs));
    // §13.1 transport death (an HTTP client hanging up) abandons this request only.
    const onTransportDeath = (): void => controller.abort(RpcError.cancelled('transport closed'));
    transport?.addEventListener('abort', onTransportDeath, { once: true });
    if (transport?.aborted === true) onTransportDeath();
    this.#inFlight.set(id, { controller });
    // §7.10 §13.1: an aborted write is answered saying nothing was written (it was not, until it committed).
    const state = { committed: false, write: accessFor(method) === 'write' };
    const ctx: RequestContext = {
      id,
      method,
      signal: controller.signal,
      meta,
      session: this.#view,
      caller: this.#options.caller ?? LOCAL_CALLER,
      deadlineMs,
      remainingMs: () => deadlineMs - (performance.now() - startedAt),
      commit: () => {
        controller.signal.throwIfAborted();
        state.committed = true;
      },
      progress: this.#progress(method, meta.progressToken, controller.signal, sink),
      log: this.#log(id, method, meta.progressToken, controller.signal, sink),
    };
    try {
      // §13.1: a batch member whose client hung up before its turn (§11) is abandoned unstarted.
      controller.signal.throwIfAborted();
      return await raceAbort(
        Promise.resolve().then(() => target.handler(params, ctx)),
        controller.signal,
        state,
      );
    } finally {
      clearTimeout(timer);
      transport?.removeEventListener('abort', onTransportDeath);
      this.#inFlight.delete(id);
      if (this.#inFlight.size === 0) this.#idleWaiters.splice(0).forEach((resolve) => resolve());
    }
  }

  #progress(
    method: string,
    token: unknown,
    signal: AbortSignal,
    sink: NotificationSink | undefined,
  ): RequestContext['progress'] {
    const streaming = this.#capabilities !== undefined && 'streaming' in this.#capabilities;
    // §9: progress only for a request that carried a string or integer token, and only if streaming is advertised.
    const valid = typeof token === 'string' || (typeof token === 'number' && Number.isInteger(token));
    const emit = streaming && valid && sink !== undefined;
    let stageStarted = performance.now();
    return (stage: string, progress: number, update: ProgressUpdate = {}) => {
      const now = performance.now();
      this.#limits.onStage?.(method, stage, now - stageStarted);
      stageStarted = now;
      if (!emit || signal.aborted) return;
      const fraction = Number.isFinite(progress) ? Math.min(1, Math.max(0, progress)) : 0;
      sink(notification('notifications/progress', { progressToken: token, progress: fraction, stage, ...update }));
    };
  }

  #log(
    id: JsonRpcId,
    method: string,
    token: unknown,
    signal: AbortSignal,
    sink: NotificationSink | undefined,
  ): RequestContext['log'] {
    const floor = this.#logFloor;
    if (floor === undefined || sink === undefined) return () => undefined;
    const meta: JsonObject = { requestId: id };
    if (typeof token === 'string' || typeof token === 'number') meta.progressToken = token;
    return (level, message, data) => {
      if (signal.aborted || LOG_LEVELS.indexOf(level) < floor) return;
      sink(
        notification('notifications/log', {
          level,
          message,
          logger: method,
          ...(data === undefined ? {} : { data }),
          _meta: meta,
        }),
      );
    };
  }
}

function ping(params: JsonObject): JsonObject {
  const { nonce } = validatePingParams(params);
  // §7.15: echo any nonce received.
  return nonce === undefined ? {} : { nonce };
}

/** §12: a well-formed option value outside the advertised set is -32005; a wrong type is left to the schema (-32602). */
function checkOptions(rules: readonly OptionRule[], params: JsonObject): void {
  for (const { path, supported } of rules) {
    const value = path.split('.').reduce<unknown>((node, key) => (isJsonObject(node) ? node[key] : undefined), params);
    if (typeof value === 'string' && !supported.includes(value)) throw RpcError.optionUnsupported(path, value);
  }
}

/**
 * §13.1/§16.2: `_meta.deadlineMs` is milliseconds remaining; it may shorten the server's deadline, never lengthen it.
 * A value that is no such count (zero or less, not a number, past any clock) is -32602: ignoring it would run the
 * request under a deadline its client did not ask for.
 */
function effectiveDeadline(serverMs: number, requested: unknown): number {
  if (requested === undefined) return serverMs;
  if (typeof requested !== 'number' || !(requested > 0 && requested <= Number.MAX_SAFE_INTEGER)) {
    throw RpcError.invalidParams('_meta.deadlineMs', 'milliseconds remaining: a number above 0');
  }
  // §4.6 does not make it an integer: a fraction is kept as given, never rounded up into a longer deadline.
  return Math.min(serverMs, requested);
}

/**
 * The answer is the handler's result unless the signal aborts first; then its RpcError reason wins (§7.14, §13.1) —
 * except once a write has committed: then its result is the answer. The work's own outcome is always taken, even
 * after the abort has answered: a handler that then fails with nobody listening would end the process.
 */
function raceAbort<T>(
  work: Promise<T>,
  signal: AbortSignal,
  state: { committed: boolean; write: boolean },
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      if (state.committed) return;
      const reason = RpcError.fromAbort(signal.reason);
      reject(state.write ? RpcError.notWritten(reason) : reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    if (signal.aborted) onAbort();
  });
}

/**
 * The answer with `_meta.traceId` (§4.4, §17.2): in the result's `_meta`, or an error's `data._meta` (an error whose
 * data is no object keeps it as it is).
 */
function withTraceId(response: Response, traceId: string): Response {
  if (traceId === '') return response;
  const add = (node: JsonObject): JsonObject => ({
    ...node,
    _meta: { ...(isJsonObject(node._meta) ? node._meta : {}), traceId },
  });
  if ('result' in response) return { ...response, result: add(response.result) };
  const { data } = response.error;
  if (data !== undefined && !isJsonObject(data)) return response;
  return { ...response, error: { ...response.error, data: add(data ?? {}) } };
}

/** Where a frame came from and when: what each of its requests is run with. */
interface Arrival {
  readonly sink: NotificationSink | undefined;
  /** Aborts when the transport dies (an HTTP client hanging up). */
  readonly transport: AbortSignal | undefined;
  /** When the frame arrived (performance.now()): the start of each of its requests' deadlines. */
  readonly receivedAt: number;
  /** What the transport knows of the frame's trace (HTTP `traceparent`), and when it began on it. */
  readonly inbound: Inbound | undefined;
}

/**
 * §11 batch members run concurrently, a few at a time: a batch is one caller, and 128 heavy members at once would
 * cost every other caller; this many keeps a batch of slow calls fast without letting one batch take the server.
 */
export const BATCH_CONCURRENCY = 8;

/** `work` over `items` with at most `limit` running at once; results in input order. */
async function mapConcurrently<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const lane = async (): Promise<void> => {
    for (let i = next++; i < items.length; i = next++) results[i] = await work(items[i]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return results;
}
