import type { BatchProgress, Encoder, LateInteractionKernel } from '../models/index.js';

export type TokenEncoder = Required<Encoder>['embedTokens'];

/**
 * The `colbert` rerank stage (§7.5, §7.6): token vectors for the query (kind 'query') and each passage (kind
 * 'document') from the encoder, then MaxSim (Σ over query tokens of the best cosine against any passage token)
 * through the kernel. The kinds are those a client passes to `embed/multi` to score the same way itself: an
 * asymmetric encoder's query and passage prefixes apply (docs/protocol.md). `progress` counts the passages embedded.
 */
export async function lateInteractionScores(
  embedTokens: TokenEncoder,
  kernel: LateInteractionKernel,
  query: string,
  passages: readonly string[],
  signal?: AbortSignal,
  caller?: string,
  progress?: BatchProgress,
): Promise<Float32Array> {
  const [[queryTokens], passageTokens] = await Promise.all([
    embedTokens([query], 'query', signal, caller),
    embedTokens(passages, 'document', signal, caller, progress),
  ]);
  if (queryTokens === undefined) return new Float32Array(0);
  return kernel.maxSim(queryTokens, passageTokens, signal);
}
