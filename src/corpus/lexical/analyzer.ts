import { stemmer } from 'stemmer';

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
  const terms = text.normalize('NFKD').replace(MARKS, '').toLowerCase().match(TERM) ?? [];
  return options.stem ? terms.map(stem) : terms;
}
