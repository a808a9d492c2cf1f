import type { ChunkBody, CorpusReader } from '../corpus/index.js';
import type { TimeSlice } from '../protocol/time-slice.js';
import type { Scored } from './ranking.js';

/**
 * Where in a hit the query is answered: its best sentence (the hit's quote, `citation["x-rcp-server-quote"]`) and
 * its best window of sentences (the `passage` unit, §7.7.2). Sentences come from `Intl.Segmenter` and are analysed
 * as the lexical index analyses text (stemmed, folded terms). A sentence scores the sum of the rarity (BM25's idf)
 * of the query terms it holds, rarity counted among the sentences of the answer's own hits, so the score depends on
 * the query and the hits alone: a pinned version (§7.7.1) quotes alike whatever was written since. A window scores
 * the sum of its sentences'. Offsets are the document's (a chunk is a verbatim slice of it).
 *
 * A sentence is what `Intl.Segmenter` finds between page breaks (a form feed ends one), cut at a word into pieces of
 * at most QUOTE_CHARS: a quote is one piece, a passage up to PASSAGE_SENTENCES pieces, at most PASSAGE_CHARS.
 *
 * Bounds: only the first FOCUS_CHARS of a chunk are read (chunks are far shorter; a document added whole is not), at
 * most PIECES_PER_HIT pieces of it, and at most PIECES_PER_ANSWER pieces over the whole answer (a hit past that gets
 * its first window and no quote): the cost of an answer is bounded however small its sentences. Pieces are analysed
 * in the caller's time slices, and no cut splits a surrogate pair.
 */
export interface Span {
  readonly start: number;
  readonly end: number;
  readonly text: string;
}

export interface Focus {
  /** The best sentence; absent when no sentence holds a query term. */
  readonly quote?: Span | undefined;
  /** The best window of up to PASSAGE_SENTENCES sentences (the chunk's first when no sentence holds a query term). */
  readonly passage: Span;
}

export const FOCUS_CHARS = 16_384;
export const QUOTE_CHARS = 320;
export const PASSAGE_SENTENCES = 3;
export const PASSAGE_CHARS = 1_200;
export const PIECES_PER_HIT = 256;
export const PIECES_PER_ANSWER = 4_096;

const segmenter = new Intl.Segmenter('en', { granularity: 'sentence' });

/** A text's analysed terms (the lexical index's analyzer: `termWeights` of kind query). */
type Analyze = (text: string) => Promise<Set<string>>;

/** A chunk's sentences, each with the query terms it holds. */
interface Read {
  readonly chunk: ChunkBody;
  readonly sentences: readonly Offsets[];
  readonly matched: readonly (readonly string[])[];
}

/** Each hit's focus, by label, for the page of hits being built. */
export async function focusPage(
  page: readonly Scored[],
  query: string,
  corpus: Pick<CorpusReader, 'getChunk' | 'termWeights'>,
  slice: TimeSlice,
  signal?: AbortSignal,
): Promise<Map<number, Focus>> {
  const analyze: Analyze = async (text) => new Set((await corpus.termWeights(text, 'query', signal)).keys());
  const terms = await analyze(query);
  const read = new Map<number, Read>();
  let left = PIECES_PER_ANSWER;
  for (const hit of page) {
    const chunk = corpus.getChunk(hit.label);
    if (chunk === undefined) continue;
    const chunkRead = await readChunk(chunk, Math.min(PIECES_PER_HIT, left), terms, analyze, slice);
    left -= chunkRead.sentences.length;
    read.set(hit.label, chunkRead);
  }
  const idf = rarity([...read.values()]);
  const focus = new Map<number, Focus>();
  for (const [label, { chunk, sentences, matched }] of read) {
    const scores = matched.map((found) => found.reduce((sum, term) => sum + (idf.get(term) ?? 0), 0));
    focus.set(label, focusOf(chunk, sentences, scores));
  }
  return focus;
}

async function readChunk(
  chunk: ChunkBody,
  most: number,
  terms: ReadonlySet<string>,
  analyze: Analyze,
  slice: TimeSlice,
) {
  const sentences = sentencesOf(chunk.text.slice(0, cutAt(chunk.text, FOCUS_CHARS)), most);
  const matched: string[][] = [];
  for (const sentence of sentences) {
    const held = await analyze(chunk.text.slice(sentence.start, sentence.end));
    matched.push([...held].filter((term) => terms.has(term)));
    if (slice.spent()) await slice.due();
  }
  return { chunk, sentences, matched };
}

/** BM25's idf of each matched term among all the sentences read: ln(1 + (N - df + 0.5) / (df + 0.5)). */
function rarity(read: readonly Read[]): Map<string, number> {
  const df = new Map<string, number>();
  let sentences = 0;
  for (const { matched } of read) {
    sentences += matched.length;
    for (const found of matched) for (const term of found) df.set(term, (df.get(term) ?? 0) + 1);
  }
  return new Map([...df].map(([term, n]) => [term, Math.log(1 + (sentences - n + 0.5) / (n + 0.5))]));
}

/** One chunk's focus from its sentences' scores. */
export function focusOf(chunk: ChunkBody, sentences: readonly Offsets[], scores: readonly number[]): Focus {
  const best = scores.reduce((at, score, i) => (score > (scores[at] ?? 0) ? i : at), 0);
  const inDocument = (at: Offsets): Span => ({
    start: chunk.start + at.start,
    end: chunk.start + at.end,
    text: chunk.text.slice(at.start, at.end),
  });
  const window = windowAt(sentences, scores);
  return {
    ...((scores[best] ?? 0) > 0 ? { quote: inDocument(sentences[best]!) } : {}),
    // No piece read (an empty chunk, or the answer's budget spent): the chunk's opening, within the passage bound.
    passage: inDocument(window ?? { start: 0, end: cutAt(chunk.text, PASSAGE_CHARS) }),
  };
}

export interface Offsets {
  readonly start: number;
  readonly end: number;
}

/**
 * The text's sentences as pieces (at most `most`): split at form feeds, segmented, trimmed of surrounding white
 * space (empty ones dropped), each cut at a word into pieces of at most QUOTE_CHARS.
 */
function sentencesOf(text: string, most: number): Offsets[] {
  const pieces: Offsets[] = [];
  for (let from = 0; from <= text.length && pieces.length < most;) {
    const feed = text.indexOf('\f', from);
    const to = feed < 0 ? text.length : feed;
    for (const { index, segment } of segmenter.segment(text.slice(from, to))) {
      const lead = segment.length - segment.trimStart().length;
      const body = segment.trim();
      if (body !== '') piecesOf(text, from + index + lead, from + index + lead + body.length, pieces, most);
      if (pieces.length >= most) break;
    }
    from = to + 1;
  }
  return pieces;
}

/** A sentence's pieces of at most QUOTE_CHARS, each cut after its last white space (or, with none, at the bound). */
function piecesOf(text: string, start: number, end: number, into: Offsets[], most: number): void {
  while (start < end && into.length < most) {
    let stop = end;
    if (end - start > QUOTE_CHARS) {
      const space = text.slice(start, start + QUOTE_CHARS).search(/\s\S*$/);
      stop = space > 0 ? start + space : cutAt(text, start + QUOTE_CHARS);
    }
    into.push({ start, end: stop });
    start = stop;
    while (start < end && /\s/.test(text[start]!)) start++;
  }
}

/** `at`, or one before it when a cut there would split a surrogate pair. */
function cutAt(text: string, at: number): number {
  const unit = text.charCodeAt(at - 1);
  return at < text.length && unit >= 0xd800 && unit <= 0xdbff ? at - 1 : Math.min(at, text.length);
}

/**
 * The window of up to PASSAGE_SENTENCES consecutive sentences, at most PASSAGE_CHARS long (a longer single sentence
 * stands alone), whose scores sum highest; the first on a tie, so with no query term anywhere it is the first.
 */
function windowAt(sentences: readonly Offsets[], scores: readonly number[]): Offsets | undefined {
  let best: { at: Offsets; score: number } | undefined;
  for (let first = 0; first < sentences.length; first++) {
    let last = first;
    let score = scores[first] ?? 0;
    while (
      last + 1 < sentences.length &&
      last + 1 - first < PASSAGE_SENTENCES &&
      sentences[last + 1]!.end - sentences[first]!.start <= PASSAGE_CHARS
    )
      score += scores[++last] ?? 0;
    if (best === undefined || score > best.score)
      best = { at: { start: sentences[first]!.start, end: sentences[last]!.end }, score };
  }
  return best?.at;
}
