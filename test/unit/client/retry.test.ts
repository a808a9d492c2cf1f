import { describe, expect, it } from 'vitest';
import { RpcError } from '../../../src/protocol/errors.js';
import { DEFAULT_RETRY, retryDelay } from '../../../src/client/retry.js';

/** §12.2 as the client applies it: which failures are retried, and how long it waits. */
const policy = { attempts: 4, baseMs: 100, capMs: 1000 };

describe('client retries (§12.2)', () => {
  it('retries only retryable codes, within the attempt bound, never -32006 nor -32001, -32603 once', () => {
    const max = () => 0.999999;
    expect(retryDelay(RpcError.answered(-32011, 'rate limited'), 1, policy, max)).toBeGreaterThan(0);
    expect(retryDelay(RpcError.answered(-32010, 'down'), 3, policy, max)).toBeGreaterThan(0);
    expect(retryDelay(RpcError.answered(-32010, 'down'), 4, policy, max)).toBeUndefined(); // the bound
    expect(retryDelay(RpcError.answered(-32014, 'timeout'), 1, policy, max)).toBeGreaterThan(0);
    expect(retryDelay(RpcError.answered(-32603, 'internal'), 1, policy, max)).toBeGreaterThan(0);
    expect(retryDelay(RpcError.answered(-32603, 'internal'), 2, policy, max)).toBeUndefined();
    for (const code of [-32006, -32001, -32602, -32003, -32005, -32013, -32012, -32016]) {
      expect(retryDelay(RpcError.answered(code, 'no'), 1, policy, max), String(code)).toBeUndefined();
    }
    // data.retryable overrides the code's default, both ways.
    expect(retryDelay(RpcError.answered(-32010, 'down', { retryable: false }), 1, policy, max)).toBeUndefined();
    expect(retryDelay(RpcError.answered(-32016, 'conflict', { retryable: true }), 1, policy, max)).toBeGreaterThan(0);
    expect(retryDelay(new Error('not an answer'), 1, policy, max)).toBeUndefined();
  });

  it('waits at least retryAfterMs, else full-jitter exponential backoff, capped', () => {
    const hinted = RpcError.answered(-32011, 'rate limited', { retryAfterMs: 700 });
    expect(retryDelay(hinted, 1, policy, () => 0)).toBe(700);
    expect(retryDelay(RpcError.answered(-32011, 'x', { retryAfterMs: 5000 }), 1, policy, () => 0)).toBe(1000);
    const plain = RpcError.answered(-32010, 'down');
    expect(retryDelay(plain, 1, policy, () => 0.5)).toBe(50); // 0.5 · 100
    expect(retryDelay(plain, 3, policy, () => 0.5)).toBe(200); // 0.5 · 400
    expect(retryDelay(plain, 3, { ...policy, attempts: 10 }, () => 1)).toBe(400);
    expect(retryDelay(plain, 8, { ...policy, attempts: 10 }, () => 1)).toBe(1000); // capped
    for (let i = 0; i < 50; i++) {
      const wait = retryDelay(plain, 2, DEFAULT_RETRY) ?? -1;
      expect(wait).toBeGreaterThanOrEqual(0);
      expect(wait).toBeLessThanOrEqual(200);
    }
  });
});
