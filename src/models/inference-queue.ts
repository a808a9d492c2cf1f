import { RpcError } from '../protocol/errors.js';

/**
 * The one road to a model (docs/architecture.md §10): requests from every session are collected for up to `maxWaitMs`
 * or until `maxBatchTokens` fills, then run as few model calls as padding allows: the batch is split into length
 * buckets (powers of two) so a short text is never padded to a long one's length. One batch runs at a time per model;
 * the model's own intra-op threads do the parallel work.
 *
 * Batches are filled round robin over the submissions waiting, one item of each in turn, oldest first (§15.5): a
 * request of hundreds of texts costs its own caller, while a one-text query that arrives behind it rides the next
 * batch instead of waiting for all of them.
 *
 * The queue is bounded twice: a submission that would take it past `maxQueuedItems`, or that would wait behind more
 * than `maxQueueWaitMs` of work (estimated from measured throughput), is refused at once with -32011 and a
 * `retryAfterMs` from that estimate — never queued without limit, never left to time out in the queue (§15.5).
 * A submission to an empty queue is always taken, whatever its size.
 *
 * Batching is adaptive: waiting only pays when there is someone to batch with. A submission that finds the queue
 * idle (no batch running, nothing waiting) runs at the end of the current turn of the event loop (so the texts of
 * submissions made in that same turn still ride along), not after `maxWaitMs`; work that arrives while a batch runs
 * or others wait collects for up to `maxWaitMs` as before, counted from the oldest waiting item.
 */
export interface QueueOptions {
  readonly maxWaitMs: number;
  readonly maxBatchTokens: number;
  readonly maxBatchItems: number;
  readonly maxQueuedItems: number;
  /** The most estimated work a submission may wait behind; 0 or absent: no time bound. */
  readonly maxQueueWaitMs?: number;
}

export interface QueueItem<I> {
  readonly input: I;
  /** Token count after truncation: the item's padded cost is its bucket length. */
  readonly tokens: number;
}

/** Runs one bucket: same-order outputs for the inputs. */
export type BatchRunner<I, O> = (inputs: readonly I[]) => Promise<readonly O[]>;

interface Pending<I, O> {
  /** Which submit() call the item came with: batches take turns between submissions. */
  readonly submission: number;
  readonly item: QueueItem<I>;
  readonly cost: number;
  readonly resolve: (output: O) => void;
  readonly reject: (error: unknown) => void;
  readonly signal: AbortSignal | undefined;
  readonly enqueuedAt: number;
  taken: boolean;
}

const MIN_BUCKET = 8;

export function bucketLength(tokens: number): number {
  let length = MIN_BUCKET;
  while (length < tokens) length *= 2;
  return length;
}

export class InferenceQueue<I, O> {
  readonly #pending: Pending<I, O>[] = [];
  #pendingCost = 0;
  #submissions = 0;
  #running = false;
  #timer: NodeJS.Timeout | undefined;
  /** Set while a flush is due at the end of this turn: the queue was idle when the work arrived. */
  #immediate: NodeJS.Immediate | undefined;
  /** Exponentially weighted milliseconds per item, for retryAfterMs. */
  #msPerItem = 5;
  /** Told of every model call: items in it and its milliseconds. */
  onBatch: ((items: number, ms: number) => void) | undefined;

  constructor(
    private readonly options: QueueOptions,
    private readonly run: BatchRunner<I, O>,
  ) {}

  /** Items waiting (not yet handed to the model). */
  get depth(): number {
    return this.#pending.length;
  }

  submit(items: readonly QueueItem<I>[], signal?: AbortSignal): Promise<O[]> {
    if (signal?.aborted === true) return Promise.reject(signal.reason as Error);
    const aheadMs = this.#itemsAhead(items.length) * this.#msPerItem;
    const maxWait = this.options.maxQueueWaitMs ?? 0;
    if (this.#pending.length + items.length > this.options.maxQueuedItems) {
      const ahead = this.#pending.length + items.length;
      return Promise.reject(
        RpcError.rateLimited(
          Math.max(10, ahead * this.#msPerItem),
          `model queue full (${this.options.maxQueuedItems} items)`,
        ),
      );
    }
    if (maxWait > 0 && this.#pending.length > 0 && aheadMs > maxWait) {
      return Promise.reject(
        RpcError.rateLimited(
          Math.max(10, aheadMs - maxWait / 2),
          `model queue busy (about ${Math.round(aheadMs)} ms of work ahead; the bound is ${maxWait} ms)`,
        ),
      );
    }
    const idle = !this.#running && this.#pending.length === 0;
    const submission = ++this.#submissions;
    const outputs = items.map(
      (item) =>
        new Promise<O>((resolve, reject) => {
          const entry: Pending<I, O> = {
            submission,
            item,
            cost: bucketLength(item.tokens),
            resolve,
            reject,
            signal,
            enqueuedAt: performance.now(),
            taken: false,
          };
          this.#pending.push(entry);
          this.#pendingCost += entry.cost;
        }),
    );
    if (signal !== undefined) {
      // Withdrawn on abort while waiting; the listener goes once every item is settled, so a request that submits
      // many times (index/add embeds 64 chunks a submission) holds one listener on its signal at a time, not one each.
      const withdraw = (): void => this.#withdraw(signal);
      signal.addEventListener('abort', withdraw, { once: true });
      void Promise.allSettled(outputs).then(() => signal.removeEventListener('abort', withdraw));
    }
    this.#schedule(idle);
    return Promise.all(outputs);
  }

  #withdraw(signal: AbortSignal): void {
    for (let i = this.#pending.length - 1; i >= 0; i--) {
      const entry = this.#pending[i];
      if (entry?.signal !== signal || entry.taken) continue;
      this.#pending.splice(i, 1);
      this.#pendingCost -= entry.cost;
      entry.reject(signal.reason);
    }
  }

  /** `idle`: the work just submitted found no batch running and nothing waiting. */
  #schedule(idle = false): void {
    if (this.#running || this.#pending.length === 0) return;
    const full = this.#pendingCost >= this.options.maxBatchTokens || this.#pending.length >= this.options.maxBatchItems;
    // The oldest waiting item bounds the wait: work that queued behind a running batch has waited already.
    const waited = performance.now() - (this.#pending[0]?.enqueuedAt ?? 0);
    if (full || waited >= this.options.maxWaitMs) {
      this.#flushNow();
    } else if (idle) {
      // Nobody to batch with: run at the end of this turn (submissions made in it still ride along), not after the wait.
      this.#immediate ??= setImmediate(() => this.#flushNow());
    } else if (this.#immediate === undefined) {
      this.#timer ??= setTimeout(() => this.#flushNow(), this.options.maxWaitMs - waited);
    }
  }

  /** Runs what waits now (if no batch is running), forgetting any wait that was due. */
  #flushNow(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    clearImmediate(this.#immediate);
    this.#immediate = undefined;
    void this.#flush();
  }

  /** Items that run before the last of `count` new ones, taking turns: up to `count` from each waiting submission. */
  #itemsAhead(count: number): number {
    let ahead = 0;
    for (const lane of this.#lanes().values()) ahead += Math.min(lane.length, count);
    return ahead;
  }

  /** Waiting items by submission, oldest submission first. */
  #lanes(): Map<number, Pending<I, O>[]> {
    const lanes = new Map<number, Pending<I, O>[]>();
    for (const entry of this.#pending) {
      const lane = lanes.get(entry.submission);
      if (lane === undefined) lanes.set(entry.submission, [entry]);
      else lane.push(entry);
    }
    return lanes;
  }

  /** Takes a batch within the token and item budgets (at least one item), one item per submission in turn. */
  #take(): Pending<I, O>[] {
    const batch: Pending<I, O>[] = [];
    let cost = 0;
    const lanes = [...this.#lanes().values()];
    const fits = (next: Pending<I, O>) =>
      batch.length < this.options.maxBatchItems &&
      (batch.length === 0 || cost + next.cost <= this.options.maxBatchTokens);
    for (let round = 0, took = true; took; round++) {
      took = false;
      for (const lane of lanes) {
        const next = lane[round];
        if (next === undefined || !fits(next)) continue;
        next.taken = true;
        cost += next.cost;
        batch.push(next);
        took = true;
      }
    }
    this.#pending.splice(0, this.#pending.length, ...this.#pending.filter((entry) => !entry.taken));
    this.#pendingCost -= cost;
    return batch;
  }

  async #flush(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    try {
      const batch = this.#take();
      const buckets = new Map<number, Pending<I, O>[]>();
      for (const entry of batch) buckets.set(entry.cost, [...(buckets.get(entry.cost) ?? []), entry]);
      for (const bucket of buckets.values()) await this.#runBucket(bucket);
    } finally {
      this.#running = false;
      this.#schedule();
    }
  }

  async #runBucket(bucket: readonly Pending<I, O>[]): Promise<void> {
    const started = performance.now();
    try {
      const outputs = await this.run(bucket.map((entry) => entry.item.input));
      bucket.forEach((entry, i) => entry.resolve(outputs[i] as O));
      const ms = performance.now() - started;
      this.onBatch?.(bucket.length, ms);
      const perItem = ms / bucket.length;
      this.#msPerItem = 0.8 * this.#msPerItem + 0.2 * perItem;
    } catch (error) {
      for (const entry of bucket) entry.reject(error);
    }
  }
}
