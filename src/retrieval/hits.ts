import { headingPathAt, pageAt, type ChunkBody, type ChunkPlace, type CorpusReader } from '../corpus/index.js';
import type { JsonObject } from '../protocol/messages.js';
import type { Unit } from './retrieve-options.js';
import type { Scored } from './ranking.js';
import { trustFor, type InjectionSettings } from './trust.js';

/** Hit ids, bodies and the §7.7 Hit object, built from a ranked chunk label. */
export type TrustLevel = 'trusted' | 'community' | 'untrusted';

/** A hit's id: the client's document id, and for a chunk its place in the document. */
export function idAt(place: ChunkPlace, unit: Unit): string {
  return unit === 'document' ? place.docId : `${place.docId}#${place.ordinal}`;
}

/** The id of a recalled label; '' only for a chunk deleted since (never emitted: such a hit is not built). */
export function hitId(corpus: Pick<CorpusReader, 'placeOf'>, label: number, unit: Unit): string {
  const place = corpus.placeOf(label);
  return place === undefined ? '' : idAt(place, unit);
}

/** The client's id of the document a label's chunk belongs to; '' for a chunk deleted since. */
export function documentIdOf(corpus: Pick<CorpusReader, 'placeOf'>, label: number): string {
  return corpus.placeOf(label)?.docId ?? '';
}

/** A hit's body: the chunk's text, or its whole document's for `unit: "document"` (§7.7.2). */
export function bodyOf(
  corpus: Pick<CorpusReader, 'getChunk' | 'getDocument'>,
  label: number,
  unit: Unit,
  chunk = corpus.getChunk(label),
): string {
  if (chunk === undefined) return '';
  return unit === 'document' ? (corpus.getDocument(chunk.docId)?.text ?? chunk.text) : chunk.text;
}

/**
 * §15.2: trust comes only from the operator's per-source configuration, and text a client wrote over the wire is
 * never `trusted` (at most `community`), whatever its claimed source; only operator-ingested text can be.
 */
export function trustOf(
  trust: Readonly<Record<string, TrustLevel>>,
  source: string,
  origin: 'client' | 'operator',
): TrustLevel {
  const level = (Object.hasOwn(trust, source) ? trust[source] : undefined) ?? 'untrusted';
  return level === 'trusted' && origin === 'client' ? 'community' : level;
}

export type HitCorpus = Pick<
  CorpusReader,
  'getChunk' | 'getDocument' | 'metaOf' | 'originOf' | 'vectorOf' | 'outlineOf' | 'screenOf'
>;

/** What a request asks of each hit's shape. */
export interface HitShape {
  readonly unit: Unit;
  readonly includeText?: boolean | undefined;
  readonly includeVectors?: boolean | undefined;
  readonly trust: Readonly<Record<string, TrustLevel>>;
  readonly injection: InjectionSettings;
}

/** The hit for a ranked chunk, or undefined when it has been deleted since recall. */
export function buildHit(corpus: HitCorpus, hit: Scored, shape: HitShape): JsonObject | undefined {
  const chunk = corpus.getChunk(hit.label);
  if (chunk === undefined) return undefined;
  const meta = corpus.metaOf(chunk.docId);
  const source = typeof meta.source === 'string' ? meta.source : chunk.docId;
  // What the hit is: its chunk, or for `unit: "document"` its whole document (§7.7.2), which the citation then names.
  const span = shape.unit === 'document' ? documentSpan(corpus, chunk) : chunk;
  const structure = structureOf(corpus, chunk.docId, span, meta);
  const body: JsonObject = {
    id: idAt(chunk, shape.unit),
    score: hit.score,
    unit: shape.unit,
    scores: hit.scores,
    meta,
    citation: citationOf(span, meta, source, structure.pages?.[0]),
    chunk: {
      docId: chunk.docId,
      index: chunk.ordinal,
      ...(chunk.context === '' ? {} : { context: chunk.context }),
      ...(structure.headings.length === 0 ? {} : { 'x-rcp-server-headings': structure.headings }),
      ...(structure.pages === undefined ? {} : { 'x-rcp-server-pages': structure.pages }),
    },
  };
  // The screen reads what the hit's body is: its chunk, or its whole document (§7.7.2).
  const document = shape.unit === 'document' ? corpus.getDocument(chunk.docId)?.text : undefined;
  const level = trustOf(shape.trust, source, corpus.originOf(chunk.docId));
  const text = shape.includeText === false ? undefined : (document ?? chunk.text);
  const trusted = trustFor(level, corpus.screenOf(chunk, document), shape.injection, text);
  body.trust = trusted.trust;
  if (trusted.text !== undefined) body.text = trusted.text;
  if (shape.includeVectors === true) body.vector = Array.from(corpus.vectorOf(hit.label) ?? []);
  return body;
}

interface Span {
  readonly start: number;
  readonly end: number;
  readonly text: string;
}

/** A whole document as a span of itself (a document deleted since: its chunk's span). */
function documentSpan(corpus: Pick<CorpusReader, 'getDocument'>, chunk: ChunkBody): Span {
  const text = corpus.getDocument(chunk.docId)?.text;
  return text === undefined ? chunk : { start: 0, end: text.length, text };
}

/**
 * Where a span lies in its document's structure (docs/documents.md): the headings above it and its first and last
 * page (a paginated document: one whose text has page breaks, or whose reader counted its `pages`). A span at the
 * start of its document with no form feed in it has nothing above it and one page, so its document is not read.
 */
function structureOf(
  corpus: Pick<CorpusReader, 'outlineOf'>,
  docId: string,
  span: Span,
  meta: Record<string, unknown>,
): { headings: string[]; pages?: [number, number] } {
  const counted = typeof meta.pages === 'number';
  if (span.start === 0 && !span.text.includes('\f')) return { headings: [], ...(counted ? { pages: [1, 1] } : {}) };
  const outline = corpus.outlineOf(docId);
  if (outline === undefined) return { headings: [] };
  const headings = headingPathAt(outline, span.start);
  if (!counted && outline.breaks.length === 0) return { headings };
  const first = pageAt(outline, span.start) ?? 1;
  return { headings, pages: [first, Math.max(first, pageAt(outline, span.end - 1) ?? 1)] };
}

/** §7.7 citation offsets (the chunk is a verbatim slice of its document), and its page in a paginated one. */
function citationOf(span: Span, meta: Record<string, unknown>, source: string, page: number | undefined): JsonObject {
  const citation: JsonObject = { source, start: span.start, end: span.end, ...(page === undefined ? {} : { page }) };
  if (typeof meta.title === 'string') citation.title = meta.title;
  if (typeof meta.uri === 'string') citation.uri = meta.uri;
  return citation;
}
