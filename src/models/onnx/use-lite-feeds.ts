import * as ort from 'onnxruntime-node';

/**
 * The default encoder's inputs, from rows of token ids (already clipped by the caller): what the encoder, its tests
 * and the benches all feed the model.
 */

/**
 * The graph built by this version (use-lite-graph.ts): `ids` [batch, time] padded with 0, each row's length, and
 * whether to compute `token_states` (a sixth of the work).
 */
export function denseFeeds(rows: readonly (readonly number[])[], withTokenStates = false): Record<string, ort.Tensor> {
  const time = Math.max(1, ...rows.map((row) => row.length));
  const ids = new Int32Array(rows.length * time);
  rows.forEach((row, r) => ids.set(row, r * time));
  const lengths = Int32Array.from(rows, (row) => row.length);
  return {
    ids: new ort.Tensor('int32', ids, [rows.length, time]),
    lengths: new ort.Tensor('int32', lengths, [rows.length]),
    with_token_states: new ort.Tensor('bool', [withTokenStates], []),
  };
}

/** A directory built before converter v2 (the op-by-op graph): `indices` = [row, position] pairs, `values` = ids. */
export function sparseFeeds(rows: readonly (readonly number[])[]): Record<string, ort.Tensor> {
  const count = rows.reduce((sum, row) => sum + row.length, 0);
  const indices = new Int32Array(count * 2);
  const values = new Int32Array(count);
  let at = 0;
  rows.forEach((row, r) => {
    row.forEach((id, position) => {
      indices[at * 2] = r;
      indices[at * 2 + 1] = position;
      values[at] = id;
      at += 1;
    });
  });
  return { indices: new ort.Tensor('int32', indices, [count, 2]), values: new ort.Tensor('int32', values, [count]) };
}
