import { describe, expect, it } from 'vitest';
import { RpcErrorCode, isRetryable, retriesAutomatically } from '../../src/protocol/codes.js';
import { RpcError } from '../../src/protocol/errors.js';
import { schema } from '../helpers/schema.js';

describe('§12 error codes', () => {
  it('§12 the code table equals the normative schema ErrorCode enum', () => {
    const normative = schema.$defs.ErrorCode?.anyOf?.[0]?.enum ?? [];
    expect([...Object.values(RpcErrorCode)].sort()).toEqual([...normative].sort());
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
