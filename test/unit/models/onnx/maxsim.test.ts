import { describe, expect, it } from 'vitest';
import { OnnxMaxSim } from '../../../../src/models/onnx/maxsim.js';
import type { TokenMatrix } from '../../../../src/models/index.js';

/** §7.5 MaxSim by its definition, in plain loops: Σ_q max_d cos(q, d). */
function reference(query: TokenMatrix, document: TokenMatrix): number {
  const row = (m: TokenMatrix, r: number) => m.data.subarray(r * m.dimension, (r + 1) * m.dimension);
  const cos = (a: Float32Array, b: Float32Array) =>
    a.reduce((s, v, k) => s + v * b[k]!, 0) / (Math.hypot(...a) * Math.hypot(...b));
  let total = 0;
  for (let q = 0; q < query.rows; q++) {
    let best = -Infinity;
    for (let d = 0; d < document.rows; d++) best = Math.max(best, cos(row(query, q), row(document, d)));
    total += best;
  }
  return total;
}

let seed = 7;
const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * 2 - 1;
const matrix = (rows: number, dimension = 16): TokenMatrix => ({
  rows,
  dimension,
  data: Float32Array.from({ length: rows * dimension }, random),
});

describe('late-interaction kernel (ONNX MaxSim)', () => {
  const kernel = new OnnxMaxSim(1);

  it('matches the definition for documents of different lengths (padding masked out)', async () => {
    const query = matrix(5);
    const documents = [matrix(1), matrix(9), matrix(3), matrix(17)];
    const scores = await kernel.maxSim(query, documents);
    documents.forEach((document, i) => expect(scores[i]).toBeCloseTo(reference(query, document), 4));
  });

  it('scores a document identical to the query at the maximum: one per query token', async () => {
    const query = matrix(6);
    const [score] = await kernel.maxSim(query, [query]);
    expect(score).toBeCloseTo(6, 4);
  });

  it('handles more documents than one runtime call takes, in order', async () => {
    const query = matrix(3);
    const documents = Array.from({ length: 150 }, (_, i) => matrix(1 + (i % 7)));
    const scores = await kernel.maxSim(query, documents);
    expect(scores).toHaveLength(150);
    for (const i of [0, 63, 64, 127, 128, 149]) expect(scores[i]).toBeCloseTo(reference(query, documents[i]!), 4);
  });

  it('stops between runtime calls when the request is cancelled', async () => {
    const controller = new AbortController();
    controller.abort(new Error('cancelled'));
    await expect(kernel.maxSim(matrix(2), [matrix(2)], controller.signal)).rejects.toThrow('cancelled');
    await kernel.close();
  });
});
