import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { bucketLength, InferenceQueue } from '../../../src/models/inference-queue.js';
import { RpcError } from '../../../src/protocol/errors.js';
import { recorder } from '../../helpers/recorder.js';

const options = { maxWaitMs: 20, maxBatchTokens: 1024, maxBatchItems: 64, maxQueuedItems: 100 };
const items = (...lengths: number[]) => lengths.map((tokens, i) => ({ input: i, tokens }));

describe('inference queue (docs/architecture.md §10: batching, buckets, bound)', () => {
  it('rounds lengths up to power-of-two buckets from 8', () => {
    expect([1, 8, 9, 16, 17, 128, 129].map(bucketLength)).toEqual([8, 8, 16, 16, 32, 128, 256]);
  });

  it('collects concurrent submissions for maxWaitMs into one model call, taking turns, answering each in order', async () => {
    const { calls, run } = recorder();
    const queue = new InferenceQueue(options, run);
    const [a, b] = await Promise.all([queue.submit(items(5, 6)), queue.submit([{ input: 7, tokens: 3 }])]);
    expect(a).toEqual([0, 2]);
    expect(b).toEqual([14]);
    expect(calls).toEqual([[0, 7, 1]]);
  });

  it('§15.5 a one-item submission behind a large one rides the next batch, not the end of the line', async () => {
    const { calls, run } = recorder(10);
    const queue = new InferenceQueue({ ...options, maxWaitMs: 0, maxBatchItems: 4 }, run);
    const large = queue.submit(items(...Array.from({ length: 16 }, () => 1)));
    const small = queue.submit([{ input: 99, tokens: 1 }]);
    await Promise.all([large, small]);
    // The first batch was taken before the small one arrived; the second already carries it.
    expect(calls[1]).toContain(99);
    expect(calls).toHaveLength(5);
  });

  it('a submission leaves no abort listener on its signal once answered: a request may submit many times', async () => {
    const { run } = recorder();
    const queue = new InferenceQueue(options, run);
    const signal = new AbortController().signal;
    for (let i = 0; i < 12; i++) await queue.submit(items(4, 5), signal);
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
    const failing = new InferenceQueue(options, () => Promise.reject(new Error('model failed')));
    await expect(failing.submit(items(4), signal)).rejects.toThrow('model failed');
    await new Promise((resolve) => setImmediate(resolve));
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
  });

  it('splits a batch by length bucket so short texts are not padded to long ones', async () => {
    const { calls, run } = recorder();
    const queue = new InferenceQueue(options, run);
    await queue.submit(items(4, 100, 5, 120));
    expect(calls).toEqual([
      [0, 2],
      [1, 3],
    ]);
  });

  it('runs at once when the token budget fills, without waiting out maxWaitMs', async () => {
    const { calls, run } = recorder();
    const queue = new InferenceQueue({ ...options, maxWaitMs: 10_000, maxBatchTokens: 64 }, run);
    const started = performance.now();
    await queue.submit(items(32, 32));
    expect(performance.now() - started).toBeLessThan(1000);
    expect(calls).toHaveLength(1);
  });

  it('refuses work past maxQueuedItems with -32011 and a retryAfterMs, at once', async () => {
    const { run } = recorder(30);
    const queue = new InferenceQueue({ ...options, maxQueuedItems: 4 }, run);
    const admitted = queue.submit(items(1, 1, 1));
    const refused = await queue.submit(items(1, 1)).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(RpcError);
    expect((refused as RpcError).code).toBe(-32011);
    expect((refused as RpcError).data.retryAfterMs).toBeGreaterThan(0);
    await expect(admitted).resolves.toHaveLength(3);
  });

  it('refuses work that would wait behind more than maxQueueWaitMs, measured from real batches; an empty queue takes anything', async () => {
    const { run } = recorder(40);
    const queue = new InferenceQueue({ ...options, maxWaitMs: 0, maxBatchItems: 2, maxQueueWaitMs: 50 }, run);
    // Measure: one batch of 2 items in ~40 ms, so ~20 ms per item.
    await queue.submit(items(1, 1));
    // An empty queue takes a submission of any size; taking turns with its 10 waiting items (~200 ms), the next
    // large submission would wait past the bound and is refused at once.
    const big = queue.submit(items(...Array.from({ length: 12 }, () => 1)));
    const started = performance.now();
    const refused = await queue.submit(items(...Array.from({ length: 12 }, () => 1))).catch((error: unknown) => error);
    // At once: well before the first waiting batch (~40 ms) could have finished.
    expect(performance.now() - started).toBeLessThan(40);
    expect((refused as RpcError).code).toBe(-32011);
    expect((refused as RpcError).data.detail).toMatch(
      /model queue busy \(about \d+ ms of work ahead; the bound is 50 ms\)/,
    );
    expect((refused as RpcError).data.retryAfterMs).toBeGreaterThan(50);
    // A one-item submission waits for one item of each other submission only: it is taken.
    await expect(queue.submit(items(1))).resolves.toEqual([0]);
    await expect(big).resolves.toHaveLength(12);
  });

  it('withdraws queued items when their request is cancelled, rejecting with the abort reason', async () => {
    const { calls, run } = recorder();
    const queue = new InferenceQueue({ ...options, maxWaitMs: 50 }, run);
    const controller = new AbortController();
    const cancelled = queue.submit(items(1, 1), controller.signal);
    const kept = queue.submit([{ input: 9, tokens: 1 }]);
    controller.abort(new Error('cancelled'));
    await expect(cancelled).rejects.toThrow('cancelled');
    await expect(kept).resolves.toEqual([18]);
    expect(calls).toEqual([[9]]);
    expect(queue.depth).toBe(0);
  });

  it('rejects every item of a failed model call and keeps serving', async () => {
    let fail = true;
    const queue = new InferenceQueue({ ...options, maxWaitMs: 0 }, (inputs: readonly number[]) => {
      if (fail) {
        fail = false;
        return Promise.reject(RpcError.backendUnavailable('boom', 100));
      }
      return Promise.resolve(inputs.map((n) => n + 1));
    });
    await expect(queue.submit(items(1))).rejects.toMatchObject({ code: -32010 });
    await expect(queue.submit(items(1))).resolves.toEqual([1]);
  });

  it('§9 tells a submission once per model call that finished some of its items, counting them', async () => {
    const { calls, run } = recorder();
    const queue = new InferenceQueue({ ...options, maxWaitMs: 0, maxBatchItems: 3 }, run);
    const reports: [number, number][] = [];
    const other: [number, number][] = [];
    // Two length buckets in the first batch: two model calls, each reported apart.
    const outputs = queue.submit(items(4, 100, 4, 4, 4, 4, 4), undefined, {
      progress: (done, total) => reports.push([done, total]),
    });
    await Promise.all([outputs, queue.submit(items(4), undefined, { progress: (d, t) => other.push([d, t]) })]);
    // Seven items, three a batch, the long one in a call of its own: at least four calls, each reported once.
    expect(reports.length).toBeGreaterThanOrEqual(4);
    expect(reports.length).toBeLessThanOrEqual(calls.length);
    expect(reports.at(-1)).toEqual([7, 7]);
    expect(reports.map(([done]) => done)).toEqual([...reports.map(([done]) => done)].sort((a, b) => a - b));
    expect(other).toEqual([[1, 1]]);
  });

  it("§7.14 withdraws a cancelled submission's waiting items at once: the depth falls, nothing more runs for it", async () => {
    const { calls, run } = recorder(20);
    const queue = new InferenceQueue({ ...options, maxWaitMs: 0, maxBatchItems: 2 }, run);
    const controller = new AbortController();
    const reports: number[] = [];
    const submitted = queue.submit(items(...Array.from({ length: 20 }, () => 4)), controller.signal, {
      progress: (done) => {
        reports.push(done);
        controller.abort(RpcError.cancelled());
      },
    });
    await expect(submitted).rejects.toMatchObject({ code: -32006 });
    expect(queue.depth).toBe(0);
    await queue.submit(items(4));
    // The batch running at the cancel, the one after it (taken as the first ended), then only the new item's.
    expect(calls.flat().length).toBeLessThanOrEqual(5);
    expect(reports).toEqual([2]);
  });
});
