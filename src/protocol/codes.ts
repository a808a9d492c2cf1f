/**
 * The RCP/1 error code table (spec §12), named after the spec's Symbol column.
 * A closed set: no handler can invent a code (§12: -32000..-32099 is reserved for RCP).
 */
export const RpcErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  NotInitialized: -32001,
  VersionMismatch: -32002,
  CapabilityMissing: -32003,
  UnknownMethod: -32004,
  OptionUnsupported: -32005,
  Cancelled: -32006,
  BackendUnavailable: -32010,
  RateLimited: -32011,
  Unauthorized: -32012,
  PayloadTooLarge: -32013,
  Timeout: -32014,
  NotFound: -32015,
  Conflict: -32016,
} as const;

export type RpcErrorCode = (typeof RpcErrorCode)[keyof typeof RpcErrorCode];

/**
 * §12.2 retryability, read as §12.1 defines `data.retryable`: "whether an identical retry might succeed".
 * yes: -32011, -32010, -32014; "retry once": -32603; "yes, after fixing" (send initialize): -32001.
 * "maybe" for -32016 is "re-read state, do not blindly repeat the write", so an identical retry is not advised.
 * -32006 is "do not retry automatically". Everything else is a client-side fix.
 */
const RETRYABLE: ReadonlySet<RpcErrorCode> = new Set<RpcErrorCode>([
  RpcErrorCode.RateLimited,
  RpcErrorCode.BackendUnavailable,
  RpcErrorCode.Timeout,
  RpcErrorCode.InternalError,
  RpcErrorCode.NotInitialized,
]);

export function isRetryable(code: RpcErrorCode): boolean {
  return RETRYABLE.has(code);
}

/**
 * Whether a client may repeat a request that failed with `code` on its own (§12.2): what `data.retryable` says when
 * the server said it, else the table above — but never after -32006 (the caller cancelled) nor -32001 (that needs
 * initialize, not a repeat). -32603 is "retry once": counting attempts is the caller's business.
 */
export function retriesAutomatically(code: number, data: Readonly<Record<string, unknown>>): boolean {
  if (code === RpcErrorCode.Cancelled || code === RpcErrorCode.NotInitialized) return false;
  if (typeof data.retryable === 'boolean') return data.retryable;
  return (Object.values(RpcErrorCode) as number[]).includes(code) && isRetryable(code as RpcErrorCode);
}
