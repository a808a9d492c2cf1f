import { pageAt, type ChunkBody, type ChunkPlace, type CorpusReader } from '../corpus/index.js';
import type { Focus, Span } from './focus.js';
import type { Unit } from './retrieve-options.js';

/**
 * §7.7.2 the units a hit can be, each a span of one document: a `chunk` (as stored), a `passage` (the chunk's best
 * window of sentences for the query, focus.ts), a `page` (the text between two page breaks, docs/documents.md; a
 * document without breaks is one page) and a whole `document`. The ranking is of chunks; a page or a document is
 * represented by its best-ranked chunk (grouping.ts, by the page the chunk starts on) and a passage by the window of
 * its chunk; a page hit is the page its chunk's focus lies on (a chunk stored whole spans every page).
 *
 * Ids: a chunk `doc#N`, a passage `doc#N:start-end` (document offsets: the same window always has the same id), a
 * page `doc#pN`, a document `doc`.
 */
export type UnitCorpus = Pick<CorpusReader, 'getChunk' | 'getDocument' | 'outlineOf'>;

/** The page (from 1) a chunk starts on; a chunk at its document's start, or in one with no breaks, is on page 1. */
export function pageOfChunk(corpus: Pick<CorpusReader, 'outlineOf'>, chunk: Pick<ChunkBody, 'docId' | 'start'>) {
  if (chunk.start === 0) return 1;
  const outline = corpus.outlineOf(chunk.docId);
  return outline === undefined ? 1 : (pageAt(outline, chunk.start) ?? 1);
}

/** The span a hit of `unit` covers, for the chunk that represents it (and, for a passage, the chunk's focus). */
export function spanOf(corpus: UnitCorpus, chunk: ChunkBody, unit: Unit, focus?: Focus): Span {
  switch (unit) {
    case 'chunk':
      return chunk;
    case 'passage':
      return focus?.passage ?? chunk;
    case 'page':
      // The page the query is answered on: a chunk stored whole can span many pages (its focus says where).
      return pageSpan(corpus, chunk, focus?.quote?.start ?? focus?.passage.start ?? chunk.start);
    case 'document':
      return documentSpan(corpus, chunk);
  }
}

/** A hit's id (its unit's, as above) from the chunk that represents it and the span it covers. */
export function unitId(
  place: ChunkPlace,
  unit: Unit,
  span: Partial<Pick<Span, 'start' | 'end'>>,
  page: number,
): string {
  switch (unit) {
    case 'chunk':
      return `${place.docId}#${place.ordinal}`;
    case 'passage':
      return `${place.docId}#${place.ordinal}:${span.start ?? 0}-${span.end ?? 0}`;
    case 'page':
      return `${place.docId}#p${page}`;
    case 'document':
      return place.docId;
  }
}

/** The document a hit id names, whatever its unit (feedback, §7.16); the id itself when it names none of ours. */
export function documentOfHitId(id: string): string {
  return id.replace(/#(\d+(:\d+-\d+)?|p\d+)$/, '');
}

/** A whole document as a span of itself (a document deleted since: its chunk's span). */
function documentSpan(corpus: Pick<CorpusReader, 'getDocument'>, chunk: ChunkBody): Span {
  const text = corpus.getDocument(chunk.docId)?.text;
  return text === undefined ? chunk : { start: 0, end: text.length, text };
}

/** The page holding document offset `at`, as a span of its document (a document deleted since: the chunk's span). */
function pageSpan(corpus: UnitCorpus, chunk: ChunkBody, at: number): Span {
  const text = corpus.getDocument(chunk.docId)?.text;
  const outline = corpus.outlineOf(chunk.docId);
  if (text === undefined || outline === undefined) return chunk;
  const { breaks } = outline;
  const page = pageAt(outline, at) ?? 1;
  let start = page === 1 ? 0 : breaks[page - 2]! + 1;
  let end = breaks[page - 1] ?? text.length;
  // Without the line breaks around each form feed (docs/documents.md writes `\n\f\n`) and other edge space.
  while (start < end && /\s/.test(text[start]!)) start++;
  while (end > start && /\s/.test(text[end - 1]!)) end--;
  return { start, end, text: text.slice(start, end) };
}
