import type { Encoder, LateInteractionKernel } from '../models/index.js';

export type TokenEncoder = Required<Encoder>['embedTokens'];

/**
 * The `colbert` rerank stage (§7.5, §7.6): token vectors for the query and each passage from the encoder, then
 * MaxSim (Σ over query tokens of the best cosine against any passage token) through the kernel.
 */
export async function lateInteractionScores(
  embedTokens: TokenEncoder,
  kernel: LateInteractionKernel,
  query: string,
  passages: readonly string[],
  signal?: AbortSignal,
  caller?: string,
): Promise<Float32Array> {
  const [queryTokens, ...passageTokens] = await embedTokens([query, ...passages], undefined, signal, caller);
  if (queryTokens === undefined) return new Float32Array(0);
  return kernel.maxSim(queryTokens, passageTokens, signal);
}
