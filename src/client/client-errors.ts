import { isRetryable, RpcErrorCode } from '../protocol/codes.js';

/**
 * Client-side errors, as every RCP SDK shares them: an `RcpError` is a JSON-RPC error answer from the server;
 * everything that never reached an answer has its own type, so a caller can tell "the server said no" from "the
 * connection died", "we gave up waiting", "the HTTP layer answered without JSON-RPC" and "the answer was garbage".
 */
export class RcpError extends Error {
  override name = 'RcpError';
  readonly code: number;
  readonly data: Record<string, unknown>;

  constructor(code: number, message: string, data: Record<string, unknown> = {}) {
    super(`[RCP ${code}] ${message}`);
    this.code = code;
    this.data = data;
  }

  /** §12.2: the default for the code, unless the server said otherwise in `data.retryable`. */
  retryable(): boolean {
    if (typeof this.data.retryable === 'boolean') return this.data.retryable;
    return (Object.values(RpcErrorCode) as number[]).includes(this.code) && isRetryable(this.code as RpcErrorCode);
  }

  /** The server's hint (§12.1 `data.retryAfterMs`), when it gave one. */
  retryAfterMs(): number | undefined {
    const value = this.data.retryAfterMs;
    return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
  }
}

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
