import { Type } from '@sinclair/typebox';
import {
  FUSION_METHODS,
  MEMORY_SCOPES,
  MODALITIES,
  OneOf,
  RERANK_METHODS,
  RETRIEVE_MODES,
  SCORE_SCALES,
  SIMILARITIES,
  TRANSFORM_METHODS,
  UNITS,
} from './vocabulary.js';

/**
 * §6 the capability set a server advertises. Presence means supported and each value is an object of metadata
 * (possibly `{}`); what a value may hold is typed here, none of it required — a peer treats the metadata as
 * informational (§6.2) — and unknown keys, `x-<vendor>` ones included, are left open (§4.6).
 */
const Positive = () => Type.Integer({ minimum: 1 });
const ListOf = <T extends readonly string[]>(values: T) => Type.Optional(Type.Array(OneOf(values)));
const Strings = () => Type.Optional(Type.Array(Type.String()));
const Flag = () => Type.Optional(Type.Boolean());
const Modalities = () => ListOf(MODALITIES);

export const Capabilities = Type.Object({
  embed: Type.Optional(
    Type.Object({
      dimension: Type.Optional(Positive()),
      identity: Type.Optional(Type.String()),
      batchLimit: Type.Optional(Positive()),
      normalized: Flag(),
      modalities: Modalities(),
    }),
  ),
  sparseEmbed: Type.Optional(
    Type.Object({ identity: Type.Optional(Type.String()), vocabulary: Type.Optional(Positive()) }),
  ),
  multiVector: Type.Optional(
    Type.Object({
      dimension: Type.Optional(Positive()),
      identity: Type.Optional(Type.String()),
      similarity: Type.Optional(OneOf(SIMILARITIES)),
      modalities: Modalities(),
    }),
  ),
  rerank: Type.Optional(
    Type.Object({ methods: ListOf(RERANK_METHODS), maxCandidates: Type.Optional(Positive()), models: Strings() }),
  ),
  // §6.1
  retrieve: Type.Optional(
    Type.Object({
      maxK: Type.Optional(Positive()),
      modes: ListOf(RETRIEVE_MODES),
      modalities: Modalities(),
      fusion: ListOf(FUSION_METHODS),
      mmr: Flag(),
      rerankBuiltin: Flag(),
      // §7.7.1
      deterministic: Flag(),
      snapshots: Flag(),
      units: ListOf(UNITS),
      levels: Type.Optional(Positive()),
      tokenBudget: Flag(),
      confidence: Flag(),
      scoreScale: Type.Optional(OneOf(SCORE_SCALES)),
      scoreFloor: Type.Optional(Type.Number()),
      defaultMode: Type.Optional(OneOf(RETRIEVE_MODES)),
    }),
  ),
  transform: Type.Optional(Type.Object({ methods: ListOf(TRANSFORM_METHODS) })),
  // The §6 table types `ops` as `[str]`.
  graph: Type.Optional(Type.Object({ ops: Strings() })),
  index: Type.Optional(Type.Object({ writable: Flag(), chunking: Flag(), contextual: Flag() })),
  session: Type.Optional(Type.Object({ dedup: Flag(), ttlSeconds: Type.Optional(Type.Integer({ minimum: 0 })) })),
  feedback: Type.Optional(Type.Object({})),
  memory: Type.Optional(Type.Object({ scopes: ListOf(MEMORY_SCOPES), clues: Flag() })),
  // §8: fields as a list of names, or (SHOULD) an object mapping each name to its type.
  filter: Type.Optional(
    Type.Object({
      fields: Type.Optional(
        Type.Union([Type.Array(Type.String()), Type.Object({}, { additionalProperties: Type.String() })]),
      ),
      operators: Strings(),
    }),
  ),
  streaming: Type.Optional(Type.Object({})),
  pagination: Type.Optional(Type.Object({})),
  // A flag as well as the §6 object form: Appendix D writes `citations` as `true`.
  citations: Type.Optional(Type.Union([Type.Boolean(), Type.Object({})])),
  log: Type.Optional(Type.Object({ levels: Strings() })),
  catalog: Type.Optional(Type.Object({})),
});

/** §7.1 a peer's name and version. */
export const PeerInfo = Type.Object({ name: Type.String(), version: Type.Optional(Type.String()) });

/** §7.1, §7.2 the result of `initialize` and of `info`: the negotiated version, who answers, what it offers. */
export const InitializeResult = Type.Object({
  protocolVersion: Type.Integer({ minimum: 1 }),
  server: PeerInfo,
  capabilities: Capabilities,
});
