/** The Map-postings Bm25Index as it was before typed postings and MaxScore (main ad8e1c9): the bench's same-run baseline. */
import { TimeSlice } from '../../src/protocol/time-slice.js';
import { PART_UNITS, textParts } from '../../src/models/tokenizers/count-in-parts.js';
import { analyze, type AnalyzerOptions } from '../../src/lexical/analyzer.js';

/** Postings scored (or candidates ranked) between two looks at the clock: a look per posting would cost more than it saves. */
const STEPS_PER_CHECK = 4096;

export interface Bm25Options extends AnalyzerOptions {
  readonly k1: number;
  readonly b: number;
}

export interface LexicalHit {
  readonly label: number;
  readonly score: number;
}

/**
 * Okapi BM25 over an in-memory inverted index with incremental add and delete. Postings map a term to
 * (label → term frequency); document lengths and the running total give avgdl. Rebuilt from the store at start
 * (it is derived data; see the corpus).
 *   idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5));  score = Σ idf · tf·(k1+1) / (tf + k1·(1 - b + b·dl/avgdl))
 */
export class Bm25IndexBefore {
  readonly #postings = new Map<string, Map<number, number>>();
  readonly #lengths = new Map<number, number>();
  readonly #terms = new Map<number, string[]>();
  #totalLength = 0;

  constructor(private readonly options: Bm25Options) {}

  get size(): number {
    return this.#lengths.size;
  }

  add(label: number, text: string): void {
    this.#addTerms(label, analyze(text, this.options));
  }

  /**
   * `add` for a text of any length: analysed part by part (cut at spaces, where no term can span) in time slices, so
   * indexing a 1 MB document does not hold the event loop for its whole analysis (docs/architecture.md §9).
   */
  async addInSlices(label: number, text: string, slice: TimeSlice): Promise<void> {
    if (text.length <= PART_UNITS) return this.add(label, text);
    const terms: string[] = [];
    for (const part of textParts(text)) {
      for (const term of analyze(part, this.options)) terms.push(term);
      await slice.due();
    }
    this.#addTerms(label, terms);
  }

  #addTerms(label: number, terms: readonly string[]): void {
    if (this.#lengths.has(label)) this.remove(label);
    const counts = new Map<string, number>();
    for (const term of terms) counts.set(term, (counts.get(term) ?? 0) + 1);
    for (const [term, tf] of counts) {
      let posting = this.#postings.get(term);
      if (posting === undefined) this.#postings.set(term, (posting = new Map<number, number>()));
      posting.set(label, tf);
    }
    this.#lengths.set(label, terms.length);
    this.#terms.set(label, [...counts.keys()]);
    this.#totalLength += terms.length;
  }

  /** Removes a label; an unknown one is ignored (replay and retries are idempotent). */
  remove(label: number): void {
    const length = this.#lengths.get(label);
    if (length === undefined) return;
    for (const term of this.#terms.get(label) ?? []) {
      const posting = this.#postings.get(term);
      posting?.delete(label);
      if (posting?.size === 0) this.#postings.delete(term);
    }
    this.#lengths.delete(label);
    this.#terms.delete(label);
    this.#totalLength -= length;
  }

  /**
   * BM25 split into its two sides, as term → weight maps over the analyzer's terms, so that the dot product of a
   * query's map and a document's map is that document's BM25 score for the query under this index's statistics:
   * a query weighs each distinct term 1; a document weighs each term idf · tf·(k1+1) / (tf + k1·(1 - b + b·dl/avgdl)),
   * with its own length dl and this index's N, df and avgdl (an empty index counts the text as its only document).
   */
  termWeights(text: string, kind: 'query' | 'document'): Map<string, number> {
    const terms = analyze(text, this.options);
    const weights = new Map<string, number>();
    if (kind === 'query') {
      for (const term of terms) weights.set(term, 1);
      return weights;
    }
    const counts = new Map<string, number>();
    for (const term of terms) counts.set(term, (counts.get(term) ?? 0) + 1);
    const n = this.#lengths.size;
    const average = n === 0 ? terms.length : this.#totalLength / n;
    const { k1, b } = this.options;
    for (const [term, tf] of counts) {
      const df = this.#postings.get(term)?.size ?? 0;
      const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
      weights.set(term, (idf * tf * (k1 + 1)) / (tf + k1 * (1 - b + (b * terms.length) / Math.max(average, 1e-9))));
    }
    return weights;
  }

  /** Documents containing `term` (an analyzed term). */
  documentFrequency(term: string): number {
    return this.#postings.get(term)?.size ?? 0;
  }

  /** Up to `limit` documents containing `term`. */
  labelsWith(term: string, limit: number): number[] {
    return [...(this.#postings.get(term)?.keys() ?? [])].slice(0, limit);
  }

  /** Every analyzed term with its document frequency. */
  *vocabulary(): Iterable<[string, number]> {
    for (const [term, posting] of this.#postings) yield [term, posting.size];
  }

  /** A document's term counts and length, for pseudo-relevance feedback. */
  termCounts(label: number): { counts: Map<string, number>; length: number } | undefined {
    const terms = this.#terms.get(label);
    if (terms === undefined) return undefined;
    const counts = new Map(terms.map((term) => [term, this.#postings.get(term)?.get(label) ?? 0]));
    return { counts, length: this.#lengths.get(label) ?? 0 };
  }

  analyze(text: string): string[] {
    return analyze(text, this.options);
  }

  /** BM25 scores of the given labels (0 for labels without query terms), for completing fused candidate sets. */
  async scoreLabels(query: string, labels: readonly number[], slice = new TimeSlice()): Promise<number[]> {
    const wanted = new Set(labels);
    const hits = await this.search(query, Number.MAX_SAFE_INTEGER, wanted, slice);
    const scores = new Map(hits.map((hit) => [hit.label, hit.score]));
    return labels.map((label) => scores.get(label) ?? 0);
  }

  /**
   * The `k` best documents for `query`. A query of many common terms over a large corpus visits millions of
   * postings: the work runs in time slices (docs/architecture.md §9). Writes between slices are seen or not, as with
   * any read that overlaps a write; N and avgdl are those at the start.
   */
  async search(query: string, k: number, allow?: ReadonlySet<number>, slice = new TimeSlice()): Promise<LexicalHit[]> {
    const n = this.#lengths.size;
    if (n === 0 || k <= 0) return [];
    const { k1, b } = this.options;
    const average = this.#totalLength / n;
    const scores = new Map<number, number>();
    let steps = 0;
    for (const term of new Set(analyze(query, this.options))) {
      const posting = this.#postings.get(term);
      if (posting === undefined) continue;
      const idf = Math.log(1 + (n - posting.size + 0.5) / (posting.size + 0.5));
      for (const [label, tf] of posting) {
        if (allow !== undefined && !allow.has(label)) continue;
        const length = this.#lengths.get(label) ?? 0;
        const score = (idf * tf * (k1 + 1)) / (tf + k1 * (1 - b + (b * length) / average));
        scores.set(label, (scores.get(label) ?? 0) + score);
        if (++steps % STEPS_PER_CHECK === 0) await slice.due();
      }
    }
    return topK(scores, k, slice);
  }
}

/** Best first, ties by smaller label; a bounded min-heap keeps this O(n log k) for large candidate sets. */
const better = (a: LexicalHit, b: LexicalHit) => a.score > b.score || (a.score === b.score && a.label < b.label);

async function topK(scores: ReadonlyMap<number, number>, k: number, slice: TimeSlice): Promise<LexicalHit[]> {
  if (scores.size <= k && scores.size <= STEPS_PER_CHECK) {
    return [...scores].map(([label, score]) => ({ label, score })).sort((x, y) => (better(x, y) ? -1 : 1));
  }
  const heap: LexicalHit[] = []; // heap[0] is the worst kept hit
  const swap = (i: number, j: number) => ([heap[i], heap[j]] = [heap[j]!, heap[i]!]);
  let steps = 0;
  for (const [label, score] of scores) {
    if (++steps % STEPS_PER_CHECK === 0) await slice.due();
    const hit = { label, score };
    if (heap.length < k) {
      heap.push(hit);
      for (let i = heap.length - 1; i > 0;) {
        const parent = (i - 1) >> 1;
        if (!better(heap[parent]!, heap[i]!)) break;
        swap(i, parent);
        i = parent;
      }
    } else if (better(hit, heap[0]!)) {
      heap[0] = hit;
      for (let i = 0; ;) {
        const [l, r] = [2 * i + 1, 2 * i + 2];
        let worst = i;
        if (l < heap.length && better(heap[worst]!, heap[l]!)) worst = l;
        if (r < heap.length && better(heap[worst]!, heap[r]!)) worst = r;
        if (worst === i) break;
        swap(i, worst);
        i = worst;
      }
    }
  }
  return heap.sort((x, y) => (better(x, y) ? -1 : 1));
}
