import { describe, expect, it } from 'vitest';
import { RpcErrorCode, isRetryable, retriesAutomatically } from '../../../src/protocol/codes.js';
import { RpcError } from '../../../src/protocol/errors.js';

describe('§12 error codes', () => {
  it("§12 the code table is the spec's, symbol for code", () => {
    // The §12 table as the spec prints it (the conformance suite pins it to rcp-1.0.json's ErrorCode enum too).
    expect(RpcErrorCode).toEqual({
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
    });
  });

  it('§12.2 marks exactly the retryable codes', () => {
    const retryable = Object.entries(RpcErrorCode)
      .filter(([, code]) => isRetryable(code))
      .map(([name]) => name)
      .sort();
    expect(retryable).toEqual(['BackendUnavailable', 'InternalError', 'NotInitialized', 'RateLimited', 'Timeout']);
  });

  it('§12.1 every error carries data.retryable; -32011 and -32010 carry retryAfterMs', () => {
    expect(RpcError.invalidParams('k', 'bad').toJSON()).toEqual({
      code: -32602,
      message: 'invalid params: k: bad',
      data: { retryable: false, field: 'k' },
    });
    expect(RpcError.rateLimited(12.2).toJSON().data).toEqual({ retryable: true, retryAfterMs: 13 });
    expect(RpcError.backendUnavailable('model down', 500).toJSON().data).toMatchObject({
      retryable: true,
      retryAfterMs: 500,
    });
  });

  it('§12 one conversion point: an unknown throw becomes a bare -32603', () => {
    const converted = RpcError.from(new Error('stack and secrets'));
    expect(converted.toJSON()).toEqual({ code: -32603, message: 'internal error', data: { retryable: true } });
    const original = RpcError.cancelled();
    expect(RpcError.from(original)).toBe(original);
  });
});

describe('§12.2 automatic retries (shared by the client and the gateway)', () => {
  it('follows data.retryable when given, else the table; never -32006 or -32001', () => {
    expect(retriesAutomatically(-32011, {})).toBe(true);
    expect(retriesAutomatically(-32010, { retryable: false })).toBe(false);
    expect(retriesAutomatically(-32016, { retryable: true })).toBe(true);
    expect(retriesAutomatically(-32602, {})).toBe(false);
    expect(retriesAutomatically(-32001, { retryable: true })).toBe(false);
    expect(retriesAutomatically(-32006, { retryable: true })).toBe(false);
    expect(retriesAutomatically(-1, {})).toBe(false);
  });
});
