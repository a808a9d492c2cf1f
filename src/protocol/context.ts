import { Type } from '@sinclair/typebox';
import { isJsonObject, type JsonObject, type JsonRpcId } from './messages.js';
import { nullsAsAbsent } from './null-as-absent.js';

/** What a method may know of the session it runs in. */
export interface SessionView {
  readonly protocolVersion: number;
  readonly clientCapabilities: JsonObject;
}

/** §17.1 syslog-style severities, least severe first. */
export const LOG_LEVELS = ['debug', 'info', 'notice', 'warning', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface ProgressUpdate {
  message?: string;
  partial?: JsonObject;
}

/**
 * Per-request context handed to every method handler (docs/architecture.md §8).
 * `signal` aborts on notifications/cancel (§7.14), on the deadline (§13.1) and on transport death;
 * its `reason` is the RpcError the request is answered with.
 */
export interface RequestContext {
  readonly id: JsonRpcId;
  readonly method: string;
  readonly signal: AbortSignal;
  readonly meta: JsonObject;
  readonly session: SessionView;
  /** Who asked (the session's owner, §15.6): what a request leaves behind for later ones is kept per caller. */
  readonly caller: string;
  /** §13.1: this request's deadline in ms — the server's, shortened by `_meta.deadlineMs` — as the signal enforces it. */
  readonly deadlineMs: number;
  /** Milliseconds left before that deadline (what a request forwarded downstream may have, §16.2). */
  remainingMs(): number;
  /**
   * The point of no return of a write (§7.10, §13.1): throws the signal's reason if the request was already cancelled
   * or timed out (nothing applied), and otherwise makes the request answer the handler's result whatever arrives
   * later, so an applied write is never answered as failed.
   */
  readonly commit: () => void;
  /** §9: emits notifications/progress; a no-op unless the request carried a progressToken and streaming is advertised. */
  progress(stage: string, progress: number, update?: ProgressUpdate): void;
  /**
   * §17.1: emits notifications/log about this request; a no-op unless the client advertised `log` at initialize,
   * the level is at least its `_meta.logLevel`, and the transport can carry it (stdio, or an SSE answer).
   */
  log(level: LogLevel, message: string, data?: JsonObject): void;
}

/**
 * §4.4 the `_meta` keys this server reads. It is never validated (peers MUST ignore `_meta` keys they do not
 * understand, and each reader checks the type of its own key): it says where a null is absent (§4.6).
 */
export const RequestMeta = Type.Object({
  progressToken: Type.Optional(Type.Union([Type.String(), Type.Integer()])),
  deadlineMs: Type.Optional(Type.Number()),
  logLevel: Type.Optional(Type.String()),
  idempotencyKey: Type.Optional(Type.String()),
  federation: Type.Optional(
    Type.Object({ depth: Type.Optional(Type.Integer()), path: Type.Optional(Type.Array(Type.String())) }),
  ),
});

const metaNullsAsAbsent = nullsAsAbsent(RequestMeta);

/** A request's `_meta` as its handler sees it: `{}` when absent or not an object, its §4.6 absent nulls gone. */
export function requestMeta(params: JsonObject): JsonObject {
  return isJsonObject(params._meta) ? (metaNullsAsAbsent(params._meta) as JsonObject) : {};
}

/**
 * A name a client chose (an idempotency key, a `sessionId`) as its caller's own (§15.6): the same name from two
 * callers is two names. A NUL never occurs in a caller, so no caller's names can pass for another's.
 */
export function callerScoped(caller: string, name: string): string {
  return `${caller}\0${name}`;
}

/** The caller a callerScoped name belongs to ('' for a name scoped to no caller). */
export function scopeOf(scoped: string): string {
  const end = scoped.indexOf('\0');
  return end === -1 ? '' : scoped.slice(0, end);
}
