import { Type } from '@sinclair/typebox';

/**
 * The closed vocabularies of RCP/1 as the spec writes them (§4.6: enums are lower-case strings, compared exactly).
 * These are the spec's sets, what a peer may say; what this server supports is each method's own, narrower list.
 */

/** §4.8 the coarse kinds of content. */
export const MODALITIES = ['text', 'image', 'audio', 'code', 'multimodal'] as const;

/** §4.8 the types of a Content block (code travels as a `text` block). */
export const CONTENT_TYPES = ['text', 'image', 'audio', 'blob'] as const;

/** §7.7.2 the granularities a hit can have. */
export const UNITS = [
  'chunk',
  'passage',
  'document',
  'node',
  'triplet',
  'path',
  'subgraph',
  'community',
  'tree-node',
  'page',
] as const;

/** §6.1 retrieval modes. */
export const RETRIEVE_MODES = ['dense', 'sparse', 'hybrid'] as const;

/** §6.1, §16.3 fusion strategies. */
export const FUSION_METHODS = ['rrf', 'weighted', 'convex'] as const;

/** §6.1 the scales of `Hit.score` a server may declare. */
export const SCORE_SCALES = ['cosine', 'dot', 'bm25', 'probability', 'unbounded'] as const;

/** §6 `rerank.methods` ⊆ these. */
export const RERANK_METHODS = ['cross-encoder', 'colbert', 'llm'] as const;

/** §6 `transform.methods` ⊆ these. */
export const TRANSFORM_METHODS = ['rewrite', 'hyde', 'multi-query', 'decompose', 'step-back'] as const;

/** §6 `multiVector.similarity`. */
export const SIMILARITIES = ['dot', 'cosine'] as const;

/** §6, §7.17 memory scopes. */
export const MEMORY_SCOPES = ['global', 'session'] as const;

/** §7.7, §15.2 trust levels of a hit. */
export const TRUST_LEVELS = ['trusted', 'community', 'untrusted'] as const;

/** §7.3.1 vector encodings on the wire. */
export const VECTOR_ENCODINGS = ['json', 'f32-base64'] as const;

/** §7.13, §16.1 how an engine is reached. */
export const TRANSPORTS = ['stdio', 'http'] as const;

/** A schema admitting exactly the strings of one vocabulary. */
export function OneOf<const T extends readonly string[]>(values: T) {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values] });
}
