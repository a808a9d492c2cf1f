import type { TimeSlice } from '../../protocol/time-slice.js';
import { MAX_EXPANSION, normalizedEnd, wholeCodePoints } from './readable-prefix.js';

/**
 * UTF-16 units per part, counted after NFKD (what a tokenizer reads: a character may expand 18-fold): tokenizing one
 * part holds the event loop for a few milliseconds at most.
 */
export const PART_UNITS = 16_384;

/**
 * The token count of a long text, counted part by part in time slices (docs/architecture.md §9): tokenizing a 1 MB text
 * at once holds the event loop for ~200 ms. The text is cut at spaces, the space itself left out. Both tokenizers here
 * split words at spaces before matching pieces: SentencePiece reads '▁' + the text with every space as '▁', and no
 * piece has '▁' past its start, so '▁' + part₁ + '▁' + part₂ is the whole text's reading; WordPiece pre-splits on
 * whitespace and drops it. (A space is a starter that composes with nothing, so normalising stops at it too.) So a text's count is the sum of its parts' counts, less the tokens every call adds beyond
 * the first ([CLS] and [SEP] for WordPiece, none for SentencePiece): 2·count('a') − count('a a'). A run of more than
 * `PART_UNITS` normalised units with no space is cut where the part ends; only such a run can be counted differently from the
 * whole.
 */
export async function countInParts(count: (text: string) => number, text: string, slice: TimeSlice): Promise<number> {
  if (text.length * MAX_EXPANSION <= PART_UNITS) return count(text);
  const specials = addedPerCall(count);
  let total = specials;
  for (const part of textParts(text)) {
    total += count(part) - specials;
    await slice.due();
  }
  return total;
}

/**
 * The tokens every call of `count` adds beyond the text's own ([CLS] and [SEP] for WordPiece, none for
 * SentencePiece): 2·count('a') − count('a a').
 */
export function addedPerCall(count: (text: string) => number): number {
  return 2 * count('a') - count('a a');
}

/** A text cut into parts of at most `PART_UNITS` units at spaces (each space left out): see countInParts. */
export function* textParts(text: string): Generator<string> {
  for (let start = 0; start <= text.length;) {
    const { end, next } = partEnd(text, start);
    yield text.slice(start, end);
    start = next;
  }
}

/** Where the part starting at `start` ends, and where the next starts: at the last space within the bound of
 * `PART_UNITS` normalised units (left out), else at the bound (never inside a surrogate pair, and at least one code
 * point on: one code point is at most 18 units). After the last part, `next` is past the text. */
function partEnd(text: string, start: number): { end: number; next: number } {
  const limit = normalizedEnd(
    text,
    start,
    wholeCodePoints(text, Math.min(text.length, start + PART_UNITS)),
    PART_UNITS,
  );
  if (limit >= text.length) return { end: text.length, next: text.length + 1 };
  const space = text.lastIndexOf(' ', limit);
  if (space >= start) return { end: space, next: space + 1 };
  return { end: limit, next: limit };
}
