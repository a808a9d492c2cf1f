import { RpcError } from '../protocol/errors.js';

/**
 * Per-caller token buckets, one per method class (§12.2, issue #6): `reads` (retrieve, info-style calls), `writes`
 * (index/add, index/delete), `models` (embed, rerank). A bucket holds up to one second of its rate and refills
 * continuously; an empty one answers -32011 with `retryAfterMs` = the time until the next token. `ping` and `info`
 * are never limited, so health probes keep answering. The JSON-RPC answer is what carries the refusal (§5.2), which is
 * why this is not @fastify/rate-limit: that answers HTTP 429 without a JSON-RPC frame. Memory is bounded: the least
 * recently seen callers are forgotten past `maxCallers` (a forgotten caller starts with a full bucket).
 */
export type MethodClass = 'reads' | 'writes' | 'models';
export type Rates = Readonly<Record<MethodClass, number>>;

const WRITES = new Set(['index/add', 'index/delete']);
const MODELS = new Set(['embed', 'rerank', 'embed/sparse', 'embed/multi']);
const EXEMPT = new Set(['ping', 'info']);

export function methodClass(method: string): MethodClass | undefined {
  if (EXEMPT.has(method)) return undefined;
  return WRITES.has(method) ? 'writes' : MODELS.has(method) ? 'models' : 'reads';
}

export class RateLimiter {
  readonly #buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly rates: Rates,
    private readonly maxCallers = 100_000,
  ) {}

  get enabled(): boolean {
    return Object.values(this.rates).some((rate) => rate > 0);
  }

  /** Takes one token for `caller` calling `method`; -32011 when the bucket is empty. */
  take(caller: string, method: string, now = Date.now()): RpcError | undefined {
    const kind = methodClass(method);
    const rate = kind === undefined ? 0 : this.rates[kind];
    if (rate <= 0 || kind === undefined) return undefined;
    const key = `${kind}\u0000${caller}`;
    const capacity = Math.max(1, rate);
    const bucket = this.#buckets.get(key) ?? { tokens: capacity, at: now };
    this.#buckets.delete(key); // re-insert: Map order is recency order
    bucket.tokens = Math.min(capacity, bucket.tokens + ((now - bucket.at) / 1000) * rate);
    bucket.at = now;
    this.#buckets.set(key, bucket);
    while (this.#buckets.size > this.maxCallers) {
      const oldest = this.#buckets.keys().next().value;
      if (oldest === undefined) break;
      this.#buckets.delete(oldest);
    }
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return undefined;
    }
    return RpcError.rateLimited(((1 - bucket.tokens) / rate) * 1000, `${kind} limit of ${rate}/s for this caller`);
  }
}
