import { stemmer } from 'stemmer';
import type { TimeSlice } from '../protocol/time-slice.js';

/**
 * The lexical analyzer: Unicode compatibility decomposition, accents folded (combining marks dropped), case folded,
 * split into runs of letters and digits. Porter stemming (the maintained `stemmer` package) is on by default because
 * it measurably helps BM25 on SciFact (`npm run bench -- lexical` measures it).
 */
export interface AnalyzerOptions {
  readonly stem: boolean;
}

const TERM = /[\p{L}\p{N}]+/gu;
const MARKS = /\p{M}+/gu;

/**
 * Stems are memoised (a corpus repeats its vocabulary, and stemming dominates analysis time) within a byte budget;
 * past it the memo starts over. Entries are copies: V8 keeps a long substring as a slice of its parent, so a term
 * cut from a request's text would otherwise keep that whole text alive in the memo.
 */
const STEMS = new Map<string, string>();
const MEMO_BYTES = 16 * 1024 * 1024;
/** What one entry costs beyond its characters (map slot, string headers), roughly. */
const ENTRY_BYTES = 64;
let memoBytes = 0;

function stem(term: string): string {
  let stemmed = STEMS.get(term);
  if (stemmed === undefined) {
    stemmed = stemmer(term);
    const cost = ENTRY_BYTES + 2 * (term.length + stemmed.length);
    if (memoBytes + cost > MEMO_BYTES) {
      STEMS.clear();
      memoBytes = 0;
    }
    STEMS.set(detached(term), detached(stemmed));
    memoBytes += cost;
  }
  return stemmed;
}

/** A copy of `text` that shares no memory with the string it was cut from (V8 slices substrings of 13+ units). */
function detached(text: string): string {
  return text.length < 13 ? text : Buffer.from(text, 'utf16le').toString('utf16le');
}

export function analyze(text: string, options: AnalyzerOptions): string[] {
  const terms: string[] = [];
  for (const part of analyzedParts(text, options)) for (const term of part) terms.push(term);
  return terms;
}

/** `analyze` in time slices (docs/architecture.md §9): a part's terms, then a look at the clock. */
export async function analyzeInSlices(text: string, options: AnalyzerOptions, slice: TimeSlice): Promise<string[]> {
  const terms: string[] = [];
  for (const part of analyzedParts(text, options)) {
    for (const term of part) terms.push(term);
    await slice.due();
  }
  return terms;
}

/**
 * Raw UTF-16 units decomposed at once. NFKD expands a unit up to 18-fold (U+FDFA: 340,000 of them took 1.9 s to
 * decompose in one call and 5.3 s to analyse, while the event loop served no one), so a part is at most ~18 Ki
 * units of decomposed text, a few milliseconds.
 */
export const RAW_PART_UNITS = 1024;

/**
 * Decomposed text with no ASCII whitespace held back at most this long waiting for one; past it, it is analysed as it
 * stands (only a run this long with no space between its terms, no ordinary text, can be analysed differently).
 */
export const MAX_RUN_UNITS = 65_536;

/**
 * The terms of `text`, part by part, exactly as analysing it whole gives them. NFKD maps each code point on its own
 * and canonical ordering only moves combining marks, which are then dropped, so decomposing raw parts cut between code
 * points and joining them is decomposing the whole. Terms are cut, lower-cased and stemmed only up to the last ASCII
 * whitespace of what is decomposed so far: no term spans it, and it ends lower-casing's one context (a final sigma is
 * judged across marks and case-ignorable characters such as '.', never across whitespace).
 */
export function* analyzedParts(text: string, options: AnalyzerOptions): Generator<string[]> {
  let held = '';
  for (let start = 0; start < text.length;) {
    let end = Math.min(text.length, start + RAW_PART_UNITS);
    if (end < text.length && isHighSurrogate(text.charCodeAt(end - 1))) end -= 1;
    const decomposed = text.slice(start, end).normalize('NFKD').replace(MARKS, '');
    start = end;
    const space = lastWhitespace(decomposed);
    const buffer = held + decomposed;
    // `held` has no whitespace: the cut is after the new text's last, else nowhere (or everywhere, at the end).
    const cut =
      start === text.length || (space < 0 && buffer.length >= MAX_RUN_UNITS)
        ? buffer.length
        : space < 0
          ? 0
          : held.length + space + 1;
    held = buffer.slice(cut);
    yield cut > 0 ? termsOf(buffer.slice(0, cut), options) : [];
  }
}

function termsOf(decomposed: string, options: AnalyzerOptions): string[] {
  const terms = decomposed.toLowerCase().match(TERM) ?? [];
  return options.stem ? terms.map(stem) : terms;
}

/** The index of the last ASCII whitespace (tab, line feed, vertical tab, form feed, return, space) in `text`, or -1. */
function lastWhitespace(text: string): number {
  for (let i = text.length - 1; i >= 0; i--) {
    const code = text.charCodeAt(i);
    if (code === 32 || (code >= 9 && code <= 13)) return i;
  }
  return -1;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
