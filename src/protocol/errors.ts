import { RpcErrorCode, isRetryable } from './codes.js';

/** §12.1 conventional `error.data` fields. */
export interface ErrorData {
  field?: string;
  option?: string;
  retryable?: boolean;
  retryAfterMs?: number;
  detail?: string;
  [extra: string]: unknown;
}

export interface ErrorObject {
  code: RpcErrorCode;
  message: string;
  data: ErrorData;
}

/**
 * The one wire error type. Anything thrown that is not an RpcError is a defect: it becomes -32603 in exactly one
 * place, the session's dispatch (through `RpcError.from`, after logging it with its stack), so no stack trace or
 * internal message ever reaches the wire (docs/architecture.md §6). Code below the dispatch that handles failures (a
 * gateway's engines) acts on RpcErrors only and lets anything else through to that place.
 */
export class RpcError extends Error {
  readonly code: RpcErrorCode;
  readonly data: ErrorData;

  constructor(code: RpcErrorCode, message: string, data: ErrorData = {}) {
    super(message);
    this.name = 'RpcError';
    this.code = code;
    // §12.2: every error says whether an identical retry might succeed.
    this.data = { retryable: isRetryable(code), ...data };
  }

  toJSON(): ErrorObject {
    return { code: this.code, message: this.message, data: this.data };
  }

  /**
   * An error answer as a client receives it (§12.1): its code, message and data as the peer sent them (§12.2
   * `retryable` filled in from the code's default when the peer left it out). A peer may send a code outside the §12
   * table (another JSON-RPC server): it is carried as it came, not retryable unless `data.retryable` says so.
   */
  static answered(code: number, message: string, data: Record<string, unknown> = {}): RpcError {
    return new RpcError(code as RpcErrorCode, message, data);
  }

  /** §12.2: whether an identical request might succeed: `data.retryable` when given, else the code's default. */
  retryable(): boolean {
    if (typeof this.data.retryable === 'boolean') return this.data.retryable;
    return (Object.values(RpcErrorCode) as number[]).includes(this.code) && isRetryable(this.code);
  }

  /** §12.1 `data.retryAfterMs`: the peer's hint, when it gave a usable one. */
  retryAfterMs(): number | undefined {
    const value = this.data.retryAfterMs;
    return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
  }

  /** The dispatch's conversion (session.ts, its only caller): an RpcError as it is, anything else a bare -32603. */
  static from(cause: unknown): RpcError {
    if (cause instanceof RpcError) return cause;
    return RpcError.internal();
  }

  /** -32603 with nothing of its cause: for a fault already logged where no session dispatch is (HTTP framing). */
  static internal(): RpcError {
    return new RpcError(RpcErrorCode.InternalError, 'internal error');
  }

  /**
   * §7.14 §13.1: the answer for an aborted signal is its reason, which the session always makes an RpcError
   * (-32006 cancelled, -32014 timeout); an abort without one is a cancellation.
   */
  static fromAbort(reason: unknown): RpcError {
    return reason instanceof RpcError ? reason : RpcError.cancelled();
  }

  static parseError(detail: string): RpcError {
    return new RpcError(RpcErrorCode.ParseError, 'parse error: invalid JSON', { detail });
  }

  static invalidRequest(detail: string): RpcError {
    return new RpcError(RpcErrorCode.InvalidRequest, `invalid request: ${detail}`);
  }

  static invalidParams(field: string, message: string): RpcError {
    return new RpcError(RpcErrorCode.InvalidParams, `invalid params: ${field}: ${message}`, { field });
  }

  static optionUnsupported(option: string, value: unknown): RpcError {
    return new RpcError(RpcErrorCode.OptionUnsupported, `option not supported: ${option}=${JSON.stringify(value)}`, {
      option,
    });
  }

  static notInitialized(detail = "call 'initialize' first"): RpcError {
    return new RpcError(RpcErrorCode.NotInitialized, 'not initialized', { detail });
  }

  static versionMismatch(requested: unknown, supported: readonly number[]): RpcError {
    return new RpcError(RpcErrorCode.VersionMismatch, 'no common protocol version', {
      detail: `client offered ${JSON.stringify(requested)}; server supports ${supported.join(', ')}`,
    });
  }

  static capabilityMissing(method: string, capability: string): RpcError {
    return new RpcError(RpcErrorCode.CapabilityMissing, `capability not advertised: ${capability}`, {
      detail: `'${method}' needs capability '${capability}', which this server does not advertise`,
    });
  }

  static unknownMethod(method: string): RpcError {
    return new RpcError(RpcErrorCode.UnknownMethod, `unknown method: ${method}`);
  }

  static cancelled(reason?: string): RpcError {
    return new RpcError(RpcErrorCode.Cancelled, 'cancelled', reason === undefined ? {} : { detail: reason });
  }

  /** A write's abort answer (§7.10, §13.1): the same code and data, saying that nothing was applied. */
  static notWritten(reason: RpcError): RpcError {
    return new RpcError(
      reason.code,
      `${reason.message}: nothing was written (the write had not committed)`,
      reason.data,
    );
  }

  static timeout(deadlineMs: number): RpcError {
    return new RpcError(RpcErrorCode.Timeout, `deadline of ${deadlineMs} ms elapsed`);
  }

  static backendUnavailable(detail: string, retryAfterMs: number): RpcError {
    return new RpcError(RpcErrorCode.BackendUnavailable, 'backend unavailable', { detail, retryAfterMs });
  }

  static rateLimited(retryAfterMs: number, detail?: string): RpcError {
    return new RpcError(RpcErrorCode.RateLimited, 'rate limited', {
      retryAfterMs: Math.max(0, Math.ceil(retryAfterMs)),
      ...(detail === undefined ? {} : { detail }),
    });
  }

  static payloadTooLarge(detail: string, field?: string): RpcError {
    return new RpcError(RpcErrorCode.PayloadTooLarge, 'payload too large', {
      detail,
      ...(field === undefined ? {} : { field }),
    });
  }
}
