import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import type { BucketStore } from './bucket-store.js';
import { MemoryBucketStore } from './bucket-store.js';
import type { Logger } from '../protocol/logger.js';

/**
 * Token buckets in Redis, so N replicas behind a load balancer spend one budget. The whole
 * refill-and-take is one Lua script, atomic on the Redis server and timed by the Redis server's clock (`TIME`), so
 * replicas with skewed clocks still agree. Keys expire once a bucket would be full again.
 *
 * Redis is a protection here, not the system of record: when it cannot answer within `timeoutMs` (down,
 * partitioned, slow) the request is limited by this replica's own buckets instead — never left hanging, never
 * waved through unlimited — and the fault is logged (once per 10 s) and counted.
 */
const TAKE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rate = tonumber(ARGV[1])
local capacity = tonumber(ARGV[2])
local bucket = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(bucket[1]) or capacity
local at = tonumber(bucket[2]) or now
tokens = math.min(capacity, tokens + math.max(0, now - at) / 1000 * rate)
local wait = 0
if tokens >= 1 then tokens = tokens - 1 else wait = (1 - tokens) / rate * 1000 end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(capacity / rate * 1000) + 1000)
return tostring(wait)
`;

export interface RedisBucketStoreOptions {
  url: string;
  /** Key prefix, so several deployments can share one Redis. */
  prefix?: string;
  /** How long a take may wait for Redis before this replica's own buckets answer instead. */
  timeoutMs?: number;
  log: Logger;
  /** Told of every take Redis could not answer. */
  onFallback?: () => void;
}

type WithTake = Redis & { rcpTake(key: string, rate: string, capacity: string): Promise<string> };

export class RedisBucketStore implements BucketStore {
  readonly #redis: WithTake;
  readonly #fallback = new MemoryBucketStore();
  readonly #options: RedisBucketStoreOptions;
  /** Settles once the first connection is up, or the timeout has passed: the first requests wait for it. */
  readonly #connected: Promise<void>;
  #lastWarning = 0;

  constructor(options: RedisBucketStoreOptions) {
    this.#options = options;
    const timeoutMs = options.timeoutMs ?? 250;
    const redis = new Redis(options.url, {
      // Fail fast instead of queueing while disconnected: a queued take would hold the request.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: timeoutMs,
      connectTimeout: Math.max(1000, timeoutMs),
      retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
      lazyConnect: false,
    });
    redis.on('error', (error: Error) => this.#warn(error));
    redis.defineCommand('rcpTake', { numberOfKeys: 1, lua: TAKE });
    this.#redis = redis as WithTake;
    this.#connected = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, Math.max(1000, timeoutMs));
      timer.unref();
      redis.once('ready', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  async take(key: string, rate: number, capacity: number): Promise<number> {
    const hashed = createHash('sha256').update(key).digest('hex').slice(0, 32);
    // Right after start the connection may still be opening: wait for it (bounded) rather than spend local tokens.
    // Later outages do not wait: commands fail at once while disconnected.
    await this.#connected;
    try {
      const wait = await this.#redis.rcpTake(
        `${this.#options.prefix ?? 'rcp:rate:'}${hashed}`,
        `${rate}`,
        `${capacity}`,
      );
      return Number(wait);
    } catch (error) {
      this.#warn(error as Error);
      this.#options.onFallback?.();
      return this.#fallback.takeNow(key, rate, capacity);
    }
  }

  async close(): Promise<void> {
    await this.#redis.quit().catch(() => this.#redis.disconnect());
  }

  #warn(error: Error): void {
    const now = Date.now();
    if (now - this.#lastWarning < 10_000) return;
    this.#lastWarning = now;
    this.#options.log.warn({ err: error }, "Redis rate-limit store unavailable; limiting with this replica's buckets");
  }
}
