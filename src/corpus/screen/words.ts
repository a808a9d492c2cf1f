/**
 * The words of a text, lower-cased, with where each starts: what the phrase rules (phrases.ts) match, one pass of
 * one regular expression with no nested quantifier (linear on any input).
 */
export interface Words {
  readonly words: readonly string[];
  readonly starts: readonly number[];
}

/** A word: letters and digits (an apostrophe inside one, as in "don't", is kept). */
const WORD = /[\p{L}\p{N}]+(?:['’][\p{L}]+)?/gu;

/** The most words read of one text: past it the rest is not matched (MAX_SCREENED bounds the text first). */
const MAX_WORDS = 400_000;

export function wordsOf(text: string): Words {
  const words: string[] = [];
  const starts: number[] = [];
  for (const match of text.matchAll(WORD)) {
    words.push(match[0].toLowerCase().replace('’', "'"));
    starts.push(match.index);
    if (words.length === MAX_WORDS) break;
  }
  return { words, starts };
}
