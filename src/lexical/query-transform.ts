import { TimeSlice } from '../protocol/time-slice.js';
import { analyzeInSlices, RAW_PART_UNITS } from './analyzer.js';
import { bm25Idf, type Bm25Index } from './bm25.js';

/**
 * `query/transform` without a language model (§7.8), from the corpus's own lexical statistics:
 * - `rewrite`: Unicode normalisation and whitespace cleanup, then spelling-robust expansion — a word whose analyzed
 *   terms the corpus has never seen gets the closest corpus term (Damerau-Levenshtein ≤ 1, ≤ 2 for words of 8+
 *   letters; ties to the more frequent term) added beside it, in the corpus's own spelling. The word itself stays.
 * - `multi-query`: pseudo-relevance feedback in the manner of RM3 — the top documents for the query by BM25 vote for
 *   expansion terms (weighted by document score, term share of the document and idf); the first query is the
 *   original, each further one adds the next three expansion terms. Distinct by construction.
 */
const WORD = /[\p{L}\p{N}]+(?:['’-][\p{L}\p{N}]+)*/gu;
const FEEDBACK_DOCS = 10;
const TERMS_PER_QUERY = 3;

export function normalizeQuery(query: string): string {
  return cleaned(query.normalize('NFKC')).trim();
}

function cleaned(normalized: string): string {
  return normalized.replace(/[\p{Cc}\p{Cf}]+/gu, ' ').replace(/\s+/gu, ' ');
}

/**
 * `normalizeQuery` in parts and time slices (docs/architecture.md §9): NFKC of 16,384 × U+FDFA is 295 Ki units and
 * 42 ms in one call, and grows faster than the text. Parts end at a space, where nothing composes across, so their
 * forms joined are the whole's; a run of `RAW_PART_UNITS` with no space is cut between code points, before any mark.
 */
export async function normalizeQueryInSlices(query: string, slice: TimeSlice): Promise<string> {
  let out = '';
  for (let start = 0; start < query.length;) {
    const end = queryPartEnd(query, start);
    const part = cleaned(query.slice(start, end).normalize('NFKC'));
    out += out.endsWith(' ') && part.startsWith(' ') ? part.slice(1) : part;
    start = end;
    await slice.due();
  }
  return out.trim();
}

/** Just past the last space within `RAW_PART_UNITS` of `start`, else the bound moved back before marks and pairs. */
function queryPartEnd(query: string, start: number): number {
  const limit = start + RAW_PART_UNITS;
  if (limit >= query.length) return query.length;
  const space = query.lastIndexOf(' ', limit - 1);
  if (space >= start) return space + 1;
  let end = limit;
  while (end > start + 1 && /^[\p{M}\uDC00-\uDFFF]/u.test(query.slice(end, end + 1))) end -= 1;
  return end;
}

/** Surface forms: the first word in `texts` whose analysis is exactly `term`. */
function surfaceOf(term: string, texts: readonly string[], index: Bm25Index): string {
  for (const text of texts) {
    for (const word of text.match(WORD) ?? []) {
      const terms = index.analyze(word);
      if (terms.length === 1 && terms[0] === term) return word.toLowerCase();
    }
  }
  return term;
}

/** Words corrected per query at most (§15.5 bounds transform fan-out): a query is not thousands of misspellings. */
export const MAX_CORRECTED_WORDS = 32;

export async function rewriteQuery(
  query: string,
  index: Bm25Index,
  textOf: (term: string) => readonly string[],
  slice: TimeSlice = new TimeSlice(),
): Promise<string> {
  const normalized = await normalizeQueryInSlices(query, slice);
  if (index.size === 0) return normalized;
  let vocabulary: [string, number][] | undefined;
  const additions: string[] = [];
  let corrected = 0;
  for (const word of normalized.match(WORD) ?? []) {
    if (corrected === MAX_CORRECTED_WORDS) break;
    await slice.due();
    const terms = index.analyze(word);
    if (terms.length === 0 || terms.every((term) => index.documentFrequency(term) > 0)) continue;
    corrected++;
    vocabulary ??= [...index.vocabulary()];
    for (const term of terms) {
      if (index.documentFrequency(term) > 0 || term.length < 4) continue; // too short to correct safely
      const best = await closestTerm(term, vocabulary, slice);
      if (best !== undefined) additions.push(surfaceOf(best, textOf(best), index));
    }
  }
  return additions.length === 0 ? normalized : `${normalized} ${additions.join(' ')}`;
}

/** The vocabulary term nearest `term` within its edit limit (ties to the more frequent), scanned in time slices. */
async function closestTerm(
  term: string,
  vocabulary: readonly [string, number][],
  slice: TimeSlice,
): Promise<string | undefined> {
  const limit = term.length >= 8 ? 2 : 1;
  let best: [string, number, number] | undefined; // term, distance, df
  for (let i = 0; i < vocabulary.length; i++) {
    if ((i & 1023) === 0) await slice.due();
    const [candidate, df] = vocabulary[i]!;
    if (Math.abs(candidate.length - term.length) > limit) continue;
    const distance = damerauLevenshtein(term, candidate, limit);
    if (distance > limit) continue;
    if (best === undefined || distance < best[1] || (distance === best[1] && df > best[2])) {
      best = [candidate, distance, df];
    }
  }
  return best?.[0];
}

export async function multiQuery(
  query: string,
  n: number,
  index: Bm25Index,
  textOfLabel: (label: number) => string,
  slice: TimeSlice = new TimeSlice(),
): Promise<string[]> {
  const normalized = await normalizeQueryInSlices(query, slice);
  const queries = [normalized];
  if (n <= 1 || index.size === 0) return queries;
  const top = await index.search(normalized, FEEDBACK_DOCS, undefined, slice);
  const best = top[0]?.score ?? 0;
  if (best <= 0) return queries;
  const own = new Set(await analyzeInSlices(normalized, index.analyzerOptions, slice));
  const weights = new Map<string, number>();
  for (const { label, score } of top) {
    const doc = index.termCounts(label);
    if (doc === undefined || doc.length === 0) continue;
    for (const [term, tf] of doc.counts) {
      if (own.has(term) || term.length < 3 || /^\d+$/u.test(term)) continue;
      const df = index.documentFrequency(term);
      const idf = bm25Idf(index.size, df);
      weights.set(term, (weights.get(term) ?? 0) + (score / best) * (tf / doc.length) * idf);
    }
  }
  const ranked = [...weights].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([term]) => term);
  const texts = top.map(({ label }) => textOfLabel(label));
  for (let i = 0; queries.length < n && (i + 1) * TERMS_PER_QUERY <= ranked.length; i++) {
    const terms = ranked
      .slice(i * TERMS_PER_QUERY, (i + 1) * TERMS_PER_QUERY)
      .map((term) => surfaceOf(term, texts, index));
    queries.push(`${normalized} ${terms.join(' ')}`);
  }
  return queries;
}

/** Optimal-string-alignment distance, giving up (returning limit + 1) once every cell of a row exceeds `limit`. */
export function damerauLevenshtein(a: string, b: string, limit: number): number {
  let previous2: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        value = Math.min(value, (previous2[j - 2] ?? 0) + 1);
      current.push(value);
      rowMin = Math.min(rowMin, value);
    }
    if (rowMin > limit) return limit + 1;
    previous2 = previous;
    previous = current;
  }
  return previous[b.length] ?? limit + 1;
}
