/**
 * Client-side failures that never reached an answer, each its own type, so a caller can tell "the connection died",
 * "we gave up waiting", "the HTTP layer answered without JSON-RPC" and "the answer was garbage" from "the server said
 * no", which is the protocol's one wire error type, `RpcError` (protocol/errors.ts).
 */

/** The connection ended (EOF, process exit, socket reset) before the answer arrived. */
export class ConnectionClosedError extends Error {
  override name = 'ConnectionClosedError';
}

/** The client's own deadline passed before the answer arrived (the request was cancelled on the server). */
export class ClientTimeoutError extends Error {
  override name = 'ClientTimeoutError';
  constructor(readonly timeoutMs: number) {
    super(`no answer within ${timeoutMs} ms`);
  }
}

/** An HTTP answer that carries no JSON-RPC frame (a proxy's 502, a 404 for a wrong base path, a bare 429). */
export class HttpStatusError extends Error {
  override name = 'HttpStatusError';
  constructor(
    readonly status: number,
    readonly body: string,
    readonly retryAfter?: string,
  ) {
    super(`HTTP ${status} without a JSON-RPC answer`);
  }
}

/** Bytes from the server that are not a JSON-RPC frame. */
export class UnreadableFrameError extends Error {
  override name = 'UnreadableFrameError';
  constructor(readonly text: string) {
    super(`unreadable frame: ${text.slice(0, 120)}`);
  }
}
