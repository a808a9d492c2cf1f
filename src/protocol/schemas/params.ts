import { Type, type Static } from '@sinclair/typebox';

/**
 * The params of every method this server serves past the lifecycle: one TypeBox declaration each, from which the
 * server's validator (ajv, through each method's definition), the typed client's types (`Static`), the gateway's
 * checks and docs/methods.md (scripts/method-docs.ts) all derive.
 */

/** §4.8 a Content block as a client sends it (methods/content.ts reads it; this server is text-only). */
export const ContentBlock = Type.Object({
  type: Type.String(),
  text: Type.Optional(Type.String()),
  mimeType: Type.Optional(Type.String()),
  data: Type.Optional(Type.String()),
  uri: Type.Optional(Type.String()),
});
export type ContentBlock = Static<typeof ContentBlock>;

/** §4.8 one text input: a bare string or a Content block (methods/content.ts reads its text). */
export const TextInput = Type.Union([Type.String(), ContentBlock]);
export type TextInput = Static<typeof TextInput>;

/** §15.5 option names and versions are short: a longer one is -32602 naming it (and is never echoed in a note). */
const OPTION = 64;

/** Option values are plain strings here, not enums: unsupported ones must reach the handler for §7.7's strict rule. */
export const RetrieveParams = Type.Object({
  query: Type.Union([Type.String(), ContentBlock, Type.Array(ContentBlock)]),
  k: Type.Integer({ minimum: 1 }),
  mode: Type.Optional(Type.String({ maxLength: OPTION })),
  modality: Type.Optional(Type.String({ maxLength: OPTION })),
  candidateK: Type.Optional(Type.Integer({ minimum: 1 })),
  fusion: Type.Optional(
    Type.Object({
      method: Type.Optional(Type.String({ maxLength: OPTION })),
      weights: Type.Optional(Type.Record(Type.String(), Type.Number({ minimum: 0 }), { maxProperties: 16 })),
      rrfK: Type.Optional(Type.Integer({ minimum: 1 })),
      alpha: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
    }),
  ),
  rerank: Type.Optional(
    Type.Union([
      Type.Object({
        method: Type.Optional(Type.String({ maxLength: OPTION })),
        model: Type.Optional(Type.String({ maxLength: 1024 })),
        topN: Type.Optional(Type.Integer({ minimum: 1 })),
      }),
      Type.Literal(false),
    ]),
  ),
  mmr: Type.Optional(Type.Object({ lambda: Type.Number({ minimum: 0, maximum: 1 }) })),
  rewrite: Type.Optional(Type.Union([Type.String({ maxLength: OPTION }), Type.Literal(false)])),
  // §8 a filter is an object, compiled by compileFilter; declared so, `filter: null` is absent (§4.6).
  filter: Type.Optional(Type.Object({})),
  minScore: Type.Optional(Type.Number()),
  recency: Type.Optional(
    Type.Object({ field: Type.String({ maxLength: 1024 }), halfLifeDays: Type.Number({ exclusiveMinimum: 0 }) }),
  ),
  unit: Type.Optional(Type.String({ maxLength: OPTION })),
  level: Type.Optional(Type.Integer({ minimum: 0 })),
  tokenBudget: Type.Optional(Type.Integer({ minimum: 1 })),
  sessionId: Type.Optional(Type.String({ maxLength: 256 })),
  includeText: Type.Optional(Type.Boolean()),
  includeVectors: Type.Optional(Type.Boolean()),
  encoding: Type.Optional(Type.String({ maxLength: OPTION })),
  seed: Type.Optional(Type.Integer()),
  indexVersion: Type.Optional(Type.String({ maxLength: OPTION })),
  strict: Type.Optional(Type.Boolean()),
  cursor: Type.Optional(Type.String({ maxLength: 4096 })),
});
export type RetrieveParams = Static<typeof RetrieveParams>;

/** §7.3 `embed`. */
export const EmbedParams = Type.Object({
  inputs: Type.Optional(Type.Array(TextInput)),
  /** §7.3: the legacy name, accepted as a synonym. */
  texts: Type.Optional(Type.Array(TextInput)),
  kind: Type.Optional(Type.Union([Type.Literal('query'), Type.Literal('document')])),
  encoding: Type.Optional(Type.String()),
});
export type EmbedParams = Static<typeof EmbedParams>;

/**
 * §7.5 `embed/multi`: the params of `embed` (§7.3), legacy `texts` included; `encoding` is accepted by the schema so
 * that a value outside `json` is -32005, not -32602 (methods/embed-multi.ts says why only `json` is served).
 */
export const EmbedMultiParams = EmbedParams;
export type EmbedMultiParams = Static<typeof EmbedMultiParams>;

/** §7.4 `embed/sparse`. */
export const EmbedSparseParams = Type.Object({
  texts: Type.Optional(Type.Array(TextInput)),
  /** Content blocks, as `embed` takes them (§7.3). */
  inputs: Type.Optional(Type.Array(TextInput)),
  kind: Type.Optional(Type.Union([Type.Literal('query'), Type.Literal('document')])),
});
export type EmbedSparseParams = Static<typeof EmbedSparseParams>;

/** §7.6 `rerank`. */
export const RerankParams = Type.Object({
  query: Type.Union([Type.String(), ContentBlock, Type.Array(ContentBlock)]),
  passages: Type.Optional(Type.Array(TextInput)),
  /** Deprecated (docs/protocol.md): taken for `passages`, which the upstream harness and some RAG clients send. */
  documents: Type.Optional(Type.Array(TextInput)),
  method: Type.Optional(Type.String()),
  model: Type.Optional(Type.String()),
  topN: Type.Optional(Type.Integer({ minimum: 1 })),
});
export type RerankParams = Static<typeof RerankParams>;

/** §15.5: ids are kept in memory and returned with every hit; 1,024 characters is far beyond any real id. */
const MAX_ID_CHARS = 1024;
const DocumentId = Type.String({ minLength: 1, maxLength: MAX_ID_CHARS });

/** §7.10 `index/add`. */
export const IndexAddParams = Type.Object({
  documents: Type.Array(
    Type.Object({
      id: Type.Optional(DocumentId),
      // §4.8: a document body may be a Content block (a file parsed as docs/documents.md says).
      text: Type.Union([Type.String(), ContentBlock]),
      meta: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    }),
  ),
  chunk: Type.Optional(Type.Boolean()),
  contextual: Type.Optional(Type.Boolean()),
});
export type IndexAddParams = Static<typeof IndexAddParams>;

/** §7.11 `index/delete`. */
export const IndexDeleteParams = Type.Object({ ids: Type.Array(Type.String({ maxLength: MAX_ID_CHARS })) });
export type IndexDeleteParams = Static<typeof IndexDeleteParams>;

/** §7.8 `query/transform`: `n` is bounded (§15.5: the fan-out of multi-query). */
export const MAX_QUERIES = 8;
export const TransformParams = Type.Object({
  query: Type.String({ minLength: 1 }),
  method: Type.String(),
  n: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_QUERIES })),
});
export type TransformParams = Static<typeof TransformParams>;

/** §7.16 one signal about a hit. */
const Signal = Type.Object({
  hitId: Type.Union([Type.String({ maxLength: MAX_ID_CHARS }), Type.Number()]),
  used: Type.Optional(Type.Boolean()),
  cited: Type.Optional(Type.Boolean()),
  helpful: Type.Optional(Type.Boolean()),
  reward: Type.Optional(Type.Number({ minimum: -1, maximum: 1 })),
  poisonSuspected: Type.Optional(Type.Boolean()),
  injectionSuspected: Type.Optional(Type.Boolean()),
});

/** §7.16 `feedback`. */
export const FeedbackParams = Type.Object({
  sessionId: Type.Optional(Type.String({ maxLength: 256 })),
  query: Type.Optional(Type.String()),
  signals: Type.Array(Signal),
});
export type FeedbackParams = Static<typeof FeedbackParams>;

/** §7.13 `catalog/list` (served by the gateway) takes none of its own. */
export const CatalogListParams = Type.Object({});

/** The params of each method served past the lifecycle, by name (docs/methods.md is rendered from it). */
export const PARAMS = {
  embed: EmbedParams,
  'embed/sparse': EmbedSparseParams,
  'embed/multi': EmbedMultiParams,
  rerank: RerankParams,
  retrieve: RetrieveParams,
  'query/transform': TransformParams,
  'index/add': IndexAddParams,
  'index/delete': IndexDeleteParams,
  'catalog/list': CatalogListParams,
  feedback: FeedbackParams,
} as const;
