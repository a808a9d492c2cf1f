import { headingPathAt, pageAt, withoutHidden, type CorpusReader } from '../corpus/index.js';
import type { Focus, Span } from './focus.js';
import { pageOfChunk, spanOf, unitId, type UnitCorpus } from './units.js';
import type { JsonObject } from '../protocol/messages.js';
import type { Unit } from './retrieve-options.js';
import type { Scored } from './ranking.js';
import { trustFor, type InjectionSettings } from './trust.js';

/** Hit ids, bodies and the §7.7 Hit object, built from a ranked chunk label. */
export type TrustLevel = 'trusted' | 'community' | 'untrusted';

/**
 * The id of a recalled label as a unit (units.ts); '' only for a chunk deleted since (never emitted: such a hit is
 * not built). A passage's window depends on the query, so a passage is named here by its chunk: what fusion, session
 * dedup (§7.7.3) and grouping compare; the hit itself carries its window's id.
 */
export function hitId(corpus: Pick<CorpusReader, 'placeOf' | 'getChunk' | 'outlineOf'>, label: number, unit: Unit) {
  if (unit === 'chunk' || unit === 'passage') return chunkId(corpus, label);
  const place = corpus.placeOf(label);
  if (place === undefined || unit === 'document') return place?.docId ?? '';
  const chunk = corpus.getChunk(label);
  return chunk === undefined ? '' : unitId(place, 'page', chunk, pageOfChunk(corpus, chunk));
}

/** The id of a recalled label's chunk (`doc#N`), from memory; '' for a chunk deleted since. */
export function chunkId(corpus: Pick<CorpusReader, 'placeOf'>, label: number): string {
  const place = corpus.placeOf(label);
  return place === undefined ? '' : unitId(place, 'chunk', {}, 1);
}

/** The client's id of the document a label's chunk belongs to; '' for a chunk deleted since. */
export function documentIdOf(corpus: Pick<CorpusReader, 'placeOf'>, label: number): string {
  return corpus.placeOf(label)?.docId ?? '';
}

/** A hit's body (§7.7.2): the text of the span its unit covers (units.ts). */
export function bodyOf(corpus: UnitCorpus, label: number, unit: Unit, focus?: Focus): string {
  const chunk = corpus.getChunk(label);
  return chunk === undefined ? '' : spanOf(corpus, chunk, unit, focus).text;
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

/**
 * The hit for a ranked chunk, or undefined when it has been deleted since recall. `focus`: where in it the query is
 * answered (focus.ts): the passage a `passage` hit is, and the quote its citation carries.
 */
export function buildHit(corpus: HitCorpus, hit: Scored, shape: HitShape, focus?: Focus): JsonObject | undefined {
  const chunk = corpus.getChunk(hit.label);
  if (chunk === undefined) return undefined;
  const meta = corpus.metaOf(chunk.docId);
  const source = typeof meta.source === 'string' ? meta.source : chunk.docId;
  const span = spanOf(corpus, chunk, shape.unit, focus);
  const structure = structureOf(corpus, chunk.docId, span, meta);
  const body: JsonObject = {
    id: unitId(chunk, shape.unit, span, structure.pages?.[0] ?? 1),
    score: hit.score,
    unit: shape.unit,
    // §7.7.2: the corpus is flat (no summaries above its chunks), so every hit is of the leaf level.
    level: 0,
    scores: hit.scores,
    meta,
    citation: citationOf(span, meta, source, structure.pages?.[0], quoteOf(focus, span, shape.injection)),
    chunk: {
      docId: chunk.docId,
      index: chunk.ordinal,
      ...(chunk.context === '' ? {} : { context: chunk.context }),
      ...(structure.headings.length === 0 ? {} : { 'x-rcp-server-headings': structure.headings }),
      ...(structure.pages === undefined ? {} : { 'x-rcp-server-pages': structure.pages }),
    },
  };
  // The screen reads what the hit's body is: its chunk (a passage lies within it), its page or its document.
  const whole = shape.unit === 'page' || shape.unit === 'document' ? span.text : undefined;
  const level = trustOf(shape.trust, source, corpus.originOf(chunk.docId));
  const text = shape.includeText === false ? undefined : span.text;
  const trusted = trustFor(level, corpus.screenOf(chunk, whole), shape.injection, text);
  body.trust = trusted.trust;
  if (trusted.text !== undefined) body.text = trusted.text;
  if (shape.includeVectors === true) body.vector = Array.from(corpus.vectorOf(hit.label) ?? []);
  return body;
}

/**
 * Where a span lies in its document's structure (docs/documents.md): the headings above it and its first and last
 * page (a paginated document: one whose text has page breaks, or whose reader counted its `pages`), from the
 * document's outline (kept in the outline cache).
 */
function structureOf(
  corpus: Pick<CorpusReader, 'outlineOf'>,
  docId: string,
  span: Span,
  meta: Record<string, unknown>,
): { headings: string[]; pages?: [number, number] } {
  const counted = typeof meta.pages === 'number';
  const outline = corpus.outlineOf(docId);
  if (outline === undefined) return { headings: [], ...(counted ? { pages: [1, 1] } : {}) };
  const headings = headingPathAt(outline, span.start);
  if (!counted && outline.breaks.length === 0) return { headings };
  const first = pageAt(outline, span.start) ?? 1;
  return { headings, pages: [first, Math.max(first, pageAt(outline, span.end - 1) ?? 1)] };
}

/**
 * The hit's quote: its focus's, when it lies within what the hit is (a passage's window is chosen apart from its
 * quote), without hidden characters when the hit's text is sanitized (docs/trust.md).
 */
function quoteOf(focus: Focus | undefined, span: Span, injection: InjectionSettings): Span | undefined {
  const quote = focus?.quote;
  if (quote === undefined || quote.start < span.start || quote.end > span.end) return undefined;
  return injection.sanitize ? { ...quote, text: withoutHidden(quote.text) } : quote;
}

/**
 * §7.7 citation offsets (the chunk is a verbatim slice of its document), its page in a paginated one, and the
 * sentence that best answers the query, under this server's name (§6.2: §7.7's citation has no quote).
 */
function citationOf(
  span: Span,
  meta: Record<string, unknown>,
  source: string,
  page: number | undefined,
  quote: Span | undefined,
): JsonObject {
  const citation: JsonObject = { source, start: span.start, end: span.end, ...(page === undefined ? {} : { page }) };
  if (quote !== undefined) citation['x-rcp-server-quote'] = { text: quote.text, start: quote.start, end: quote.end };
  if (typeof meta.title === 'string') citation.title = meta.title;
  if (typeof meta.uri === 'string') citation.uri = meta.uri;
  return citation;
}
