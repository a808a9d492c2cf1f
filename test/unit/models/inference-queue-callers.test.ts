import { describe, expect, it } from 'vitest';
import { InferenceQueue } from '../../../src/models/inference-queue.js';
import { recorder } from '../../helpers/recorder.js';

const options = { maxWaitMs: 0, maxBatchTokens: 100_000, maxBatchItems: 4, maxQueuedItems: 1000 };
/** `count` texts of `tokens` tokens, numbered from `first`. */
const texts = (first: number, count: number, tokens = 100) =>
  Array.from({ length: count }, (_, i) => ({ input: first + i, tokens }));
const QUERY = 9999;
/** Which model call (0-based) carried `input`. */
const callOf = (calls: number[][], input: number) => calls.findIndex((call) => call.includes(input));

describe('inference queue: callers take turns, queries go first (§15.5, docs/architecture.md §10)', () => {
  it("caller B's query runs after at most one batch of caller A's bulk work, however many requests A has waiting", async () => {
    const { calls, run } = recorder(5);
    const queue = new InferenceQueue(options, run);
    // A floods: 8 requests of 8 texts each, all waiting at once (16 batches of 4).
    const bulk = Array.from({ length: 8 }, (_, i) =>
      queue.submit(texts(100 * i, 8), undefined, { caller: 'a', urgent: false }),
    );
    // The first batch of A's is taken and runs; then B's one query arrives.
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toHaveLength(1);
    const query = queue.submit(texts(QUERY, 1, 5), undefined, { caller: 'b', urgent: true });
    await Promise.all([...bulk, query]);
    // It rides the very next batch (a model call of its own: its length bucket runs first), not the end of A's line.
    expect(callOf(calls, QUERY)).toBe(1);
    expect(calls[1]).toEqual([QUERY]);
  });

  it("caller B's bulk text rides the next batch beside 8 of A's requests: callers take turns, not requests", async () => {
    const { calls, run } = recorder(5);
    const queue = new InferenceQueue(options, run);
    const bulk = Array.from({ length: 8 }, (_, i) => queue.submit(texts(100 * i, 8), undefined, { caller: 'a' }));
    await new Promise((resolve) => setImmediate(resolve));
    const other = queue.submit(texts(QUERY, 1), undefined, { caller: 'b' });
    await Promise.all([...bulk, other]);
    expect(callOf(calls, QUERY)).toBe(1);
  });

  it("a caller's own query goes ahead of its own bulk work", async () => {
    const { calls, run } = recorder(5);
    const queue = new InferenceQueue(options, run);
    const bulk = Array.from({ length: 8 }, (_, i) => queue.submit(texts(100 * i, 8), undefined, { caller: 'a' }));
    await new Promise((resolve) => setImmediate(resolve));
    const query = queue.submit(texts(QUERY, 1, 5), undefined, { caller: 'a', urgent: true });
    await Promise.all([...bulk, query]);
    expect(callOf(calls, QUERY)).toBe(1);
  });

  it('every item is answered, in order, for each caller, whichever batch carried it', async () => {
    const { run } = recorder(1);
    const queue = new InferenceQueue(options, run);
    const answers = await Promise.all([
      queue.submit(texts(0, 9), undefined, { caller: 'a' }),
      queue.submit(texts(20, 3), undefined, { caller: 'b', urgent: true }),
      queue.submit(texts(40, 5)),
      queue.submit(texts(60, 2), undefined, { caller: 'a', urgent: true }),
    ]);
    expect(answers).toEqual([
      texts(0, 9).map(({ input }) => 2 * input),
      texts(20, 3).map(({ input }) => 2 * input),
      texts(40, 5).map(({ input }) => 2 * input),
      texts(60, 2).map(({ input }) => 2 * input),
    ]);
    expect(queue.depth).toBe(0);
  });
});

describe('inference queue: bulk batches while queries are served (docs/architecture.md §10)', () => {
  it('after a query, bulk batches carry at most maxBulkItems texts, so the next query waits for a short one', async () => {
    const { calls, run } = recorder(5);
    const queue = new InferenceQueue({ ...options, maxBatchItems: 16, maxBulkItems: 4 }, run);
    // With no query about, bulk fills its batches.
    await queue.submit(texts(0, 16), undefined, { caller: 'a' });
    expect(calls.map((call) => call.length)).toEqual([16]);
    // A query: from then on A's bulk runs 4 texts a batch, and B's next query waits behind one of those.
    await queue.submit(texts(QUERY, 1, 5), undefined, { caller: 'b', urgent: true });
    const bulk = queue.submit(texts(100, 16), undefined, { caller: 'a' });
    await new Promise((resolve) => setImmediate(resolve));
    const query = queue.submit(texts(QUERY + 1, 1, 5), undefined, { caller: 'b', urgent: true });
    await Promise.all([bulk, query]);
    const after = calls.slice(2);
    expect(after[0]).toHaveLength(4);
    expect(after[1]).toEqual([QUERY + 1]);
    expect(Math.max(...after.map((call) => call.length))).toBeLessThanOrEqual(4);
  });
});

describe('inference queue: a background session for bulk work (docs/architecture.md §10)', () => {
  it('a query runs in the main session while a bulk batch still runs in the background one, and bulk fills its batches', async () => {
    const calls: { inputs: number[]; background: boolean }[] = [];
    let release = (): void => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const run = async (inputs: readonly number[], background: boolean) => {
      calls.push({ inputs: [...inputs], background });
      if (background) await held;
      return inputs.map((n) => n * 2);
    };
    const queue = new InferenceQueue({ ...options, maxBatchItems: 16, maxBulkItems: 4, background: true }, run);
    // A query came: with one session, bulk batches would now be held to maxBulkItems.
    await queue.submit(texts(QUERY + 1, 1, 5), undefined, { caller: 'b', urgent: true });
    const bulk = queue.submit(texts(0, 16), undefined, { caller: 'a' });
    await new Promise((resolve) => setImmediate(resolve));
    // Answered while A's bulk batch has not ended (with one session this would wait for it: the test would hang).
    await expect(queue.submit(texts(QUERY, 1, 5), undefined, { caller: 'b', urgent: true })).resolves.toEqual([
      2 * QUERY,
    ]);
    expect(calls.map(({ inputs, background }) => [inputs.length, background])).toEqual([
      [1, false],
      [16, true],
      [1, false],
    ]);
    release();
    await expect(bulk).resolves.toHaveLength(16);
  });
});

describe("inference queue: a caller's share (§15.5)", () => {
  it('a write of a caller whose own waiting texts are past maxQueueWaitMs is refused before it is chunked; its queries and other callers are taken', async () => {
    const { run } = recorder(40);
    const queue = new InferenceQueue({ ...options, maxBatchItems: 2, maxQueueWaitMs: 50 }, run);
    // Measure: a batch of 2 in ~40 ms, ~20 ms a text. Then A's 12 texts: 2 run, 10 wait (~200 ms of work).
    await queue.submit(texts(0, 2), undefined, { caller: 'a' });
    const bulk = queue.submit(texts(10, 12), undefined, { caller: 'a' });
    // Asked before a write chunks its documents: A's share is spent, B's is not.
    const refusal = queue.refusal('a');
    expect(refusal?.code).toBe(-32011);
    expect(refusal?.data.detail).toMatch(/this caller's 10 texts waiting are about \d+ ms of work; the bound is 50 ms/);
    expect(refusal?.data.retryAfterMs).toBeGreaterThan(0);
    expect(queue.refusal('b')).toBeUndefined();
    // A's query and B's text are taken meanwhile.
    const query = queue.submit(texts(QUERY, 1, 5), undefined, { caller: 'a', urgent: true });
    const other = queue.submit(texts(40, 1), undefined, { caller: 'b' });
    await expect(Promise.all([bulk, query, other])).resolves.toHaveLength(3);
    expect(queue.refusal('a')).toBeUndefined();
  });
});
