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
 * The one wire error type. Anything thrown that is not an RpcError becomes -32603 in exactly one place,
 * `RpcError.from`, so no stack trace or internal message ever reaches the wire (DESIGN §2).
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

  static from(cause: unknown): RpcError {
    if (cause instanceof RpcError) return cause;
    return new RpcError(RpcErrorCode.InternalError, 'internal error');
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
