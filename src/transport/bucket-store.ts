import { setMostRecent } from '../protocol/lru-map.js';

/**
 * Where token buckets live. `take` spends one token from the bucket `key` (refilling at `rate` per second up to
 * `capacity`) and resolves to 0 when it was granted, else to the milliseconds until a token will be there.
 */
export interface BucketStore {
  take(key: string, rate: number, capacity: number): Promise<number>;
  close(): Promise<void>;
}

/**
 * Buckets in this process's memory: one replica's budget. Memory is bounded: past `maxKeys` the least recently
 * used bucket is forgotten (a forgotten caller starts over with a full bucket).
 */
export class MemoryBucketStore implements BucketStore {
  readonly #buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly maxKeys = 100_000,
    private readonly clock: () => number = Date.now,
  ) {}

  take(key: string, rate: number, capacity: number): Promise<number> {
    return Promise.resolve(this.takeNow(key, rate, capacity));
  }

  takeNow(key: string, rate: number, capacity: number): number {
    const now = this.clock();
    const bucket = this.#buckets.get(key) ?? { tokens: capacity, at: now };
    bucket.tokens = Math.min(capacity, bucket.tokens + (Math.max(0, now - bucket.at) / 1000) * rate);
    bucket.at = now;
    setMostRecent(this.#buckets, key, bucket);
    while (this.#buckets.size > this.maxKeys) {
      const oldest = this.#buckets.keys().next().value;
      if (oldest === undefined) break;
      this.#buckets.delete(oldest);
    }
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return ((1 - bucket.tokens) / rate) * 1000;
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
