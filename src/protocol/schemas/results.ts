import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { isCoreMethod, isVendorMethod, type CoreMethod } from '../method-table.js';
import { Capabilities, InitializeResult, PeerInfo } from './capabilities.js';
import { Hit } from './hit.js';
import { OneOf, TRANSPORTS, VECTOR_ENCODINGS } from './vocabulary.js';

/**
 * §7: the result of each RCP method. Every result is an object that may carry `_meta` (§4.4) and members a later
 * revision adds (§4.6), so none is closed.
 */
const Count = () => Type.Integer({ minimum: 0 });
const Id = () => Type.Union([Type.String(), Type.Number()]);

/**
 * §7.3, §7.3.1: one vector per input, as JSON numbers or, under a binary encoding, one base64 string each; the
 * encoding used is echoed, and with `f32-base64` the `dimension` each blob decodes to MUST be present.
 */
const EmbedResult = Type.Object(
  {
    vectors: Type.Array(Type.Union([Type.Array(Type.Number()), Type.String({ contentEncoding: 'base64' })])),
    encoding: Type.Optional(OneOf(VECTOR_ENCODINGS)),
    dimension: Type.Optional(Type.Integer({ minimum: 1 })),
  },
  {
    if: { properties: { encoding: { const: 'f32-base64' } }, required: ['encoding'] },
    then: { required: ['dimension'] },
  },
);

/** §7.4 term→weight vectors over the model vocabulary. */
const SparseEmbedResult = Type.Object({
  sparse: Type.Array(Type.Object({ indices: Type.Array(Type.Integer()), values: Type.Array(Type.Number()) })),
});

/** §7.5 one matrix per input. */
const MultiVectorResult = Type.Object({
  matrices: Type.Array(Type.Array(Type.Array(Type.Number()))),
  dimension: Type.Optional(Type.Integer({ minimum: 1 })),
});

/** §7.6 `scores[i]` for `passages[i]`; `order` the indices best first. */
const RerankResult = Type.Object({
  scores: Type.Array(Type.Number()),
  order: Type.Optional(Type.Array(Type.Integer())),
});

/** §7.7 ranked hits; `usage` is advisory telemetry (§17.2). */
const RetrieveResult = Type.Object({
  hits: Type.Array(Hit),
  nextCursor: Type.Optional(Type.String()),
  indexVersion: Type.Optional(Type.String()),
  // An open object typed as a record (as hit.ts `meta`): `Static` would make it `{}`, which no reader could index.
  usage: Type.Optional(Type.Unsafe<Record<string, unknown>>(Type.Object({}))),
  rewrittenQuery: Type.Optional(Type.String()),
});

/** §7.8 the transformed queries; `hyde` adds a hypothetical document. */
const TransformResult = Type.Object({
  queries: Type.Array(Type.String()),
  hypothetical: Type.Optional(Type.String()),
});

/**
 * §7.9 op-specific: `local`/`drift` answer hits, `global`/`communities` communities, `neighbors` nodes (and edges);
 * a result has at least one of the three.
 */
const GraphResult = Type.Object(
  {
    hits: Type.Optional(Type.Array(Hit)),
    followups: Type.Optional(Type.Array(Type.String())),
    summary: Type.Optional(Type.String()),
    communities: Type.Optional(
      Type.Array(
        Type.Object({
          id: Id(),
          summary: Type.Optional(Type.String()),
          score: Type.Optional(Type.Number()),
          level: Type.Optional(Count()),
        }),
      ),
    ),
    nodes: Type.Optional(Type.Array(Type.Object({ id: Id(), score: Type.Optional(Type.Number()) }))),
    edges: Type.Optional(Type.Array(Type.Object({ src: Id(), dst: Id(), weight: Type.Optional(Type.Number()) }))),
    // §10: `communities` is a list result and may page.
    nextCursor: Type.Optional(Type.String()),
    usage: Type.Optional(Type.Object({})),
    _meta: Type.Optional(Type.Object({})),
  },
  { anyOf: [{ required: ['hits'] }, { required: ['communities'] }, { required: ['nodes'] }] },
);

/** §7.10 one id per input document, in input order. */
const IndexAddResult = Type.Object({ ids: Type.Array(Type.String()), chunks: Type.Optional(Type.Integer()) });

/** §7.11 how many documents this call removed. */
const IndexDeleteResult = Type.Object({ deleted: Count() });

/** §7.13 each engine mirrors an initialize result, with an endpoint when the aggregator exposes one. */
const CatalogListResult = Type.Object({
  engines: Type.Array(
    Type.Object({
      id: Type.String(),
      server: PeerInfo,
      capabilities: Capabilities,
      endpoint: Type.Optional(
        Type.Object({
          transport: OneOf(TRANSPORTS),
          url: Type.Optional(Type.String()),
          // §16.1: a stdio engine is launched by its command line.
          command: Type.Optional(Type.Array(Type.String())),
        }),
      ),
    }),
  ),
});

/** §7.15 the nonce echoed, when one was sent. */
const PingResult = Type.Object({ nonce: Type.Optional(Type.Union([Type.String(), Type.Number()])) });

/** §7.16 how many signals were recorded. */
const FeedbackResult = Type.Object({ accepted: Count() });

/** §7.17 */
const MemoryBuildResult = Type.Object({ memoryId: Type.String(), tokens: Type.Optional(Count()) });
const MemoryRecallResult = Type.Object({
  clues: Type.Array(
    Type.Object({
      query: Type.Optional(Type.String()),
      seedIds: Type.Optional(Type.Array(Type.String())),
      weight: Type.Optional(Type.Number()),
    }),
  ),
  hits: Type.Optional(Type.Array(Hit)),
});

/** §7.12 `shutdown` answers `{}`; any object, as every result may carry more (§4.6). */
const AnyResult = Type.Object({});

/**
 * The result schema of every RCP method (§7), one entry per method of the method table: what tests check every
 * answer against, and, through `ResultOf`, the typed client's result types.
 */
export const RESULTS = {
  initialize: InitializeResult,
  info: InitializeResult,
  ping: PingResult,
  shutdown: AnyResult,
  embed: EmbedResult,
  'embed/sparse': SparseEmbedResult,
  'embed/multi': MultiVectorResult,
  rerank: RerankResult,
  retrieve: RetrieveResult,
  'query/transform': TransformResult,
  graph: GraphResult,
  'index/add': IndexAddResult,
  'index/delete': IndexDeleteResult,
  'catalog/list': CatalogListResult,
  feedback: FeedbackResult,
  'memory/build': MemoryBuildResult,
  'memory/recall': MemoryRecallResult,
} as const satisfies Readonly<Record<CoreMethod, TSchema>>;

/** The TypeScript type of `method`'s result, derived from its schema. */
export type ResultOf<M extends CoreMethod> = Static<(typeof RESULTS)[M]>;

/**
 * The schema of `method`'s result: its §7 shape, any object for an `x-<vendor>/` method (§6.2), undefined for a
 * name RCP does not define (no result can answer it: §12 -32004).
 */
export function resultSchemaFor(method: string): TSchema | undefined {
  if (isCoreMethod(method)) return RESULTS[method];
  return isVendorMethod(method) ? AnyResult : undefined;
}
