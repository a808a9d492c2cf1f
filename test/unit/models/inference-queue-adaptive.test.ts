import { describe, expect, it } from 'vitest';
import { InferenceQueue } from '../../../src/models/inference-queue.js';
import { RpcError } from '../../../src/protocol/errors.js';

/** A runner that records each model call's inputs (and when it began) and answers with the inputs doubled. */
function recorder(delayMs = 0) {
  const calls: number[][] = [];
  const startedAt: number[] = [];
  const run = async (inputs: readonly number[]) => {
    calls.push([...inputs]);
    startedAt.push(performance.now());
    await new Promise((resolve) => setTimeout(resolve, delayMs));
    return inputs.map((n) => n * 2);
  };
  return { calls, startedAt, run };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** A long collection window: any test that waited it out would show. */
const options = { maxWaitMs: 400, maxBatchTokens: 1024, maxBatchItems: 64, maxQueuedItems: 100 };
const one = (input: number) => [{ input, tokens: 4 }];

describe('inference queue: adaptive batching (waiting only pays when others are queued)', () => {
  it('a submission that finds the queue idle runs at once, not after maxWaitMs', async () => {
    const { calls, run } = recorder();
    const queue = new InferenceQueue(options, run);
    for (let i = 0; i < 5; i++) {
      const started = performance.now();
      await expect(queue.submit(one(i))).resolves.toEqual([2 * i]);
      expect(performance.now() - started).toBeLessThan(options.maxWaitMs / 2);
    }
    expect(calls).toEqual([[0], [1], [2], [3], [4]]);
  });

  it('submissions made in the same turn as the idle one still share its model call', async () => {
    const { calls, run } = recorder();
    const queue = new InferenceQueue(options, run);
    const started = performance.now();
    const answers = await Promise.all([queue.submit(one(1)), queue.submit(one(2)), queue.submit(one(3))]);
    expect(performance.now() - started).toBeLessThan(options.maxWaitMs / 2);
    expect(answers).toEqual([[2], [4], [6]]);
    expect(calls).toEqual([[1, 2, 3]]);
  });

  it('work that arrives while a batch runs waits up to maxWaitMs and rides one batch', async () => {
    const { calls, startedAt, run } = recorder(40);
    const queue = new InferenceQueue({ ...options, maxWaitMs: 120 }, run);
    const first = queue.submit(one(1)); // idle: runs at once
    await sleep(5);
    const queuedAt = performance.now();
    const second = queue.submit(one(2)); // a batch runs: collects
    await sleep(5);
    const third = queue.submit(one(3));
    await expect(Promise.all([first, second, third])).resolves.toEqual([[2], [4], [6]]);
    expect(calls).toEqual([[1], [2, 3]]);
    // The second batch waited out the window from its oldest item, though the first batch had ended long before.
    expect(startedAt[1]! - queuedAt).toBeGreaterThanOrEqual(100);
  });

  it('an idle submission cancelled in the same turn never reaches the model', async () => {
    const { calls, run } = recorder();
    const queue = new InferenceQueue(options, run);
    const controller = new AbortController();
    const cancelled = queue.submit(one(1), controller.signal);
    controller.abort(new Error('cancelled'));
    await expect(cancelled).rejects.toThrow('cancelled');
    await expect(queue.submit(one(2))).resolves.toEqual([4]);
    expect(calls).toEqual([[2]]);
    expect(queue.depth).toBe(0);
  });

  it('keeps its bounds: past maxQueuedItems is refused at once with -32011 while the idle work runs', async () => {
    const { run } = recorder(20);
    const queue = new InferenceQueue({ ...options, maxQueuedItems: 3 }, run);
    const admitted = queue.submit([...one(1), ...one(2), ...one(3)]);
    const refused = await queue.submit(one(4)).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(RpcError);
    expect((refused as RpcError).code).toBe(-32011);
    await expect(admitted).resolves.toEqual([2, 4, 6]);
  });

  it('a full batch still runs at once, and maxWaitMs 0 still runs synchronously', async () => {
    const { calls, run } = recorder();
    const queue = new InferenceQueue({ ...options, maxWaitMs: 0, maxBatchItems: 2 }, run);
    const answer = queue.submit([...one(1), ...one(2), ...one(3)]);
    expect(calls).toEqual([[1, 2]]); // taken before submit returned
    await expect(answer).resolves.toEqual([2, 4, 6]);
  });
});
