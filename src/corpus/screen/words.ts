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

/**
 * Cyrillic and Greek letters drawn like Latin ones (lower case), read as those inside a word that mixes them with
 * Latin letters: "іgnore" with a Cyrillic і is "ignore". A word wholly of one script is left as written.
 */
const DRAWN = 'авеёкмнорстухіїјѕԁԛԝһɡαβεικνορτυχ';
const AS = 'abeekmhopctyxiijsdqwhgabeikvoptux';
const LOOK_ALIKES: ReadonlyMap<string, string> = new Map([...DRAWN].map((char, i) => [char, AS[i]!]));
const LATIN = /[a-z]/;
const NON_ASCII = /[^\p{ASCII}]/u;

/** A word as the rules read it: lower-cased, its apostrophe plain, look-alike letters of a mixed word as Latin. */
function readAs(word: string): string {
  const lower = word.toLowerCase().replace('’', "'");
  if (!NON_ASCII.test(lower) || !LATIN.test(lower)) return lower;
  let read = '';
  for (const char of lower) read += LOOK_ALIKES.get(char) ?? char;
  return read;
}

export function wordsOf(text: string): Words {
  const words: string[] = [];
  const starts: number[] = [];
  for (const match of text.matchAll(WORD)) {
    words.push(readAs(match[0]));
    starts.push(match.index);
  }
  return { words, starts };
}
