import { RpcError } from '../protocol/errors.js';
import { rateClassOf, type MethodClass } from '../protocol/method-table.js';
import type { BucketStore } from './bucket-store.js';
import { MemoryBucketStore } from './bucket-store.js';

/**
 * Per-caller token buckets, one per method class (§12.2, §15.5; each method's class is in the method table):
 * `reads` (retrieve and the rest), `writes` (index/add, index/delete), `models` (embed, rerank). A bucket holds up to one second of its rate and
 * refills continuously; an empty one answers -32011 with `retryAfterMs` = the time until the next token. The lifecycle
 * methods and notifications are never limited: health probes keep answering and a `notifications/cancel` is never
 * dropped. The JSON-RPC answer is what carries the refusal (§5.2), which is why this is not @fastify/rate-limit: that
 * answers HTTP 429 without a JSON-RPC frame, per HTTP request rather than per batch member and method class.
 * Where the buckets live is the store's business: this process's memory, or Redis shared by every replica.
 */
export type Rates = Readonly<Record<MethodClass, number>>;

export class RateLimiter {
  constructor(
    private readonly rates: Rates,
    private readonly store: BucketStore = new MemoryBucketStore(),
  ) {}

  get enabled(): boolean {
    return Object.values(this.rates).some((rate) => rate > 0);
  }

  /** Takes one token for `caller` calling `method`; -32011 when the bucket is empty. */
  async take(caller: string, method: string): Promise<RpcError | undefined> {
    const kind = rateClassOf(method);
    const rate = kind === undefined ? 0 : this.rates[kind];
    if (rate <= 0 || kind === undefined) return undefined;
    const waitMs = await this.store.take(`${kind}:${caller}`, rate, Math.max(1, rate));
    return waitMs <= 0 ? undefined : RpcError.rateLimited(waitMs, `${kind} limit of ${rate}/s for this caller`);
  }

  close(): Promise<void> {
    return this.store.close();
  }
}
