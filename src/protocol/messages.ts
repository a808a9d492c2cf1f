import { RpcError, type ErrorObject } from './errors.js';

/** §4.1/§4.7: a request id is a string or a number, never null. */
export type JsonRpcId = string | number;
export type JsonObject = Record<string, unknown>;

export interface RequestMessage {
  kind: 'request';
  id: JsonRpcId;
  method: string;
  params: JsonObject;
}

export interface NotificationMessage {
  kind: 'notification';
  method: string;
  params: JsonObject;
}

/** A frame that is not a well-formed request; `id` is echoed when one could be recovered (§11). */
export interface InvalidMessage {
  kind: 'invalid';
  id: JsonRpcId | null;
  error: RpcError;
}

export type IncomingMessage = RequestMessage | NotificationMessage | InvalidMessage;

export interface SuccessResponse {
  jsonrpc: '2.0';
  id: JsonRpcId;
  result: JsonObject;
}

export interface ErrorResponse {
  jsonrpc: '2.0';
  id: JsonRpcId | null;
  error: ErrorObject;
}

export type Response = SuccessResponse | ErrorResponse;

export interface Notification {
  jsonrpc: '2.0';
  method: string;
  params: JsonObject;
}

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Classifies one parsed JSON value by the JSON-RPC 2.0 envelope rules as RCP narrows them (§4.1, §4.5).
 * A frame without `id`, with `jsonrpc: "2.0"` and a string `method`, is a notification and is never answered.
 * Anything else that is not a well-formed request is answered -32600, echoing the id when it is a valid one.
 */
export function classify(value: unknown): IncomingMessage {
  if (!isJsonObject(value)) {
    return invalid(null, 'a message must be a JSON object');
  }
  const hasId = Object.hasOwn(value, 'id');
  const id = hasId ? requestId(value) : null;
  if (value.jsonrpc !== '2.0') return invalid(id, '\'jsonrpc\' must be "2.0"');
  if (typeof value.method !== 'string') return invalid(id, "'method' must be a string");
  if (hasId && id === null) {
    return invalid(
      null,
      `'id' must be a string of at most ${MAX_ID_CHARS} characters or a number (null is reserved for responses)`,
    );
  }
  const params = value.params ?? {};
  // No id member (a present but unusable one was answered above): §4.5 a notification MUST NOT be answered, not even
  // to say its params are malformed; params it cannot use (positional ones) are as good as none.
  if (id === null) return { kind: 'notification', method: value.method, params: isJsonObject(params) ? params : {} };
  // §4.1: params MUST be an object; RCP has no positional parameters.
  if (!isJsonObject(params)) return invalid(id, "'params' must be an object");
  return { kind: 'request', id, method: value.method, params };
}

function invalid(id: JsonRpcId | null, detail: string): InvalidMessage {
  return { kind: 'invalid', id, error: RpcError.invalidRequest(detail) };
}

export function success(id: JsonRpcId, result: JsonObject): SuccessResponse {
  return { jsonrpc: '2.0', id, result };
}

export function failure(id: JsonRpcId | null, error: RpcError): ErrorResponse {
  return { jsonrpc: '2.0', id, error: error.toJSON() };
}

export function notification(method: string, params: JsonObject): Notification {
  return { jsonrpc: '2.0', method, params };
}

/**
 * §4.7 §15.5: the longest string id a request may carry. Every answer echoes its id, so an id of megabytes made every
 * answer to it megabytes (eight connections of 12 MB ids held other callers' pings over a second).
 */
export const MAX_ID_CHARS = 1024;

/** The id to echo for a member: a string of at most MAX_ID_CHARS or a finite number, else null (§4.7). */
export function requestId(message: Record<string, unknown>): JsonRpcId | null {
  const { id } = message;
  if (typeof id === 'string') return id.length <= MAX_ID_CHARS ? id : null;
  return typeof id === 'number' && Number.isFinite(id) ? id : null;
}
