import { RpcError } from '../protocol/errors.js';
import { pastSpan, tracedContext, untraced, type TraceContext } from '../protocol/tracing.js';

/**
 * The one road to a model (docs/architecture.md §10): requests from every session are collected for up to `maxWaitMs`
 * or until `maxBatchTokens` fills, then run as few model calls as padding allows: the batch is split into length
 * buckets (powers of two) so a short text is never padded to a long one's length. One batch runs at a time per model;
 * the model's own intra-op threads do the parallel work.
 *
 * Batches are filled round robin over the callers waiting, one item of each in turn (§15.5): however many requests
 * one caller has waiting, another caller's text rides the next batch, so it waits for at most the batch running when
 * it came. Callers take turns starting with whoever has waited longest since its last batch; a query (`urgent`: a
 * text of kind 'query', someone waiting on the answer) is taken before bulk work, and its length bucket runs first
 * in the batch. Within one caller its submissions take turns the same way, queries first, then oldest first.
 * A submission without a caller is a caller of its own.
 *
 * The queue is bounded twice: a submission that would take it past `maxQueuedItems`, or that would wait behind more
 * than `maxQueueWaitMs` of work (estimated from measured throughput), is refused at once with -32011 and a
 * `retryAfterMs` from that estimate — never queued without limit, never left to time out in the queue (§15.5).
 * A submission to an empty queue is always taken, whatever its size. A write asks `refusal()` before it chunks and
 * tokenizes its documents: once its caller's own waiting texts are more than `maxQueueWaitMs` of work, the write is
 * refused then, not after that work (§15.5).
 *
 * With `background`, the model has a second session for bulk work at a lower OS thread priority (model-host.ts):
 * queries and bulk texts then run in batches of their own, side by side, one of each at a time, and a query never
 * waits for a bulk batch to end (docs/architecture.md §10). Without it, one batch runs at a time, and while queries
 * are being served (one came within the last `QUERIES_RECENT_MS`) a batch carries at most `maxBulkItems` bulk texts:
 * a batch runs to its end once begun, so this is what a query that comes meanwhile waits for (16 texts of 128 tokens
 * hold two cores ~100 ms idle, 300-400 ms loaded; 4 hold them a quarter of that). With no query about, bulk batches
 * fill to `maxBatchItems`, where the model's throughput is best.
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
  /** Bulk texts in one batch at most while queries are being served; absent: `maxBatchItems`. */
  readonly maxBulkItems?: number;
  /** Bulk batches run beside query batches, in the model's background session (the runner's second argument). */
  readonly background?: boolean;
}

/** How long after a query bulk batches stay at `maxBulkItems`: a client retrieving in a loop keeps them small. */
export const QUERIES_RECENT_MS = 1000;

export interface QueueItem<I> {
  readonly input: I;
  /** Token count after truncation: the item's padded cost is its bucket length. */
  readonly tokens: number;
}

/** Who a submission is for (§15.5): batches take turns between callers, and queries go ahead of bulk work. */
export interface Submitter {
  /** The caller the work is done for (docs/architecture.md §10); absent: a caller of its own. */
  readonly caller?: string | undefined;
  /** A query someone is waiting on (kind 'query'), not bulk work: taken first, and run first in its batch. */
  readonly urgent?: boolean | undefined;
  /** Told once per model call that finished some of this submission's items: how many are done of how many. */
  readonly progress?: ((done: number, total: number) => void) | undefined;
}

/** A submission's count of finished items, for its progress observer. */
interface Tally {
  done: number;
  readonly total: number;
  readonly report: (done: number, total: number) => void;
}

/** Runs one bucket, of bulk work in the background session when `background`: same-order outputs for the inputs. */
export type BatchRunner<I, O> = (inputs: readonly I[], background: boolean) => Promise<readonly O[]>;

/** Where a batch runs: the model's main session (queries; everything without a background one), or its background. */
type Slot = 'main' | 'background';

interface Pending<I, O> {
  /** Which submit() call the item came with: a caller's submissions take turns. */
  readonly submission: number;
  /** The lane of the caller it came from: batches take turns between callers. */
  readonly lane: string;
  readonly urgent: boolean;
  readonly item: QueueItem<I>;
  readonly cost: number;
  readonly resolve: (output: O) => void;
  readonly reject: (error: unknown) => void;
  readonly signal: AbortSignal | undefined;
  readonly enqueuedAt: number;
  readonly tally: Tally | undefined;
  /** The trace of the request that submitted it, while tracing is on: its batches are spans there. */
  readonly trace: TraceContext | undefined;
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
  /** Batches taken so far, and the batch each lane last had an item in: who waited longest goes first. */
  #batches = 0;
  readonly #servedIn = new Map<string, number>();
  /** The slots with a batch running: one batch at a time in each. */
  readonly #running = new Set<Slot>();
  #timer: NodeJS.Timeout | undefined;
  /** Set while a flush is due at the end of this turn: the queue was idle when the work arrived. */
  #immediate: NodeJS.Immediate | undefined;
  /** When the last query was submitted (-Infinity: never): bulk batches are kept small for a while after. */
  #lastQueryAt = Number.NEGATIVE_INFINITY;
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

  submit(items: readonly QueueItem<I>[], signal?: AbortSignal, submitter: Submitter = {}): Promise<O[]> {
    if (signal?.aborted === true) return Promise.reject(signal.reason as Error);
    const submission = ++this.#submissions;
    // A NUL never occurs in a caller (protocol/context.ts): an anonymous submission's lane is no caller's.
    const lane = submitter.caller ?? `\0${submission}`;
    const aheadMs = this.#itemsAhead(items.length, lane) * this.#msPerItem;
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
    const urgent = submitter.urgent === true;
    const slot = this.#slotOf(urgent);
    const idle = !this.#running.has(slot) && !this.#waitsIn(slot);
    if (urgent) this.#lastQueryAt = performance.now();
    const report = submitter.progress;
    const tally = report === undefined ? undefined : { done: 0, total: items.length, report };
    const trace = tracedContext();
    const outputs = items.map(
      (item) =>
        new Promise<O>((resolve, reject) => {
          const entry: Pending<I, O> = {
            submission,
            lane,
            urgent,
            item,
            cost: bucketLength(item.tokens),
            resolve,
            reject,
            signal,
            enqueuedAt: performance.now(),
            tally,
            trace,
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

  /**
   * -32011 when `caller`'s own waiting texts are already more than `maxQueueWaitMs` of estimated work: a write of its
   * asks before its documents are chunked and tokenized, and is refused until they drain (§15.5). Undefined: go ahead
   * (an anonymous caller always). submit() keeps its own bounds: a caller alone, many clients under one key, is not
   * refused single texts on this account.
   */
  refusal(caller: string | undefined): RpcError | undefined {
    const maxWait = this.options.maxQueueWaitMs ?? 0;
    if (caller === undefined || maxWait <= 0) return undefined;
    let own = 0;
    for (const entry of this.#pending) if (entry.lane === caller) own++;
    const ownMs = own * this.#msPerItem;
    if (ownMs <= maxWait) return undefined;
    return RpcError.rateLimited(
      Math.max(10, ownMs - maxWait / 2),
      `model queue busy: this caller's ${own} texts waiting are about ${Math.round(ownMs)} ms of work; ` +
        `the bound is ${maxWait} ms`,
    );
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

  #slotOf(urgent: boolean): Slot {
    return this.options.background === true && !urgent ? 'background' : 'main';
  }

  /** Whether some item waits for `slot`. */
  #waitsIn(slot: Slot): boolean {
    return this.#pending.some((entry) => this.#slotOf(entry.urgent) === slot);
  }

  /** Whether some item waits for a slot with no batch running. */
  #runnable(): boolean {
    return this.#pending.some((entry) => !this.#running.has(this.#slotOf(entry.urgent)));
  }

  /** `idle`: the work just submitted found no batch running and nothing waiting in its slot. */
  #schedule(idle = false): void {
    if (!this.#runnable()) return;
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

  /** Runs what waits now in each slot with no batch running, forgetting any wait that was due. */
  #flushNow(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    clearImmediate(this.#immediate);
    this.#immediate = undefined;
    // A batch serves every caller in it: it runs outside the trace of whichever request happened to start it.
    untraced(() => {
      void this.#flush('main');
      if (this.options.background === true) void this.#flush('background');
    });
  }

  /**
   * Items that run before the last of `count` new ones from `lane`, taking turns: up to `count` from each other
   * caller, and up to `count` from each of the caller's own waiting submissions.
   */
  #itemsAhead(count: number, lane: string): number {
    let ahead = 0;
    for (const [caller, submissions] of this.#lanes()) {
      if (caller === lane) for (const items of submissions) ahead += Math.min(items.length, count);
      else
        ahead += Math.min(
          submissions.reduce((sum, items) => sum + items.length, 0),
          count,
        );
    }
    return ahead;
  }

  /** Waiting items (for `slot`, else all) by caller, then by submission: queries first, then oldest first. */
  #lanes(slot?: Slot): Map<string, Pending<I, O>[][]> {
    const bySubmission = new Map<number, Pending<I, O>[]>();
    for (const entry of this.#pending) {
      if (slot !== undefined && this.#slotOf(entry.urgent) !== slot) continue;
      const items = bySubmission.get(entry.submission);
      if (items === undefined) bySubmission.set(entry.submission, [entry]);
      else items.push(entry);
    }
    const lanes = new Map<string, Pending<I, O>[][]>();
    for (const items of bySubmission.values()) {
      const lane = lanes.get(items[0]!.lane);
      if (lane === undefined) lanes.set(items[0]!.lane, [items]);
      else lane.push(items);
    }
    for (const submissions of lanes.values()) submissions.sort((a, b) => Number(b[0]!.urgent) - Number(a[0]!.urgent));
    return lanes;
  }

  /** A caller's items in the order it takes its turns: one of each of its submissions in turn. */
  static #interleave<T>(submissions: readonly (readonly T[])[]): T[] {
    const order: T[] = [];
    const longest = Math.max(...submissions.map((items) => items.length));
    for (let round = 0; round < longest; round++) {
      for (const items of submissions) if (round < items.length) order.push(items[round]!);
    }
    return order;
  }

  /**
   * Takes a batch within the token and item budgets (at least one item), one item per caller in turn: callers with a
   * query waiting first, then whoever's last batch is longest ago, then whoever's oldest item is oldest. Bulk items
   * stop at `maxBulkItems` while queries are being served (the batch is what the next query waits for).
   */
  #take(slot: Slot): Pending<I, O>[] {
    const batch: Pending<I, O>[] = [];
    let cost = 0;
    let bulk = 0;
    const maxBulk = this.#maxBulkItems();
    const rank = (items: readonly Pending<I, O>[]) => this.#servedIn.get(items[0]!.lane) ?? 0;
    const callers = [...this.#lanes(slot).values()]
      .map((submissions) => InferenceQueue.#interleave(submissions))
      .sort((a, b) => Number(b[0]!.urgent) - Number(a[0]!.urgent) || rank(a) - rank(b));
    const fits = (next: Pending<I, O>) =>
      batch.length < this.options.maxBatchItems &&
      (next.urgent || bulk < maxBulk || batch.length === 0) &&
      (batch.length === 0 || cost + next.cost <= this.options.maxBatchTokens);
    for (let round = 0, took = true; took; round++) {
      took = false;
      for (const items of callers) {
        const next = items[round];
        if (next === undefined || !fits(next)) continue;
        next.taken = true;
        cost += next.cost;
        if (!next.urgent) bulk++;
        batch.push(next);
        took = true;
      }
    }
    this.#batches++;
    for (const entry of batch) this.#servedIn.set(entry.lane, this.#batches);
    this.#forgetIdleLanes();
    this.#pending.splice(0, this.#pending.length, ...this.#pending.filter((entry) => !entry.taken));
    this.#pendingCost -= cost;
    return batch;
  }

  /**
   * `maxBulkItems` while a query came within `QUERIES_RECENT_MS`, else `maxBatchItems`; always `maxBatchItems` with a
   * background session, where no query waits for a bulk batch.
   */
  #maxBulkItems(): number {
    const serving = this.options.background !== true && performance.now() - this.#lastQueryAt < QUERIES_RECENT_MS;
    return serving ? (this.options.maxBulkItems ?? this.options.maxBatchItems) : this.options.maxBatchItems;
  }

  /** Bounds the turn records to the lanes with work waiting (or just taken): a caller gone is forgotten. */
  #forgetIdleLanes(): void {
    if (this.#servedIn.size <= 2 * this.options.maxBatchItems) return;
    const waiting = new Set(this.#pending.map((entry) => entry.lane));
    for (const lane of this.#servedIn.keys()) if (!waiting.has(lane)) this.#servedIn.delete(lane);
  }

  /**
   * The batch by length bucket, a bucket per model call, in the order they run: the bucket of the batch's first item
   * first (a query's, when one was taken), so a query does not wait for bulk work taken beside it.
   */
  static #buckets<I, O>(batch: readonly Pending<I, O>[]): Pending<I, O>[][] {
    const buckets = new Map<number, Pending<I, O>[]>();
    for (const entry of batch) {
      const bucket = buckets.get(entry.cost);
      if (bucket === undefined) buckets.set(entry.cost, [entry]);
      else bucket.push(entry);
    }
    return [...buckets.values()];
  }

  async #flush(slot: Slot): Promise<void> {
    if (this.#running.has(slot) || !this.#waitsIn(slot)) return;
    this.#running.add(slot);
    try {
      for (const bucket of InferenceQueue.#buckets(this.#take(slot))) await this.#runBucket(bucket, slot);
    } finally {
      this.#running.delete(slot);
      this.#schedule();
    }
  }

  /** Tells each submission with items in a finished bucket how many of its items are done, once per bucket. */
  static #report<I, O>(bucket: readonly Pending<I, O>[]): void {
    const tallies = new Set<Tally>();
    for (const { tally } of bucket) {
      if (tally === undefined) continue;
      tally.done++;
      tallies.add(tally);
    }
    for (const tally of tallies) tally.report(tally.done, tally.total);
  }

  /**
   * One span per submission in a finished bucket, in its request's trace (docs/operations.md "Tracing"): the model
   * call's time, the batch's size and padded length, and how long the submission's first item waited for it.
   */
  static #trace<I, O>(bucket: readonly Pending<I, O>[], slot: Slot, started: number): void {
    const spans = new Map<number, { trace: TraceContext; items: number; enqueuedAt: number }>();
    for (const { submission, trace, enqueuedAt } of bucket) {
      if (trace === undefined) continue;
      const span = spans.get(submission);
      if (span === undefined) spans.set(submission, { trace, items: 1, enqueuedAt });
      else span.items++;
    }
    for (const { trace, items, enqueuedAt } of spans.values()) {
      pastSpan('model.batch', trace, started, {
        'rcp.model.batch_size': bucket.length,
        'rcp.model.items': items,
        'rcp.model.padded_tokens': bucket[0]?.cost ?? 0,
        'rcp.model.queue_wait_ms': Math.round(started - enqueuedAt),
        'rcp.model.session': slot,
      });
    }
  }

  async #runBucket(bucket: readonly Pending<I, O>[], slot: Slot): Promise<void> {
    const started = performance.now();
    try {
      const outputs = await this.run(
        bucket.map((entry) => entry.item.input),
        slot === 'background',
      );
      bucket.forEach((entry, i) => entry.resolve(outputs[i] as O));
      InferenceQueue.#report(bucket);
      InferenceQueue.#trace(bucket, slot, started);
      const ms = performance.now() - started;
      this.onBatch?.(bucket.length, ms);
      const perItem = ms / bucket.length;
      this.#msPerItem = 0.8 * this.#msPerItem + 0.2 * perItem;
    } catch (error) {
      for (const entry of bucket) entry.reject(error);
    }
  }
}
