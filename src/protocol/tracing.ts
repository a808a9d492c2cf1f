import {
  context,
  createContextKey,
  defaultTextMapGetter,
  defaultTextMapSetter,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Context,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { randomBytes } from 'node:crypto';
import { RpcError } from './errors.js';
import { isJsonObject, type JsonObject } from './messages.js';

/**
 * Traces of requests and their stages (docs/architecture.md §14, docs/operations.md "Tracing"), through the
 * OpenTelemetry API; the SDK and its exporter are loaded by `src/telemetry/` only when tracing is on. Off, a stage is
 * a direct call and a request a direct call unless it names a trace (`_meta.traceId`, `_meta.traceparent`, an HTTP
 * `traceparent`): then it runs in a context that only carries that id, to its log lines, its answer and the engines a
 * gateway asks (§17.2: correlation ids in `_meta`).
 */

/** The tracer while tracing is on (telemetry/index.ts); undefined: off. */
let tracer: Tracer | undefined;
/** §15.6: whether spans may carry query text (`tracing.includeText`). */
let includeText = false;
let contextReady = false;
/** A client's W3C trace id without a parent span, handed to the id generator for the one root span it starts. */
let requestedTraceId: string | undefined;
const w3c = new W3CTraceContextPropagator();
/** A client's own correlation id that is no W3C trace id (`_meta.traceId: "req-42"`): logged and returned as given. */
const CLIENT_TRACE_ID = createContextKey('rcp-server client trace id');
const W3C_TRACE_ID = /^(?!0{32})[0-9a-f]{32}$/;
/** What `_meta.traceId` may be: 1-128 visible ASCII characters (it is written into every log line of the request). */
const TRACE_ID = /^[\x21-\x7e]{1,128}$/;

/**
 * Span times in epoch milliseconds from one clock, `performance` (the SDK would take each span's start from
 * `Date.now()`, whole milliseconds that can put a child's end after its parent's).
 */
const epochMs = (at: number = performance.now()): number => performance.timeOrigin + at;

/**
 * The one place an async context is kept: registered on first need (tracing on, or a request naming a trace), so a
 * server that never meets a trace never pays for it; once registered it stays (docs/architecture.md §14).
 */
function ensureContext(): void {
  if (contextReady) return;
  contextReady = true;
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
}

/** Turns tracing on with the SDK's tracer (telemetry/index.ts); `undefined` turns it off again. */
export function useTracer(next: Tracer | undefined, options: { includeText: boolean } = { includeText: false }): void {
  if (next !== undefined) ensureContext();
  tracer = next;
  includeText = options.includeText;
}

export function tracingOn(): boolean {
  return tracer !== undefined;
}

/** §15.6: a query's text as a span attribute only when configured; otherwise its length. */
export function textAttribute(name: string, text: string): Attributes {
  return includeText ? { [name]: text } : { [`${name}.length`]: text.length };
}

/** The trace id the next root span is to carry (a client's `_meta.traceId`), taken once, by the id generator. */
export function takeRequestedTraceId(): string | undefined {
  const id = requestedTraceId;
  requestedTraceId = undefined;
  return id;
}

/** Whether the current context holds a request's span that is recorded (not sampled out). */
function recording(): boolean {
  return tracer !== undefined && trace.getSpan(context.active())?.isRecording() === true;
}

/**
 * `work` as a span named `name`, a child of the span that is current; off, outside any request's span (a gateway's
 * health check, a start-up load) or in a request sampled out, it is only `work()`. The span ends when the work
 * settles and records a throw as an error.
 */
export function stage<T>(name: string, attributes: Attributes, work: () => T): T {
  if (tracer === undefined || !recording()) return work();
  return tracer.startActiveSpan(name, { attributes, startTime: epochMs() }, (span) => {
    let result: T;
    try {
      result = work();
    } catch (error) {
      endSpan(span, error);
      throw error;
    }
    if (!(result instanceof Promise)) return (span.end(epochMs()), result);
    return (result as Promise<unknown>).then(
      (value) => (span.end(epochMs()), value),
      (error: unknown) => {
        endSpan(span, error);
        throw error;
      },
    ) as T;
  });
}

/**
 * A failed stage's span says what failed by its kind alone (an RpcError's code, else the error's name), never its
 * message: messages name paths, addresses and values the operator's tracing backend has no business holding (§15.6).
 */
function endSpan(span: Span, error: unknown): void {
  const kind = error instanceof RpcError ? `RpcError ${error.code}` : error instanceof Error ? error.name : 'thrown';
  span.setStatus({ code: SpanStatusCode.ERROR, message: kind });
  span.end(epochMs());
}

/**
 * `work` outside any request's trace: work one request sets going that serves others too (a model batch, an export)
 * must not carry that request's id into its log lines.
 */
export function untraced<T>(work: () => T): T {
  return contextReady ? context.with(ROOT_CONTEXT, work) : work();
}

/** A span that began before it could be started (a model batch, the wait of an HTTP body), ended now or at `end`. */
export function pastSpan(name: string, parent: Context, start: number, attributes: Attributes, end?: number): void {
  tracer?.startSpan(name, { startTime: epochMs(start), attributes }, parent).end(epochMs(end));
}

export type { Attributes };

/** A request's place in a trace, kept by work that runs for it later (a model batch). */
export type TraceContext = Context;

/** The current context while a request's recorded span is current (kept by work another turn of the loop finishes). */
export function tracedContext(): Context | undefined {
  return recording() ? context.active() : undefined;
}

/** What a transport knows of a request's trace: W3C headers (HTTP), and when the request began to arrive. */
export interface Inbound {
  readonly traceparent?: string | undefined;
  readonly tracestate?: string | undefined;
  /** performance.now() when the transport began on it (an HTTP body read, admitted): the request span starts there. */
  readonly arrivedAt?: number | undefined;
}

/** One request's part in a trace: `run` the work inside it, then `answered` with the JSON-RPC code (0: success). */
export interface RequestTrace {
  run<T>(work: () => Promise<T>): Promise<T>;
  answered(code: number): void;
  /** The id the answer carries in `_meta.traceId`. */
  readonly traceId: string;
}

/**
 * The trace a request runs in (§17.2): `_meta.traceparent`, else `_meta.traceId`, else the transport's `traceparent`;
 * with tracing on, a span for the request under it. Undefined when tracing is off and the request names no trace:
 * then nothing is done for it at all.
 */
export function requestTrace(
  method: string,
  id: string | number,
  params: JsonObject,
  inbound: Inbound | undefined,
): RequestTrace | undefined {
  const meta = isJsonObject(params._meta) ? params._meta : {};
  const named = namedTrace(meta, inbound);
  if (tracer === undefined && named === undefined) return undefined;
  ensureContext();
  const parent = named?.context ?? ROOT_CONTEXT;
  if (tracer === undefined) return idOnly(parent, named?.clientId);
  if (named?.w3cId !== undefined) requestedTraceId = named.w3cId;
  const attributes = {
    'rpc.system': 'jsonrpc',
    'rpc.method': method,
    'rpc.jsonrpc.request_id': String(id).slice(0, 128),
  };
  const span = tracer.startSpan(
    method,
    { kind: SpanKind.SERVER, attributes, startTime: epochMs(inbound?.arrivedAt) },
    parent,
  );
  requestedTraceId = undefined;
  if (named?.clientId !== undefined) span.setAttribute('rcp.client_trace_id', named.clientId);
  const inner = trace.setSpan(parent, span);
  // Over HTTP: the time before the request's work began (its body read and parsed, admission, its corpus held, its
  // turn in a batch), a span of its own.
  if (inbound?.arrivedAt !== undefined) pastSpan('request.wait', inner, inbound.arrivedAt, {}, performance.now());
  return {
    run: (work) => context.with(inner, work),
    answered: (code) => {
      span.setAttribute('rpc.jsonrpc.error_code', code);
      if (SERVER_FAULTS.has(code)) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end(epochMs());
    },
    traceId: named?.clientId ?? span.spanContext().traceId,
  };
}

/** Codes that are the server's trouble, not the caller's (§12): a span's status is an error for these alone. */
const SERVER_FAULTS = new Set([-32603, -32010, -32011, -32014]);

/** The trace a request named, if any: the context its span is a child of, the id it gave as it gave it. */
function namedTrace(
  meta: JsonObject,
  inbound: Inbound | undefined,
): { context: Context; clientId?: string; w3cId?: string } | undefined {
  const id = typeof meta.traceId === 'string' ? meta.traceId : undefined;
  const w3cId = id !== undefined && W3C_TRACE_ID.test(id) ? id : undefined;
  const clientId = id !== undefined && w3cId === undefined && TRACE_ID.test(id) ? id : undefined;
  const own = typeof meta.traceparent === 'string' ? extract(meta.traceparent, undefined) : undefined;
  if (own === undefined && w3cId !== undefined) return { context: remoteRoot(w3cId), w3cId };
  const parent =
    own ?? (inbound?.traceparent === undefined ? undefined : extract(inbound.traceparent, inbound.tracestate));
  if (parent === undefined && clientId === undefined) return undefined;
  const base = parent ?? ROOT_CONTEXT;
  return clientId === undefined ? { context: base } : { context: base.setValue(CLIENT_TRACE_ID, clientId), clientId };
}

/** A W3C `traceparent` (and `tracestate`) as a context; undefined when it is not a valid one. */
function extract(traceparent: string, tracestate: string | undefined): Context | undefined {
  const carrier = { traceparent, ...(tracestate === undefined ? {} : { tracestate }) };
  const extracted = w3c.extract(ROOT_CONTEXT, carrier, defaultTextMapGetter);
  return trace.getSpanContext(extracted) === undefined ? undefined : extracted;
}

/**
 * A trace id the client named with no span of its own: off, a context carrying it (a span id made up, never
 * exported); on, the root context, its request span then given that id (takeRequestedTraceId).
 */
function remoteRoot(traceId: string): Context {
  if (tracer !== undefined) return ROOT_CONTEXT;
  const spanId = randomBytes(8).toString('hex');
  return trace.setSpanContext(ROOT_CONTEXT, { traceId, spanId, traceFlags: TraceFlags.NONE, isRemote: true });
}

/** Tracing off, a named trace: its id travels with the request's work; nothing is recorded. */
function idOnly(parent: Context, clientId: string | undefined): RequestTrace {
  return {
    run: (work) => context.with(parent, work),
    answered: () => undefined,
    traceId: clientId ?? trace.getSpanContext(parent)?.traceId ?? '',
  };
}

/** The trace id of the request the current work is for (the client's own, as given), for its log lines. */
export function currentTraceId(): string | undefined {
  return logCorrelation().traceId;
}

/** Fields a log line of the current request carries (pino's mixin): its trace id (the client's own, as given) and span id. */
export function logCorrelation(): { traceId?: string; spanId?: string } {
  if (!contextReady) return {};
  const active = context.active();
  const spanContext = trace.getSpanContext(active);
  const clientId = active.getValue(CLIENT_TRACE_ID);
  const traceId = typeof clientId === 'string' ? clientId : spanContext?.traceId;
  if (traceId === undefined) return {};
  return spanContext === undefined ? { traceId } : { traceId, spanId: spanContext.spanId };
}

/**
 * The current trace for a request this process sends (a gateway's hop to an engine, §16): `_meta` members, and the
 * W3C headers. Empty when no trace is current.
 */
export function outgoingTrace(): { meta: JsonObject; headers: Record<string, string> } | undefined {
  if (!contextReady) return undefined;
  const active = context.active();
  const headers: Record<string, string> = {};
  w3c.inject(active, headers, defaultTextMapSetter);
  const clientId = active.getValue(CLIENT_TRACE_ID);
  if (headers.traceparent === undefined && typeof clientId !== 'string') return undefined;
  const meta: JsonObject = {};
  if (headers.traceparent !== undefined) meta.traceparent = headers.traceparent;
  if (typeof clientId === 'string') meta.traceId = clientId;
  return { meta, headers };
}
