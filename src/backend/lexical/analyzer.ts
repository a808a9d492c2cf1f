import { stemmer } from 'stemmer';

/**
 * The lexical analyzer: Unicode compatibility decomposition, accents folded (combining marks dropped), case folded,
 * split into runs of letters and digits. Porter stemming (the maintained `stemmer` package) is on by default because
 * it measurably helps BM25 on SciFact (see the closing note of issue #4 and `npm run bench -- lexical`).
 */
export interface AnalyzerOptions {
  readonly stem: boolean;
}

const TERM = /[\p{L}\p{N}]+/gu;
const MARKS = /\p{M}+/gu;

/** Stems are memoised: a corpus repeats its vocabulary, and stemming dominates analysis time. */
const STEMS = new Map<string, string>();
const MAX_MEMO = 1_000_000;

function stem(term: string): string {
  let stemmed = STEMS.get(term);
  if (stemmed === undefined) {
    stemmed = stemmer(term);
    if (STEMS.size < MAX_MEMO) STEMS.set(term, stemmed);
  }
  return stemmed;
}

export function analyze(text: string, options: AnalyzerOptions): string[] {
  const terms = text.normalize('NFKD').replace(MARKS, '').toLowerCase().match(TERM) ?? [];
  return options.stem ? terms.map(stem) : terms;
}
