import { RpcError } from '../protocol/errors.js';
import type { JsonObject } from '../protocol/messages.js';
import type { MethodDefinition } from '../protocol/registry.js';
import { RerankParams } from '../protocol/schemas/params.js';
import type { BatchProgress } from '../models/index.js';
import type { ContentReader } from './content.js';
import { batchProgress } from './progress.js';

const DOCUMENTS_DEPRECATED =
  'rerank: `documents` is a deprecated name for `passages` (§7.6), accepted for one more release; send `passages`';

/** §6: `rerank.methods` ⊆ these. */
export type RerankMethod = 'cross-encoder' | 'colbert' | 'llm';

/**
 * One way to score passages against a query; higher is more relevant. `caller`: whose work it is — the model's queue
 * takes turns between callers (docs/architecture.md §10). `progress`: told as the passages' model batches finish.
 */
export type PassageScorer = (
  query: string,
  passages: readonly string[],
  signal: AbortSignal,
  caller?: string,
  progress?: BatchProgress,
) => Promise<Float32Array>;

export interface Reranker {
  readonly method: RerankMethod;
  /** Model identity, advertised in `rerank.models`. */
  readonly model: string;
  readonly score: PassageScorer;
}

export interface RerankLimits {
  /** Most passages per call; more is -32013 PayloadTooLarge, like embed.batchLimit. */
  readonly maxCandidates: number;
  readonly maxQueryChars: number;
  readonly content: ContentReader;
}

/**
 * `rerank` (§7.6): `scores[i]` belongs to `passages[i]`; `order` is best-first and cut to `topN`;
 * `x-rcp-server-results` repeats the ordering as `{index, score}` for clients that expect that shape (§6.2: a vendor
 * field). The first configured reranker is the default.
 *
 * Deprecated names (docs/protocol.md), kept for one release: `documents` is taken for `passages` (the upstream
 * harness sends it) and logged, and the ordering is also sent as `results` (the harness reads it).
 */
export function rerankMethod(
  rerankers: readonly Reranker[],
  limits: RerankLimits,
): [MethodDefinition<typeof RerankParams>, JsonObject] {
  const methods = rerankers.map((reranker) => reranker.method);
  const capability = {
    methods,
    maxCandidates: limits.maxCandidates,
    models: rerankers.map((reranker) => reranker.model),
  };
  const definition: MethodDefinition<typeof RerankParams> = {
    method: 'rerank',
    params: RerankParams,
    // §7.6: `method` MUST be in rerank.methods, else -32005.
    options: [{ path: 'method', supported: methods }],
    handler: async (params, ctx) => {
      const started = performance.now();
      const field = params.passages !== undefined ? 'passages' : 'documents';
      const candidates = params.passages ?? params.documents;
      if (candidates === undefined) throw RpcError.invalidParams('passages', 'required');
      if (field === 'documents') ctx.log('warning', DOCUMENTS_DEPRECATED);
      if (candidates.length > limits.maxCandidates) {
        throw RpcError.payloadTooLarge(
          `${candidates.length} passages exceed rerank.maxCandidates ${limits.maxCandidates}`,
          field,
        );
      }
      const reranker = rerankers.find((candidate) => candidate.method === (params.method ?? methods[0]));
      if (reranker === undefined) throw RpcError.optionUnsupported('method', params.method);
      if (params.model !== undefined && params.model !== reranker.model) {
        throw RpcError.optionUnsupported('model', params.model);
      }
      const query = await limits.content.query(params.query, limits.maxQueryChars, ctx.signal);
      const passages = await limits.content.texts(candidates, field, ctx.signal);
      // §9: a frame per model batch of passages scored (stage `rerank`).
      const progress = batchProgress(ctx, 'rerank', 'scored');
      const scores =
        passages.length === 0
          ? new Float32Array(0)
          : await reranker.score(query, passages, ctx.signal, ctx.caller, progress);
      const order = [...scores.keys()]
        .sort((a, b) => (scores[b] ?? 0) - (scores[a] ?? 0) || a - b)
        .slice(0, params.topN);
      const results = order.map((index) => ({ index, score: scores[index] }));
      return {
        scores: Array.from(scores),
        order,
        'x-rcp-server-results': results,
        results,
        // §17.2: per-request telemetry, as on retrieve.
        usage: {
          candidates: passages.length,
          reranked: passages.length,
          latencyMs: Math.round(performance.now() - started),
        },
      };
    },
  };
  return [definition, capability];
}
