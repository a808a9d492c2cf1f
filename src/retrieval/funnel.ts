import type { CorpusReader } from '../corpus/index.js';
import type { RequestContext } from '../protocol/context.js';
import { stage } from '../protocol/tracing.js';
import type { Scored } from './ranking.js';

/** A reranker as the funnel uses it: one score per passage, in order; higher is more relevant. */
export interface FunnelReranker {
  readonly method: string;
  readonly model: string;
  score(query: string, passages: readonly string[], signal: AbortSignal, caller?: string): Promise<Float32Array>;
}

export interface Reranked {
  readonly ranked: Scored[];
  /** How many candidates the reranker rescored (`usage.reranked`, §7.7). */
  readonly reranked: number;
}

/**
 * The rerank funnel (§3.3): the top topN rescored by the reranker (its score replaces the candidate's, and is kept
 * as `scores.rerank`); the rest keep their order behind them. Without a reranker, or with no candidates, the
 * ranking is returned as it is.
 */
export async function rerankFunnel(
  ranked: Scored[],
  reranker: FunnelReranker | undefined,
  topN: number,
  query: string,
  corpus: Pick<CorpusReader, 'getChunk'>,
  ctx: Pick<RequestContext, 'signal' | 'progress' | 'log' | 'caller'>,
): Promise<Reranked> {
  if (reranker === undefined || ranked.length === 0) return { ranked, reranked: 0 };
  const head = ranked.slice(0, topN);
  const texts = stage('store.read', { 'rcp.chunks': head.length }, () =>
    head.map((hit) => corpus.getChunk(hit.label)?.text ?? ''),
  );
  const scores = await reranker.score(query, texts, ctx.signal, ctx.caller);
  head.forEach((hit, i) => {
    hit.score = scores[i] ?? 0;
    hit.scores.rerank = hit.score;
  });
  head.sort((a, b) => b.score - a.score || a.label - b.label);
  const reranked = head.length;
  ctx.progress('rerank', 0.7, { message: `reranked ${reranked} with ${reranker.method}` });
  ctx.log('debug', `reranked ${reranked} with ${reranker.method}`, { model: reranker.model });
  return { ranked: [...head, ...ranked.slice(topN)], reranked };
}
