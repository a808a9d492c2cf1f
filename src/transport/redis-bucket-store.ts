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
 * Redis is a protection here, not the system of record: when a take cannot be answered within `timeoutMs` (down,
 * partitioned, frozen, slow) this replica limits with its own buckets — never left hanging, never waved through
 * unlimited — and goes on doing so, without asking Redis again per request, until a probe in the background (the
 * same script on a key of its own, every PROBE_MS.first doubling to PROBE_MS.most) is answered. So a Redis that
 * hangs costs the requests in flight when it stops answering one `timeoutMs` each, and no request after them. Each
 * change is logged once (not once per request) and told to `onLocal`; each take answered locally to `onFallback`.
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
  /** Told of every take answered by this replica's own buckets. */
  onFallback?: () => void;
  /** Told when this replica starts (true) and stops (false) limiting with its own buckets. */
  onLocal?: (local: boolean) => void;
}

/** How often a replica limiting locally asks Redis again: the first probe's delay, doubled up to the most. */
const PROBE_MS = { first: 250, most: 5_000 };

/** Since when this replica limits with its own buckets, why, and how many takes it answered so. */
interface Local {
  readonly since: number;
  takes: number;
  probe: NodeJS.Timeout | undefined;
  probeMs: number;
}

type WithTake = Redis & { rcpTake(key: string, rate: string, capacity: string): Promise<string> };

export class RedisBucketStore implements BucketStore {
  readonly #redis: WithTake;
  readonly #fallback = new MemoryBucketStore();
  readonly #options: RedisBucketStoreOptions;
  /** Settles once the first connection is up, or the timeout has passed: the first requests wait for it. */
  readonly #connected: Promise<void>;
  /** Set while Redis does not answer (see above). */
  #local: Local | undefined;
  #closed = false;

  constructor(options: RedisBucketStoreOptions) {
    this.#options = options;
    const timeoutMs = options.timeoutMs ?? 100;
    const redis = new Redis(options.url, {
      // Fail fast instead of queueing while disconnected: a queued take would hold the request.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: timeoutMs,
      connectTimeout: Math.max(1000, timeoutMs),
      retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
      lazyConnect: false,
    });
    // A lost connection: local limits at once, and a probe as soon as it is back.
    redis.on('error', (error: Error) => this.#lost(error));
    redis.on('ready', () => void (this.#local !== undefined && this.#probe()));
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
    if (this.#local !== undefined) return this.#takeLocally(key, rate, capacity);
    // Right after start the connection may still be opening: wait for it (bounded) rather than spend local tokens.
    // Later outages do not wait: commands fail at once while disconnected.
    await this.#connected;
    try {
      const hashed = createHash('sha256').update(key).digest('hex').slice(0, 32);
      return Number(await this.#redis.rcpTake(`${this.#prefix}${hashed}`, `${rate}`, `${capacity}`));
    } catch (error) {
      this.#lost(error as Error);
      return this.#takeLocally(key, rate, capacity);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#local?.probe);
    await this.#redis.quit().catch(() => this.#redis.disconnect());
  }

  get #prefix(): string {
    return this.#options.prefix ?? 'rcp:rate:';
  }

  #takeLocally(key: string, rate: number, capacity: number): number {
    if (this.#local !== undefined) this.#local.takes++;
    this.#options.onFallback?.();
    return this.#fallback.takeNow(key, rate, capacity);
  }

  /** Redis did not answer: limit locally from now on, and probe until it answers again. */
  #lost(error: Error): void {
    if (this.#local !== undefined || this.#closed) return;
    this.#local = { since: Date.now(), takes: 0, probe: undefined, probeMs: PROBE_MS.first };
    this.#options.onLocal?.(true);
    this.#options.log.warn(
      { err: error },
      "Redis rate-limit store not answering; limiting with this replica's buckets until it answers",
    );
    this.#scheduleProbe(this.#local);
  }

  #scheduleProbe(local: Local): void {
    clearTimeout(local.probe);
    local.probe = setTimeout(() => void this.#probe(), local.probeMs);
    local.probe.unref();
    local.probeMs = Math.min(local.probeMs * 2, PROBE_MS.most);
  }

  /** One take on a key of the probe's own (no caller's key is this short): answered, Redis is back. */
  async #probe(): Promise<void> {
    const local = this.#local;
    if (local === undefined || this.#closed) return;
    try {
      await this.#redis.rcpTake(`${this.#prefix}probe`, '1', '1');
    } catch {
      if (this.#local === local) this.#scheduleProbe(local);
      return;
    }
    if (this.#local !== local) return;
    clearTimeout(local.probe);
    this.#local = undefined;
    this.#options.onLocal?.(false);
    this.#options.log.info(
      { localMs: Date.now() - local.since, localTakes: local.takes },
      'Redis rate-limit store answering again; limits are shared again',
    );
  }
}
