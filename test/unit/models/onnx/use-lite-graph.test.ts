import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_MODEL_PACKAGE, opByOpGraph } from '../../../../src/models/onnx/default-model.js';
import { ort } from '../../../../src/models/onnx/model-host.js';
import { denseFeeds, sparseFeeds } from '../../../../src/models/onnx/use-lite-feeds.js';
import { readTfGraph } from '../../../../src/models/onnx/tfjs-graph.js';
import { buildUseLiteGraph } from '../../../../src/models/onnx/use-lite-graph.js';

const DIMENSION = 512;

/** Rows of token ids: lengths 1 to 128, unknown tokens (id 0) inside, the longest not first. */
function rows(): number[][] {
  let seed = 7;
  const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31);
  return [5, 1, 128, 40, 17, 3, 96].map((length, r) =>
    Array.from({ length }, (_, i) => (r === 3 && i % 9 === 4 ? 0 : 6 + (next() % 7990))),
  );
}

function maxAbsoluteDifference(a: Float32Array, b: Float32Array): number {
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i]! - b[i]!));
  return worst;
}

describe('the USE-lite inference graph (dense input, fused operators) against the op-by-op TF conversion', () => {
  let reference: ort.InferenceSession;
  let fast: ort.InferenceSession;
  let int8: ort.InferenceSession;
  const batch = rows();

  beforeAll(async () => {
    const require = createRequire(import.meta.url);
    const source = join(dirname(require.resolve(`${DEFAULT_MODEL_PACKAGE}/package.json`)), 'dist');
    const graph = await readTfGraph(source);
    const options = { graphOptimizationLevel: 'all', intraOpNumThreads: 1 } as const;
    reference = await ort.InferenceSession.create(opByOpGraph(graph, 'test'), options);
    fast = await ort.InferenceSession.create(buildUseLiteGraph(graph, { producer: 'test' }), options);
    int8 = await ort.InferenceSession.create(buildUseLiteGraph(graph, { producer: 'test', quantize: 'int8' }), options);
  }, 60_000);

  afterAll(async () => {
    await Promise.all([reference, fast, int8].map((session) => session?.release()));
  });

  it('gives the same sentence vectors and token states for every row of a ragged batch', async () => {
    const expected = await reference.run(sparseFeeds(batch));
    const actual = await fast.run(denseFeeds(batch, true));
    expect(actual.embeddings!.dims).toEqual([batch.length, DIMENSION]);
    expect(
      maxAbsoluteDifference(actual.embeddings!.data as Float32Array, expected.embeddings!.data as Float32Array),
    ).toBeLessThan(1e-5);
    const time = actual.token_states!.dims[1]!;
    expect(expected.token_states!.dims[1]).toBe(time);
    const states = (result: ort.InferenceSession.OnnxValueMapType, r: number) =>
      (result.token_states!.data as Float32Array).subarray(
        r * time * DIMENSION,
        (r * time + batch[r]!.length) * DIMENSION,
      );
    // Only a row's own positions are defined (padding rows are never read); they are unnormalised, so 1e-4.
    batch.forEach((_, r) =>
      expect(maxAbsoluteDifference(states(actual, r), states(expected, r)), `row ${r}`).toBeLessThan(1e-4),
    );
  });

  it('computes token states only when asked, and the same sentence vectors either way', async () => {
    const without = await fast.run(denseFeeds(batch, false));
    const withStates = await fast.run(denseFeeds(batch, true));
    expect(without.token_states!.dims).toEqual([0, 0, DIMENSION]);
    expect(withStates.token_states!.dims).toEqual([batch.length, 128, DIMENSION]);
    expect(
      maxAbsoluteDifference(without.embeddings!.data as Float32Array, withStates.embeddings!.data as Float32Array),
    ).toBe(0);
  });

  it('gives a row the same vector alone as in a padded batch', async () => {
    const together = (await fast.run(denseFeeds(batch))).embeddings!.data as Float32Array;
    for (const [r, row] of batch.entries()) {
      const alone = (await fast.run(denseFeeds([row]))).embeddings!.data as Float32Array;
      expect(maxAbsoluteDifference(alone, together.subarray(r * DIMENSION, (r + 1) * DIMENSION))).toBeLessThan(1e-5);
    }
  });

  it('drops positions past 128 as the TF graph does', async () => {
    const long = Array.from({ length: 150 }, (_, i) => 6 + ((i * 37) % 7990));
    const clipped = await fast.run(denseFeeds([long.slice(0, 128)]));
    const full = await fast.run(denseFeeds([long]));
    expect(
      maxAbsoluteDifference(full.embeddings!.data as Float32Array, clipped.embeddings!.data as Float32Array),
    ).toBeLessThan(1e-6);
  });

  it('has an int8 variant whose vectors stay close to the float ones (cosine > 0.99), unit length', async () => {
    const exact = (await fast.run(denseFeeds(batch))).embeddings!.data as Float32Array;
    const quantized = (await int8.run(denseFeeds(batch))).embeddings!.data as Float32Array;
    for (let r = 0; r < batch.length; r++) {
      let dot = 0;
      let norm = 0;
      for (let j = 0; j < DIMENSION; j++) {
        dot += exact[r * DIMENSION + j]! * quantized[r * DIMENSION + j]!;
        norm += quantized[r * DIMENSION + j]! ** 2;
      }
      expect(dot, `row ${r}`).toBeGreaterThan(0.99);
      expect(Math.sqrt(norm)).toBeCloseTo(1, 5);
    }
  });
});
