import type { Encoder, TokenMatrix } from '../backend/ports.js';

export type TokenEncoder = Required<Encoder>['embedTokens'];

/**
 * §7.5 MaxSim late interaction over an encoder's contextual token vectors:
 * score(Q, D) = Σ_q max_d cos(q, d). Vectors are L2-normalised per token first, so the similarity is cosine.
 */
export function maxSim(query: TokenMatrix, document: TokenMatrix): number {
  const { dimension } = query;
  let total = 0;
  for (let q = 0; q < query.rows; q++) {
    let best = -Infinity;
    for (let d = 0; d < document.rows; d++) {
      let dot = 0;
      for (let k = 0; k < dimension; k++)
        dot += (query.data[q * dimension + k] ?? 0) * (document.data[d * dimension + k] ?? 0);
      if (dot > best) best = dot;
    }
    total += best === -Infinity ? 0 : best;
  }
  return total;
}

export function normalizeRows(matrix: TokenMatrix): TokenMatrix {
  const { rows, dimension } = matrix;
  const data = new Float32Array(matrix.data);
  for (let r = 0; r < rows; r++) {
    let norm = 0;
    for (let k = 0; k < dimension; k++) norm += (data[r * dimension + k] ?? 0) ** 2;
    const scale = norm > 0 ? 1 / Math.sqrt(norm) : 0;
    for (let k = 0; k < dimension; k++) data[r * dimension + k] = (data[r * dimension + k] ?? 0) * scale;
  }
  return { rows, dimension, data };
}

/** Scores passages against a query by MaxSim over an encoder's token vectors. */
export async function lateInteractionScores(
  embedTokens: TokenEncoder,
  query: string,
  passages: readonly string[],
  signal?: AbortSignal,
): Promise<Float32Array> {
  const [queryTokens, ...passageTokens] = (await embedTokens([query, ...passages], undefined, signal)).map(
    normalizeRows,
  );
  if (queryTokens === undefined) return new Float32Array(0);
  return Float32Array.from(passageTokens, (tokens) => maxSim(queryTokens, tokens));
}
