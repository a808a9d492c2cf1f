/**
 * The words of a text, lower-cased, with where each starts: what the phrase rules (phrases.ts) match, one pass of
 * one regular expression with no nested quantifier (linear on any input). At most half as many as the text has
 * characters, and the screen reads at most MAX_SCREENED of them (screen.ts).
 */
export interface Words {
  readonly words: readonly string[];
  readonly starts: readonly number[];
}

/** A word: letters and digits (an apostrophe inside one, as in "don't", is kept). */
const WORD = /[\p{L}\p{N}]+(?:['’][\p{L}]+)?/gu;

export function wordsOf(text: string): Words {
  const words: string[] = [];
  const starts: number[] = [];
  for (const match of text.matchAll(WORD)) {
    words.push(match[0].toLowerCase().replace('’', "'"));
    starts.push(match.index);
  }
  return { words, starts };
}
