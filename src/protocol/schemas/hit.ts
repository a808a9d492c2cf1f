import { Type, type Static } from '@sinclair/typebox';
import { CONTENT_TYPES, MODALITIES, OneOf, TRUST_LEVELS, UNITS } from './vocabulary.js';

/**
 * §4.8 a Content block as a server emits it (in `Hit.content`). A `text` block carries `text`; any other type names
 * its `mimeType` and carries its body inline as base64 `data` or by reference as a `uri` — exactly one of the two.
 * No block carries both.
 */
const NOT_BOTH_BODIES = { not: { required: ['data', 'uri'] } };
const BlockBody = {
  text: Type.Optional(Type.String()),
  mimeType: Type.Optional(Type.String()),
  data: Type.Optional(Type.String({ contentEncoding: 'base64' })),
  // Appendix H: uris follow RFC 3986.
  uri: Type.Optional(Type.String({ format: 'uri' })),
};
const TextBlock = Type.Object({ ...BlockBody, type: Type.Literal('text'), text: Type.String() }, NOT_BOTH_BODIES);
const MediaBlock = Type.Object(
  { ...BlockBody, type: OneOf(CONTENT_TYPES.filter((type) => type !== 'text')), mimeType: Type.String() },
  { anyOf: [{ required: ['data'] }, { required: ['uri'] }], ...NOT_BOTH_BODIES },
);
export const Content = Type.Union([TextBlock, MediaBlock]);

/** §7.7 where a hit came from; every member optional (Appendix D cites by `uri` and `title` alone). */
const Citation = Type.Object({
  source: Type.Optional(Type.String()),
  uri: Type.Optional(Type.String()),
  title: Type.Optional(Type.String()),
  start: Type.Optional(Type.Integer()),
  end: Type.Optional(Type.Integer()),
  page: Type.Optional(Type.Integer()),
});

/** §7.7.2 the graph or tree lineage behind a hit. */
const Provenance = Type.Object({
  path: Type.Optional(Type.Array(Type.String())),
  nodes: Type.Optional(Type.Array(Type.String())),
  edges: Type.Optional(Type.Array(Type.Object({ src: Type.String(), dst: Type.String() }))),
  leaves: Type.Optional(Type.Array(Type.String())),
});

/** A number in [0,1]: §4.6 `trust.score`, §7.7.2 `confidence` — the two normalised signals. */
const Unit = () => Type.Number({ minimum: 0, maximum: 1 });

/** §7.7, §15.2 provenance and safety signals; a level is what a trust object is for. */
const Trust = Type.Object({
  level: OneOf(TRUST_LEVELS),
  score: Type.Optional(Unit()),
  injectionSuspected: Type.Optional(Type.Boolean()),
  sanitized: Type.Optional(Type.Boolean()),
});

/**
 * §7.7 a Hit: an id in the server's identifier space and a score on its own scale (§4.6), everything else optional.
 * `vector` is JSON numbers: hit vectors in another encoding are not defined by §7.7's Hit.
 */
export const Hit = Type.Object({
  id: Type.Union([Type.String(), Type.Number()]),
  score: Type.Number(),
  confidence: Type.Optional(Unit()),
  text: Type.Optional(Type.String()),
  content: Type.Optional(Type.Array(Content)),
  modality: Type.Optional(OneOf(MODALITIES)),
  unit: Type.Optional(OneOf(UNITS)),
  // §7.7.2: level 0 is the leaf layer; higher levels are more summarised.
  level: Type.Optional(Type.Integer({ minimum: 0 })),
  // Open objects typed as records: `Static` would make them `{}`, which no reader could index.
  meta: Type.Optional(Type.Unsafe<Record<string, unknown>>(Type.Object({}))),
  vector: Type.Optional(Type.Array(Type.Number())),
  scores: Type.Optional(Type.Unsafe<Record<string, number>>(Type.Object({}, { additionalProperties: Type.Number() }))),
  citation: Type.Optional(Citation),
  provenance: Type.Optional(Provenance),
  trust: Type.Optional(Trust),
  // §7.7: the chunk a hit is, within its document.
  chunk: Type.Optional(
    Type.Object({
      docId: Type.Optional(Type.String()),
      index: Type.Optional(Type.Integer()),
      // Also `x-rcp-server-headings` and `x-rcp-server-pages` (docs/documents.md): §6.2 extension fields, which this
      // schema leaves unconstrained, as §4.6 has peers accept any field they do not know.
      context: Type.Optional(Type.String()),
    }),
  ),
});
export type Hit = Static<typeof Hit>;
