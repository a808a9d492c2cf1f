import { describe, expect, it } from 'vitest';
import { RateLimiter } from '../../src/transport/rate-limit.js';

describe('per-caller token buckets (issue #6)', () => {
  it('allows a second of burst, then -32011 with retryAfterMs until the bucket refills', () => {
    const limiter = new RateLimiter({ reads: 2, writes: 0, models: 0 });
    expect(limiter.take('a', 'retrieve', 0)).toBeUndefined();
    expect(limiter.take('a', 'retrieve', 0)).toBeUndefined();
    const refused = limiter.take('a', 'retrieve', 0);
    expect(refused).toMatchObject({ code: -32011, data: { retryable: true, retryAfterMs: 500 } });
    expect(limiter.take('a', 'retrieve', 250)).toMatchObject({ data: { retryAfterMs: 250 } });
    expect(limiter.take('a', 'retrieve', 500)).toBeUndefined();
  });

  it('keeps callers and method classes apart, never limits ping or info, and 0 means unlimited', () => {
    const limiter = new RateLimiter({ reads: 1, writes: 1, models: 0 });
    expect(limiter.take('a', 'retrieve', 0)).toBeUndefined();
    expect(limiter.take('a', 'retrieve', 0)).toBeDefined();
    expect(limiter.take('b', 'retrieve', 0)).toBeUndefined();
    expect(limiter.take('a', 'index/add', 0)).toBeUndefined();
    for (let i = 0; i < 10; i++) {
      expect(limiter.take('a', 'ping', 0)).toBeUndefined();
      expect(limiter.take('a', 'info', 0)).toBeUndefined();
      expect(limiter.take('a', 'embed', 0)).toBeUndefined();
    }
  });

  it('forgets the least recently seen callers past its bound', () => {
    const limiter = new RateLimiter({ reads: 1, writes: 0, models: 0 }, 2);
    limiter.take('a', 'retrieve', 0);
    limiter.take('b', 'retrieve', 0);
    limiter.take('c', 'retrieve', 0); // evicts a
    expect(limiter.take('a', 'retrieve', 0)).toBeUndefined(); // a starts over with a full bucket
    expect(limiter.take('c', 'retrieve', 0)).toBeDefined();
  });
});
