import type { CorpusReader } from '../corpus/index.js';
import { RpcError } from '../protocol/errors.js';
import type { JsonObject } from '../protocol/messages.js';
import type { MethodDefinition } from '../protocol/registry.js';
import { MAX_QUERIES, TransformParams } from '../protocol/schemas/params.js';

/**
 * `query/transform` (§7.8) with the methods that really run here, and only those advertised: `rewrite`
 * (normalisation and spelling-robust expansion from the corpus vocabulary) and `multi-query` (RM3-style
 * pseudo-relevance feedback). `hyde`, `decompose` and `step-back` need a language model: -32005. `n` is bounded
 * (§15.5: the fan-out of multi-query).
 */
export const TRANSFORM_METHODS = ['rewrite', 'multi-query'] as const;

export function transformMethod(
  corpus: CorpusReader,
  maxQueryChars: number,
): [MethodDefinition<typeof TransformParams>, JsonObject] {
  const definition: MethodDefinition<typeof TransformParams> = {
    method: 'query/transform',
    params: TransformParams,
    options: [{ path: 'method', supported: TRANSFORM_METHODS }],
    handler: async ({ query, method, n }, ctx) => {
      if (query.length > maxQueryChars) {
        throw RpcError.invalidParams('query', `${query.length} characters exceed the limit of ${maxQueryChars}`);
      }
      const transform = method as (typeof TRANSFORM_METHODS)[number];
      return { queries: await corpus.transformQuery(query, transform, n ?? 3, ctx.signal) };
    },
  };
  // §6.2: the bound on `n` is this server's, so a vendor field.
  return [definition, { methods: [...TRANSFORM_METHODS], 'x-rcp-server-maxQueries': MAX_QUERIES }];
}
