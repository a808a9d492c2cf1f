import { describe, expect, it } from 'vitest';
import { MemoryBucketStore } from '../../../src/transport/bucket-store.js';
import { RateLimiter } from '../../../src/transport/rate-limit.js';

/** A limiter over in-memory buckets whose clock the test moves. */
function limiterAt(rates: { reads: number; writes: number; models: number }, maxKeys = 100_000) {
  const clock = { now: 0 };
  return { clock, limiter: new RateLimiter(rates, new MemoryBucketStore(maxKeys, () => clock.now)) };
}

describe('per-caller token buckets (§12.2)', () => {
  it('allows a second of burst, then -32011 with retryAfterMs until the bucket refills', async () => {
    const { clock, limiter } = limiterAt({ reads: 2, writes: 0, models: 0 });
    expect(await limiter.take('a', 'retrieve')).toBeUndefined();
    expect(await limiter.take('a', 'retrieve')).toBeUndefined();
    const refused = await limiter.take('a', 'retrieve');
    expect(refused).toMatchObject({ code: -32011, data: { retryable: true, retryAfterMs: 500 } });
    clock.now = 250;
    expect(await limiter.take('a', 'retrieve')).toMatchObject({ data: { retryAfterMs: 250 } });
    clock.now = 500;
    expect(await limiter.take('a', 'retrieve')).toBeUndefined();
  });

  it('keeps callers and method classes apart, never limits the lifecycle or notifications, and 0 means unlimited', async () => {
    const { limiter } = limiterAt({ reads: 1, writes: 1, models: 0 });
    expect(await limiter.take('a', 'retrieve')).toBeUndefined();
    expect(await limiter.take('a', 'retrieve')).toBeDefined();
    expect(await limiter.take('b', 'retrieve')).toBeUndefined();
    expect(await limiter.take('a', 'index/add')).toBeUndefined();
    for (let i = 0; i < 10; i++) {
      for (const method of ['ping', 'info', 'initialize', 'shutdown', 'notifications/cancel', 'embed']) {
        expect(await limiter.take('a', method)).toBeUndefined();
      }
    }
  });

  it('forgets the least recently seen callers past its bound', async () => {
    const { limiter } = limiterAt({ reads: 1, writes: 0, models: 0 }, 2);
    await limiter.take('a', 'retrieve');
    await limiter.take('b', 'retrieve');
    await limiter.take('c', 'retrieve'); // evicts a
    expect(await limiter.take('a', 'retrieve')).toBeUndefined(); // a starts over with a full bucket
    expect(await limiter.take('c', 'retrieve')).toBeDefined();
  });
});
