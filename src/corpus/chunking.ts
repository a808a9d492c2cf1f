import { TimeSlice } from '../protocol/time-slice.js';
import { headingPathAt, outlineOf, pageAt } from './outline.js';
import { MAX_EXPANSION, UNITS_PER_TOKEN, addedPerCall, normalizedEnd, wholeCodePoints } from '../models/index.js';

/**
 * Server-side chunking (§7.10 `chunk: true`): overlapping chunks that end on sentence boundaries and fit the
 * encoder's token limit. Sentences come from `Intl.Segmenter`. The document's structure (outline.ts: Markdown
 * headings, page breaks) cuts it into sections first: a chunk never spans two sections, and carries the path of
 * headings it lies under (the situating context for `contextual: true`) and its page. Consecutive chunks share one
 * sentence of overlap when it fits. A sentence longer than the limit on its own is cut at word boundaries.
 *
 * Every chunk is a verbatim slice of the document: `text === document.slice(start, end)`, so citations can point at
 * exact character offsets.
 */
export interface Chunk {
  readonly text: string;
  /** The headings the chunk lies under, outermost first; empty when none. */
  readonly headings: readonly string[];
  /** The page the chunk is on (from 1), for a paginated text. */
  readonly page?: number | undefined;
  readonly start: number;
  readonly end: number;
}

export type TokenCounter = (text: string) => number;

const segmenter = new Intl.Segmenter('en', { granularity: 'sentence' });

/** A span of the document: [start, end). */
interface Span {
  readonly start: number;
  readonly end: number;
}

interface Section extends Span {
  readonly headings: readonly string[];
  readonly page: number | undefined;
}

/** The runs of text between headings and page breaks, as spans of the document (the headings themselves left out). */
function sections(text: string): Section[] {
  const outline = outlineOf(text);
  const cuts = [
    ...outline.headings.map((heading) => ({ start: heading.start, end: heading.end })),
    ...outline.breaks.map((at) => ({ start: at, end: at + 1 })),
  ].sort((a, b) => a.start - b.start);
  const out: Section[] = [];
  let start = 0;
  for (const cut of [...cuts, { start: text.length, end: text.length }]) {
    if (cut.start > start) {
      out.push({ start, end: cut.start, headings: headingPathAt(outline, start), page: pageAt(outline, start) });
    }
    start = Math.max(start, cut.end);
  }
  return out;
}

/** Trims a span to its non-space content; undefined when nothing is left. */
function trimmed(text: string, span: Span): Span | undefined {
  let { start, end } = span;
  while (start < end && /\s/.test(text[start] ?? '')) start += 1;
  while (end > start && /\s/.test(text[end - 1] ?? '')) end -= 1;
  return start < end ? { start, end } : undefined;
}

/**
 * Cuts one over-long sentence into word windows that each fit. Each window's end is first predicted from the words'
 * own token counts (a window's count is about the sum of its words': the tokenizers mark each word boundary), then
 * settled by exact counts, galloping and bisecting from the prediction (a window's count only grows with its words).
 * A window usually costs two exact counts: grown by galloping from one word, it cost ~15 (2.7 s of the event loop's
 * time for a 1 MiB sentence of 4,096 windows, against the model's 27 s). A word longer than the model reads (by its
 * normalised length: see readable-prefix.ts) is cut into parts of that length first, so no count reads more than a
 * few of them (20,000 × U+FDFA with no space was one word: each count tokenised 360,000 characters).
 */
async function cutWords(
  text: string,
  sentence: Span,
  count: TokenCounter,
  limit: number,
  slice: TimeSlice,
): Promise<Span[]> {
  const words = wordSpans(text, sentence, limit * UNITS_PER_TOKEN);
  const fits = (first: number, last: number) => count(text.slice(words.start(first), words.end(last))) <= limit;
  // A word's own count is its count less the tokens every call adds.
  const specials = addedPerCall(count);
  const wordTokens = wordCounter(text, words, count, specials);
  const pieces: Span[] = [];
  for (let first = 0; first < words.count;) {
    // The longest window from `first` that fits; a word too long alone is a piece of its own.
    let predicted = first;
    for (let sum = wordTokens(first) + specials; predicted + 1 < words.count; predicted++) {
      sum += wordTokens(predicted + 1);
      if (sum > limit) break;
    }
    const [good, bad] =
      predicted > first && !fits(first, predicted)
        ? gallopDown(first, predicted, (last) => fits(first, last))
        : gallopUp(predicted, words.count, (last) => fits(first, last));
    const last = bisect(good, bad, (middle) => fits(first, middle));
    pieces.push({ start: words.start(first), end: words.end(last) });
    first = last + 1;
    await slice.due();
  }
  return pieces;
}

/** Each word's own token count (less `specials`), remembered by word (a bounded memo: a long sentence repeats its words). */
function wordCounter(text: string, words: WordSpans, count: TokenCounter, specials: number): (i: number) => number {
  const memo = new Map<string, number>();
  return (i) => {
    const word = text.slice(words.start(i), words.end(i));
    let tokens = memo.get(word);
    if (tokens === undefined) {
      if (memo.size >= WORD_MEMO) memo.clear();
      memo.set(word, (tokens = count(word) - specials));
    }
    return tokens;
  };
}

const WORD_MEMO = 65_536;

/** From `good` (first, or a fitting end): doubling steps while they fit; [last fitting, first not or `end`]. */
function gallopUp(good: number, end: number, fits: (last: number) => boolean): [number, number] {
  let step = 1;
  while (good + step < end && fits(good + step)) [good, step] = [good + step, step * 2];
  return [good, Math.min(good + step, end)];
}

/** From `bad` (an end that does not fit, past `first`): doubling steps back to one that fits, or to `first`. */
function gallopDown(first: number, bad: number, fits: (last: number) => boolean): [number, number] {
  let step = 1;
  while (bad - step > first && !fits(bad - step)) [bad, step] = [bad - step, step * 2];
  return [Math.max(first, bad - step), bad];
}

/** The last end in [good, bad) that fits, `good` fitting (or being the window's first word) and `bad` not. */
function bisect(good: number, bad: number, fits: (last: number) => boolean): number {
  while (bad - good > 1) {
    const middle = (good + bad) >> 1;
    if (fits(middle)) good = middle;
    else bad = middle;
  }
  return good;
}

interface WordSpans {
  readonly count: number;
  start(i: number): number;
  end(i: number): number;
}

/**
 * The runs of non-space characters in a span, as offsets in typed arrays (a 1 MB sentence has 512 Ki words); a run
 * longer than `maxUnits` UTF-16 units after NFKD is cut into runs of at most that (never inside a surrogate pair).
 */
function wordSpans(text: string, span: Span, maxUnits: number): WordSpans {
  let starts = new Int32Array((span.end - span.start + 1) >> 1);
  let ends = new Int32Array(starts.length);
  let count = 0;
  const push = (start: number, end: number) => {
    if (count === starts.length) [starts, ends] = [grown(starts, count), grown(ends, count)];
    starts[count] = start;
    ends[count++] = end;
  };
  const word = (start: number, end: number) => {
    // Only a run this long can decompose past `maxUnits` (NFKD expands a unit at most 18-fold).
    for (let at = start; at < end;) {
      const next =
        (end - at) * MAX_EXPANSION <= maxUnits
          ? end
          : normalizedEnd(text, at, wholeCodePoints(text, Math.min(end, at + maxUnits)), maxUnits);
      push(at, next);
      at = next;
    }
  };
  let wordStart = -1;
  for (let at = span.start; at < span.end; at++) {
    const space = isSpace(text.charCodeAt(at));
    if (!space && wordStart < 0) wordStart = at;
    if (space && wordStart >= 0) {
      word(wordStart, at);
      wordStart = -1;
    }
  }
  if (wordStart >= 0) word(wordStart, span.end);
  return { count, start: (i) => starts[i]!, end: (i) => ends[i]! };
}

function grown(array: Int32Array, length: number): Int32Array<ArrayBuffer> {
  const larger = new Int32Array(Math.max(16, length * 2));
  larger.set(array.subarray(0, length));
  return larger;
}

function isSpace(code: number): boolean {
  return code === 32 || (code >= 9 && code <= 13) || (code > 127 && /\s/.test(String.fromCharCode(code)));
}

/**
 * The chunks of `text`, each at most `maxTokens` by `count`. Time-sliced (docs/architecture.md §9): a long document is
 * segmented and counted in bounded slices, letting the event loop serve others in between.
 */
export async function chunkText(
  text: string,
  count: TokenCounter,
  maxTokens: number,
  slice: TimeSlice = new TimeSlice(),
): Promise<Chunk[]> {
  const chunks: Chunk[] = [];
  const emit = (from: Span, to: Span, section: Section) =>
    chunks.push({
      text: text.slice(from.start, to.end),
      headings: section.headings,
      ...(section.page === undefined ? {} : { page: section.page }),
      start: from.start,
      end: to.end,
    });
  for (const section of sections(text)) {
    let current: Span[] = [];
    let tokens = 0;
    for (const sentence of await sentencesOf(text, section, count, maxTokens, slice)) {
      const size = count(text.slice(sentence.start, sentence.end));
      if (current.length > 0 && tokens + size > maxTokens) {
        emit(current[0]!, current[current.length - 1]!, section);
        const overlap = current[current.length - 1]!;
        const overlapSize = count(text.slice(overlap.start, overlap.end));
        current = overlapSize + size <= maxTokens ? [overlap] : [];
        tokens = current.length > 0 ? overlapSize : 0;
      }
      current.push(sentence);
      tokens += size;
      await slice.due();
    }
    if (current.length > 0) emit(current[0]!, current[current.length - 1]!, section);
  }
  if (chunks.length > 0) return chunks;
  const whole = trimmed(text, { start: 0, end: text.length }) ?? { start: 0, end: text.length };
  return [{ text: text.slice(whole.start, whole.end), headings: [], start: whole.start, end: whole.end }];
}

/** Characters segmented at once, and the most a window widens to for one long sentence. */
const WINDOW = 4096;
const MAX_WINDOW = 65_536;

/**
 * The sentences of a span, from `Intl.Segmenter` over bounded windows: iterating one input's segments costs time
 * quadratic in their number (seconds for a long document, minutes for 250,000 newlines), so each window keeps the
 * sentences it holds whole and the next starts at the one the window cut. A sentence longer than the widest window
 * is cut at its edge (and then at words, as every over-long sentence is).
 */
function* sentenceSpans(text: string, span: Span): Generator<Span> {
  let at = span.start;
  let size = WINDOW;
  while (at < span.end) {
    const end = Math.min(span.end, at + size);
    const segments = [...segmenter.segment(text.slice(at, end))];
    const whole = end === span.end || size >= MAX_WINDOW ? segments.length : segments.length - 1;
    if (whole === 0) {
      size *= 2;
      continue;
    }
    for (const { index, segment } of segments.slice(0, whole)) {
      yield { start: at + index, end: at + index + segment.length };
    }
    const last = segments[whole - 1]!;
    at += last.index + last.segment.length;
    size = WINDOW;
  }
}

/** A section's sentences as trimmed spans, over-long ones cut at word boundaries. */
async function sentencesOf(
  text: string,
  section: Section,
  count: TokenCounter,
  maxTokens: number,
  slice: TimeSlice,
): Promise<Span[]> {
  const spans: Span[] = [];
  for (const sentence of sentenceSpans(text, section)) {
    await slice.due();
    const span = trimmed(text, sentence);
    if (span === undefined) continue;
    // A sentence far longer than the window (before or after normalising) is cut without tokenizing it whole first.
    const units = maxTokens * UNITS_PER_TOKEN;
    const long =
      span.end - span.start > units ||
      normalizedEnd(text, span.start, span.end, units) < span.end ||
      count(text.slice(span.start, span.end)) > maxTokens;
    if (long) spans.push(...(await cutWords(text, span, count, maxTokens, slice)));
    else spans.push(span);
  }
  return spans;
}
