import { TimeSlice } from '../protocol/time-slice.js';
import { analyze, analyzeInSlices, type AnalyzerOptions } from './analyzer.js';

/** Postings scored (or candidates ranked) between two looks at the clock: a look per posting would cost more than it saves. */
export const STEPS_PER_CHECK = 4096;

/** BM25's idf of a term found in `df` of `n` documents (the + 1 keeps it positive). */
export function bm25Idf(n: number, df: number): number {
  return Math.log(1 + (n - df + 0.5) / (df + 0.5));
}

/**
 * Upper bounds are widened by this factor before any document is skipped on them: a bound and the score it bounds are
 * summed in different orders, so they may differ in the last bits; a document is only skipped when even its widened
 * bound is below the threshold, so pruning never drops a document that exhaustive scoring would have kept.
 */
const MARGIN = 1 + 1e-9;

/** A term's cached bound is recomputed once the average document length has moved this far from the one it used. */
const BOUND_DRIFT = 1.25;

export interface Bm25Options extends AnalyzerOptions {
  readonly k1: number;
  readonly b: number;
  /**
   * Metadata text fields weighed into a document beside its text (BM25F with one length normalisation): a field of
   * weight w counts each of its terms w times, in the term's frequency and in the document's length. Absent or
   * empty: the text alone.
   */
  readonly fields?: Readonly<Record<string, number>>;
}

/**
 * Field weights are rounded to this fraction, so weighted frequencies and lengths are exact in binary (sums of
 * lengths stay exact whatever order documents come and go in, and an index built afresh has the same avgdl).
 */
const WEIGHT_STEP = 256;

/** The text of metadata field values a BM25F field can read: a string, or strings in an array. */
function fieldText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.filter((item): item is string => typeof item === 'string').join('\n');
  return '';
}

/** A document's counts of each term (weighed fields included) and its length: what BM25 scores it with. */
function countTerms(
  terms: readonly string[],
  fields: readonly (readonly [readonly string[], number])[],
): { counts: Map<string, number>; length: number } {
  const counts = new Map<string, number>();
  for (const term of terms) counts.set(term, (counts.get(term) ?? 0) + 1);
  let length = terms.length;
  for (const [fieldTerms, weight] of fields) {
    for (const term of fieldTerms) counts.set(term, (counts.get(term) ?? 0) + weight);
    length += fieldTerms.length * weight;
  }
  return { counts, length };
}

/** The live index's arrays as `Bm25Index.frame` captured them. */
export interface LexicalFrame {
  /** By internal id: length, −1 once removed. */
  readonly lengths: Float64Array;
  readonly labels: Float64Array;
  readonly postings: ReadonlyMap<
    string,
    { readonly docs: Int32Array; readonly tfs: Float32Array; readonly length: number }
  >;
  readonly size: number;
  readonly totalLength: number;
}

export interface LexicalHit {
  readonly label: number;
  readonly score: number;
}

/**
 * One term's postings: internal document ids (ascending: ids are handed out in order and never reused) with their term
 * frequencies, in growable typed arrays. A removed document stays in the arrays until the list is compacted (its id
 * is dead: scoring skips it); `live` is the term's document frequency.
 *
 * `bound` is the largest tf·(k1+1) / (tf + k1·(1 - b + b·dl/avgdl)) over the list at avgdl = `boundAverage` (0: not
 * yet computed). That part of a document's score grows with avgdl, and never faster than in proportion to it, so
 * `bound · max(1, avgdl / boundAverage)` bounds it at any later avgdl; removals only lower the true maximum.
 */
class Posting {
  constructor(
    readonly id: number,
    readonly term: string,
  ) {}

  docs: Int32Array<ArrayBufferLike> = new Int32Array(4);
  /** Term frequencies: counts, weighted by field (multiples of 1/WEIGHT_STEP) when fields are weighed in. */
  tfs: Float32Array<ArrayBufferLike> = new Float32Array(4);
  length = 0;
  live = 0;
  bound = 0;
  boundAverage = 0;
}

/**
 * The index as flat arrays (lexical/saved-lexical.ts writes and reads them): its postings concatenated in vocabulary
 * order, and lengths and labels by internal id. Per-document term lists are not kept: they are the postings read the
 * other way, rebuilt by `Bm25Index.restore`.
 */
export interface Bm25State {
  readonly ids: number;
  readonly vocabulary: readonly string[];
  /** Where each term's postings end in `docs` and `tfs` (they start where the previous term's end). */
  readonly ends: Uint32Array;
  readonly docs: Int32Array;
  readonly tfs: Float32Array;
  /** By internal id, `ids` of each: the length (−1: removed) and the label. */
  readonly lengths: Float64Array;
  readonly labels: Float64Array;
}

/** `Bm25State` as the live index gives it to be written: each term's postings apart, views of the live lists. */
export interface Bm25Parts extends Omit<Bm25State, 'docs' | 'tfs'> {
  readonly docs: readonly Int32Array[];
  readonly tfs: readonly Float32Array[];
}

/** One query term as a search sees it: the posting arrays as they were when the search began. */
interface Cursor {
  readonly term: string;
  /** The term's position among the query's distinct terms (scores are summed in that order). */
  readonly order: number;
  readonly docs: Int32Array;
  readonly tfs: Float32Array;
  readonly length: number;
  readonly idf: number;
  /** An upper bound on the term's contribution to any document's score (MARGIN included). */
  readonly bound: number;
}

/**
 * Okapi BM25 over an in-memory inverted index with incremental add and delete. Postings are typed arrays of internal
 * document ids and term frequencies; document lengths (−1 once removed) and labels are typed arrays by id; the
 * running total gives avgdl. Saved beside the dense index and restored from it (`state`, `restore`), or rebuilt from
 * the store (it is derived data; see the corpus).
 *   idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5));  score = Σ idf · tf·(k1+1) / (tf + k1·(1 - b + b·dl/avgdl))
 * summed over the query's distinct terms (a repeated query term counts once), in the order they first occur.
 *
 * Fields (`options.fields`, BM25F with one length normalisation shared by the fields — Robertson, Zaragoza & Taylor
 * 2004): a document's tf is Σ w_f · tf_f over its text (w 1) and the weighed metadata fields it has, and its dl is
 * Σ w_f · dl_f; the formula above is unchanged. It is "the title repeated w times" for any real w. A per-field b
 * (full BM25F) measured no better on SciFact (docs/corpus.md) and would need a length per field per document.
 *
 * Top-k search prunes with MaxScore (Turtle & Flood 1995, as Lucene, PISA and Tantivy do): terms sorted by their
 * bound; those whose bounds together cannot lift a document past the k-th best score so far are only probed for
 * documents that the others already make competitive. It returns exactly what exhaustive scoring returns — the same
 * documents, the same scores to the bit (each kept document's score is summed in the exhaustive order), the same ties
 * by smaller label; `searchExhaustive` is that reference.
 */
export class Bm25Index {
  readonly #postings = new Map<string, Posting>();
  /** By term id: its postings while the term has any (a freed id goes to the next new term). */
  #byId: (Posting | undefined)[] = [];
  readonly #freeIds: number[] = [];
  /** By label: its internal id. */
  readonly #docOf = new Map<number, number>();
  /** By internal id: document length (field-weighted), or −1 once removed. */
  #lengths = new Float64Array(16);
  /** By internal id: the label. */
  #labels = new Float64Array(16);
  /**
   * Each document's distinct terms (term ids, first-occurrence order) and their frequencies, one after another in
   * internal-id order: a document's run starts at `#forwardStart[doc]` and ends where the next one's starts (the last
   * one's at `#forwardLength`). Flat typed arrays, not an array per document: about 8 bytes a term.
   */
  #forwardStart = new Float64Array(16);
  #forwardTerms = new Int32Array(64);
  #forwardTfs = new Float32Array(64);
  #forwardLength = 0;
  /**
   * A restored index's state while the runs of the documents it restored are not yet read out of its postings
   * (`#forwardRuns`): until then the forward arrays hold only the runs of documents added since, ids from
   * `pending.ids` on. Whatever reads a run first has them built (`#runsBuilt`).
   */
  #pending: Bm25State | undefined;
  #building: Promise<void> | undefined;
  /** Internal ids handed out so far (the next id). */
  #ids = 0;
  #totalLength = 0;
  /** Score accumulators for exhaustive search, reused (a search that yields mid-way holds its own). */
  readonly #accumulators: Float64Array[] = [];

  /** The weighed fields: name and weight (rounded to 1/WEIGHT_STEP), those of weight 0 left out. */
  readonly #fields: readonly (readonly [string, number])[];

  constructor(private readonly options: Bm25Options) {
    this.#fields = Object.entries(options.fields ?? {})
      .map(([name, weight]) => [name, Math.round(weight * WEIGHT_STEP) / WEIGHT_STEP] as const)
      .filter(([, weight]) => weight > 0);
  }

  get size(): number {
    return this.#docOf.size;
  }

  /**
   * The index as its saved file holds it, uncopied: each term's postings are views of the live lists, so the caller
   * keeps writes out until it has written them (saved-lexical.ts).
   */
  parts(): Bm25Parts {
    const vocabulary = [...this.#postings.keys()];
    const lists = vocabulary.map((term) => this.#postings.get(term)!);
    const ends = new Uint32Array(vocabulary.length);
    let total = 0;
    lists.forEach((posting, t) => (ends[t] = total += posting.length));
    const ids = this.#ids;
    return {
      ids,
      vocabulary,
      ends,
      docs: lists.map((posting) => posting.docs.subarray(0, posting.length)),
      tfs: lists.map((posting) => posting.tfs.subarray(0, posting.length)),
      lengths: this.#lengths.subarray(0, ids),
      labels: this.#labels.subarray(0, ids),
    };
  }

  /**
   * An index in the state `state` describes, built without analysing any text: each term's postings are views of the
   * state's arrays (exactly as long as the list, so the first append copies them). Each document's term list is the
   * postings read the other way: that is most of a restore's work (4 million postings: ~0.3 s), and only removals and
   * term counts need it, so it is left for `runsBuilt` (in time slices, once the index serves) or for the first of
   * them to come.
   */
  static async restore(options: Bm25Options, state: Bm25State, slice = new TimeSlice()): Promise<Bm25Index> {
    const index = new Bm25Index(options);
    const { vocabulary, ends, docs, tfs, lengths } = state;
    const removed = lengths.some((length) => length < 0);
    for (let t = 0, start = 0; t < vocabulary.length; start = ends[t++]!) {
      const posting = new Posting(t, vocabulary[t]!);
      posting.docs = docs.subarray(start, ends[t]);
      posting.tfs = tfs.subarray(start, ends[t]);
      posting.length = posting.docs.length;
      posting.live = removed ? liveIn(posting.docs, lengths) : posting.length;
      if (t % STEPS_PER_CHECK === 0) await slice.due();
      if (posting.live === 0) continue;
      index.#postings.set(posting.term, posting);
      index.#byId[t] = posting;
    }
    index.#restoreDocuments(state);
    return index;
  }

  /** `restore`'s second half: lengths, labels and each live document's label; the runs are pending. */
  #restoreDocuments(state: Bm25State): void {
    const { ids } = state;
    const capacity = Math.max(16, ids);
    this.#lengths = new Float64Array(capacity);
    this.#labels = new Float64Array(capacity);
    this.#forwardStart = new Float64Array(capacity);
    this.#lengths.set(state.lengths);
    this.#labels.set(state.labels);
    this.#ids = ids;
    this.#pending = state;
    for (let doc = 0; doc < ids; doc++) {
      if (state.lengths[doc]! < 0) continue;
      this.#docOf.set(state.labels[doc]!, doc);
      this.#totalLength += state.lengths[doc]!;
    }
  }

  /**
   * Resolves once every document's run of terms is built (at once, unless restored and not yet built): read out of
   * the restored postings in time slices, so that a removal after it holds the event loop for nothing.
   */
  runsBuilt(slice = new TimeSlice()): Promise<void> {
    if (this.#pending === undefined) return Promise.resolve();
    const pending = this.#pending;
    this.#building ??= (async () => {
      const runs = forwardRuns(pending);
      let step = runs.next();
      for (; !step.done; step = runs.next()) await slice.due();
      this.#installRuns(pending, step.value);
    })();
    return this.#building;
  }

  /** Builds the restored documents' runs now, if they are pending (what a removal or term count needs). */
  #runsNow(): void {
    const pending = this.#pending;
    if (pending === undefined) return;
    const runs = forwardRuns(pending);
    let step = runs.next();
    while (!step.done) step = runs.next();
    this.#installRuns(pending, step.value);
  }

  /** The restored documents' runs go first, then those of the documents added since, their starts moved on. */
  #installRuns(pending: Bm25State, restored: Runs): void {
    if (this.#pending !== pending) return;
    const added = this.#forwardLength;
    this.#pending = undefined;
    if (added === 0) {
      // Nothing added since the restore: the runs are the arrays just built (the next add grows them).
      this.#forwardStart.set(restored.starts);
      [this.#forwardTerms, this.#forwardTfs, this.#forwardLength] = [
        restored.terms,
        restored.tfs,
        restored.terms.length,
      ];
      return;
    }
    const terms = new Int32Array(restored.terms.length + added);
    const tfs = new Float32Array(terms.length);
    terms.set(restored.terms);
    terms.set(this.#forwardTerms.subarray(0, added), restored.terms.length);
    tfs.set(restored.tfs);
    tfs.set(this.#forwardTfs.subarray(0, added), restored.terms.length);
    const starts = new Float64Array(this.#forwardStart.length);
    starts.set(restored.starts);
    for (let doc = pending.ids; doc < this.#ids; doc++) starts[doc] = this.#forwardStart[doc]! + restored.terms.length;
    [this.#forwardStart, this.#forwardTerms, this.#forwardTfs] = [starts, terms, tfs];
    this.#forwardLength = terms.length;
  }

  /** Indexes `text` under `label`, with the weighed fields of `meta` (BM25F) when the options name any. */
  add(label: number, text: string, meta?: Readonly<Record<string, unknown>>): void {
    this.#addTerms(label, analyze(text, this.options), this.#fieldTermsNow(meta));
  }

  /**
   * `add` for a text of any length: analysed part by part in time slices, so indexing a 1 MB document (or one that
   * decomposes 18-fold) does not hold the event loop for its whole analysis (docs/architecture.md §9).
   */
  async addInSlices(
    label: number,
    text: string,
    slice: TimeSlice,
    meta?: Readonly<Record<string, unknown>>,
  ): Promise<void> {
    const terms = await analyzeInSlices(text, this.options, slice);
    this.#addTerms(label, terms, await this.#fieldTerms(meta, slice));
  }

  /** The analysed terms of each weighed field that `meta` holds text for, with the field's weight. */
  async #fieldTerms(
    meta: Readonly<Record<string, unknown>> | undefined,
    slice: TimeSlice,
  ): Promise<[readonly string[], number][]> {
    const fields: [readonly string[], number][] = [];
    if (meta === undefined) return fields;
    for (const [name, weight] of this.#fields) {
      const terms = await analyzeInSlices(fieldText(meta[name]), this.options, slice);
      if (terms.length > 0) fields.push([terms, weight]);
    }
    return fields;
  }

  /** `#fieldTerms` in one go, for `add`. */
  #fieldTermsNow(meta: Readonly<Record<string, unknown>> | undefined): [readonly string[], number][] {
    const fields: [readonly string[], number][] = [];
    for (const [name, weight] of meta === undefined ? [] : this.#fields) {
      const terms = analyze(fieldText(meta![name]), this.options);
      if (terms.length > 0) fields.push([terms, weight]);
    }
    return fields;
  }

  #addTerms(label: number, terms: readonly string[], fields: readonly [readonly string[], number][] = []): void {
    if (this.#docOf.has(label)) this.remove(label);
    const { counts, length } = countTerms(terms, fields);
    if (this.#ids === this.#lengths.length) this.#grow();
    const doc = this.#ids++;
    this.#lengths[doc] = length;
    this.#labels[doc] = label;
    this.#forwardStart[doc] = this.#forwardLength;
    this.#reserveForward(counts.size);
    for (const [term, tf] of counts) {
      const posting = this.#postings.get(term) ?? this.#newPosting(term);
      this.#forwardTerms[this.#forwardLength] = posting.id;
      this.#forwardTfs[this.#forwardLength++] = tf;
      if (posting.length === posting.docs.length) {
        posting.docs = grown(posting.docs);
        posting.tfs = grown(posting.tfs);
      }
      posting.docs[posting.length] = doc;
      posting.tfs[posting.length++] = tf;
      posting.live++;
      if (posting.boundAverage > 0) {
        posting.bound = Math.max(posting.bound, this.#saturation(tf, length, posting.boundAverage));
      }
    }
    this.#docOf.set(label, doc);
    this.#totalLength += length;
  }

  #newPosting(term: string): Posting {
    const posting = new Posting(this.#freeIds.pop() ?? this.#byId.length, term);
    this.#postings.set(term, posting);
    this.#byId[posting.id] = posting;
    return posting;
  }

  /** Room for `more` terms in the forward arrays (new arrays when it grows: a reader in flight keeps the old). */
  #reserveForward(more: number): void {
    if (this.#forwardLength + more <= this.#forwardTerms.length) return;
    const capacity = Math.max(2 * this.#forwardTerms.length, this.#forwardLength + more);
    const terms = new Int32Array(capacity);
    terms.set(this.#forwardTerms.subarray(0, this.#forwardLength));
    const tfs = new Float32Array(capacity);
    tfs.set(this.#forwardTfs.subarray(0, this.#forwardLength));
    [this.#forwardTerms, this.#forwardTfs] = [terms, tfs];
  }

  /** Where `doc`'s run of terms ends in the forward arrays. */
  #forwardEnd(doc: number): number {
    return doc + 1 < this.#ids ? this.#forwardStart[doc + 1]! : this.#forwardLength;
  }

  /** Removes a label; an unknown one is ignored (replay and retries are idempotent). */
  remove(label: number): void {
    const doc = this.#docOf.get(label);
    if (doc === undefined) return;
    this.#runsNow();
    // Dead before its lists are compacted below: a compaction keeps only live documents.
    this.#totalLength -= this.#lengths[doc]!;
    this.#lengths[doc] = -1;
    for (let i = this.#forwardStart[doc]!; i < this.#forwardEnd(doc); i++) {
      const posting = this.#byId[this.#forwardTerms[i]!]!;
      if (--posting.live === 0) {
        this.#postings.delete(posting.term);
        this.#byId[posting.id] = undefined;
        this.#freeIds.push(posting.id);
      } else if (posting.length - posting.live > Math.max(16, posting.live)) this.#compact(posting);
    }
    this.#docOf.delete(label);
    const dead = this.#ids - this.#docOf.size;
    if (dead > 4096 && dead > this.#docOf.size) this.#renumber();
  }

  /** tf·(k1+1) / (tf + k1·(1 - b + b·dl/avgdl)): a document's score for a term, short of the term's idf. */
  #saturation(tf: number, length: number, average: number): number {
    const { k1, b } = this.options;
    return (tf * (k1 + 1)) / (tf + k1 * (1 - b + (b * length) / average));
  }

  #grow(): void {
    const lengths = new Float64Array(this.#lengths.length * 2);
    lengths.set(this.#lengths);
    const labels = new Float64Array(this.#labels.length * 2);
    labels.set(this.#labels);
    const starts = new Float64Array(this.#forwardStart.length * 2);
    starts.set(this.#forwardStart);
    this.#forwardStart = starts;
    // New arrays, never resized in place: a search in flight keeps reading the ones it started with.
    this.#lengths = lengths;
    this.#labels = labels;
  }

  /** Drops removed documents from a list (into new arrays: a search in flight keeps the old ones). */
  #compact(posting: Posting): void {
    const docs = new Int32Array(Math.max(4, posting.live));
    const tfs = new Float32Array(docs.length);
    let kept = 0;
    for (let i = 0; i < posting.length; i++) {
      const doc = posting.docs[i]!;
      if (this.#lengths[doc]! < 0) continue;
      docs[kept] = doc;
      tfs[kept++] = posting.tfs[i]!;
    }
    posting.docs = docs;
    posting.tfs = tfs;
    posting.length = kept;
    posting.boundAverage = 0;
  }

  /**
   * Hands out internal ids afresh, densely and in the same order, once removed documents outnumber live ones (each
   * replacement of a label takes a new id). Everything is rebuilt into new arrays: a search in flight finishes on
   * the old ones.
   */
  #renumber(): void {
    const renamed = new Int32Array(this.#ids).fill(-1);
    const capacity = Math.max(16, 2 * this.#docOf.size);
    const lengths = new Float64Array(capacity);
    const labels = new Float64Array(capacity);
    const starts = new Float64Array(capacity);
    const terms = new Int32Array(Math.max(64, this.#forwardTerms.length));
    const tfs = new Float32Array(terms.length);
    let next = 0;
    let at = 0;
    for (let doc = 0; doc < this.#ids; doc++) {
      if (this.#lengths[doc]! < 0) continue;
      renamed[doc] = next;
      [lengths[next], labels[next], starts[next++]] = [this.#lengths[doc]!, this.#labels[doc]!, at];
      for (let i = this.#forwardStart[doc]!; i < this.#forwardEnd(doc); i++, at++) {
        [terms[at], tfs[at]] = [this.#forwardTerms[i]!, this.#forwardTfs[i]!];
      }
    }
    for (const [label, doc] of this.#docOf) this.#docOf.set(label, renamed[doc]!);
    this.#renumberPostings(renamed);
    [this.#lengths, this.#labels, this.#forwardStart] = [lengths, labels, starts];
    [this.#forwardTerms, this.#forwardTfs, this.#forwardLength] = [terms, tfs, at];
    this.#ids = next;
  }

  /** Each posting list with its documents' new ids, the removed ones dropped (into new arrays). */
  #renumberPostings(renamed: Int32Array): void {
    for (const posting of this.#postings.values()) {
      const docs = new Int32Array(Math.max(4, posting.live));
      const tfs = new Float32Array(docs.length);
      let kept = 0;
      for (let i = 0; i < posting.length; i++) {
        const doc = renamed[posting.docs[i]!]!;
        if (doc < 0) continue;
        docs[kept] = doc;
        tfs[kept++] = posting.tfs[i]!;
      }
      posting.docs = docs;
      posting.tfs = tfs;
      posting.length = kept;
    }
  }

  /**
   * BM25 split into its two sides, as term → weight maps over the analyzer's terms, so that the dot product of a
   * query's map and a document's map is that document's BM25 score for the query under this index's statistics:
   * a query weighs each distinct term 1; a document weighs each term idf · tf·(k1+1) / (tf + k1·(1 - b + b·dl/avgdl)),
   * with its own length dl and this index's N, df and avgdl (an empty index counts the text as its only document).
   */
  async termWeights(text: string, kind: 'query' | 'document', slice = new TimeSlice()): Promise<Map<string, number>> {
    const terms = await analyzeInSlices(text, this.options, slice);
    const weights = new Map<string, number>();
    if (kind === 'query') {
      for (const term of terms) weights.set(term, 1);
      return weights;
    }
    const counts = new Map<string, number>();
    for (const term of terms) counts.set(term, (counts.get(term) ?? 0) + 1);
    const n = this.size;
    const average = n === 0 ? terms.length : this.#totalLength / n;
    const { k1, b } = this.options;
    for (const [term, tf] of counts) {
      const df = this.documentFrequency(term);
      const idf = bm25Idf(n, df);
      weights.set(term, (idf * tf * (k1 + 1)) / (tf + k1 * (1 - b + (b * terms.length) / Math.max(average, 1e-9))));
    }
    return weights;
  }

  /** Documents containing `term` (an analyzed term). */
  documentFrequency(term: string): number {
    return this.#postings.get(term)?.live ?? 0;
  }

  /** Up to `limit` documents containing `term`. */
  labelsWith(term: string, limit: number): number[] {
    const posting = this.#postings.get(term);
    const labels: number[] = [];
    for (let i = 0; posting !== undefined && i < posting.length && labels.length < limit; i++) {
      const doc = posting.docs[i]!;
      if (this.#lengths[doc]! >= 0) labels.push(this.#labels[doc]!);
    }
    return labels;
  }

  /** Every analyzed term with its document frequency. */
  *vocabulary(): Iterable<[string, number]> {
    for (const [term, posting] of this.#postings) yield [term, posting.live];
  }

  /**
   * The term counts and length a text would be indexed with (as `addInSlices`): §7.7.1 a removed chunk read back from
   * the store is scored with exactly what the index held for it.
   */
  async countsOf(
    text: string,
    meta: Readonly<Record<string, unknown>> | undefined,
    slice: TimeSlice,
  ): Promise<{ counts: Map<string, number>; length: number }> {
    const terms = await analyzeInSlices(text, this.options, slice);
    return countTerms(terms, await this.#fieldTerms(meta, slice));
  }

  /** A query's distinct terms in first-occurrence order (§7.7.1 searches at an earlier version, bm25-at.ts). */
  queryTerms(query: string, slice: TimeSlice): Promise<Set<string>> {
    return this.#queryTerms(query, slice);
  }

  /**
   * What a search at an earlier version reads (bm25-at.ts), captured in one synchronous step as every search
   * captures them: writes after it make new arrays, except a removal, which marks its document's length −1 in place.
   */
  frame(terms: Iterable<string>): LexicalFrame {
    const postings = new Map<string, { docs: Int32Array; tfs: Float32Array; length: number }>();
    for (const term of terms) {
      const posting = this.#postings.get(term);
      if (posting !== undefined) postings.set(term, { docs: posting.docs, tfs: posting.tfs, length: posting.length });
    }
    return { lengths: this.#lengths, labels: this.#labels, postings, size: this.size, totalLength: this.#totalLength };
  }

  /** A live document's length (field-weighted); undefined for a label not indexed. */
  lengthOf(label: number): number | undefined {
    const doc = this.#docOf.get(label);
    return doc === undefined ? undefined : this.#lengths[doc];
  }

  /** A document's term counts and length, for pseudo-relevance feedback. */
  termCounts(label: number): { counts: Map<string, number>; length: number } | undefined {
    const doc = this.#docOf.get(label);
    if (doc === undefined) return undefined;
    this.#runsNow();
    const counts = new Map<string, number>();
    for (let i = this.#forwardStart[doc]!; i < this.#forwardEnd(doc); i++) {
      counts.set(this.#byId[this.#forwardTerms[i]!]!.term, this.#forwardTfs[i]!);
    }
    return { counts, length: this.#lengths[doc]! };
  }

  analyze(text: string): string[] {
    return analyze(text, this.options);
  }

  /** BM25's k1 and b. */
  get analyzerOptions(): AnalyzerOptions {
    return this.options;
  }

  /**
   * BM25 scores of the given labels (0 for labels without query terms or not indexed), for completing fused candidate
   * sets: each label is looked up in each query term's postings (a binary search), not found by a pass over them.
   */
  async scoreLabels(query: string, labels: readonly number[], slice = new TimeSlice()): Promise<number[]> {
    if (this.size === 0) return labels.map(() => 0);
    const queryTerms = await this.#queryTerms(query, slice);
    // N and avgdl as they are once the query is analysed (writes may have come meanwhile).
    const n = this.size;
    if (n === 0) return labels.map(() => 0);
    const average = this.#totalLength / n;
    const terms = this.#cursors(queryTerms, n, average).map(({ term, idf }) => ({ term, idf }));
    const scores: number[] = [];
    let steps = 0;
    for (const label of labels) {
      // Postings and ids are read afresh for each label: writes between slices may have renumbered the ids.
      const doc = this.#docOf.get(label);
      const length = doc === undefined ? 0 : this.#lengths[doc]!;
      let score = 0;
      for (let t = 0; doc !== undefined && t < terms.length; t++) {
        const posting = this.#postings.get(terms[t]!.term);
        if (posting === undefined) continue;
        const i = seek(posting.docs, 0, posting.length, doc);
        if (i < posting.length && posting.docs[i] === doc) {
          score += this.contribution(terms[t]!.idf, posting.tfs[i]!, length, average);
        }
      }
      scores.push(score);
      steps += terms.length + 1;
      if (steps >= STEPS_PER_CHECK) {
        steps = 0;
        await slice.due();
      }
    }
    return scores;
  }

  /** idf · tf·(k1+1) / (tf + k1·(1 - b + b·dl/avgdl)), operation for operation as exhaustive scoring has always done. */
  contribution(idf: number, tf: number, length: number, average: number): number {
    const { k1, b } = this.options;
    return (idf * tf * (k1 + 1)) / (tf + k1 * (1 - b + (b * length) / average));
  }

  /** A query's distinct terms in first-occurrence order, analysed in time slices (a query may decompose 18-fold). */
  async #queryTerms(query: string, slice: TimeSlice): Promise<Set<string>> {
    return new Set(await analyzeInSlices(query, this.options, slice));
  }

  /** The query's distinct indexed terms in first-occurrence order, with idf and a bound each. */
  #cursors(terms: ReadonlySet<string>, n: number, average: number): Cursor[] {
    const cursors: Cursor[] = [];
    let order = 0;
    for (const term of terms) {
      const posting = this.#postings.get(term);
      order++;
      if (posting === undefined) continue;
      const idf = bm25Idf(n, posting.live);
      const ratio = posting.boundAverage > 0 ? average / posting.boundAverage : 0;
      if (ratio === 0 || ratio > BOUND_DRIFT || ratio < 1 / BOUND_DRIFT) {
        let bound = 0;
        for (let i = 0; i < posting.length; i++) {
          const length = this.#lengths[posting.docs[i]!]!;
          if (length >= 0) bound = Math.max(bound, this.#saturation(posting.tfs[i]!, length, average));
        }
        posting.bound = bound;
        posting.boundAverage = average;
      }
      const scale = Math.max(1, average / posting.boundAverage);
      cursors.push({
        term,
        order: order - 1,
        docs: posting.docs,
        tfs: posting.tfs,
        length: posting.length,
        idf,
        bound: idf * posting.bound * scale * MARGIN,
      });
    }
    return cursors;
  }

  /**
   * The `k` best documents for `query`. A query of many common terms over a large corpus visits millions of
   * postings: the work runs in time slices (docs/architecture.md §9). Writes between slices are seen or not, as with
   * any read that overlaps a write; N and avgdl are those once the query is analysed.
   */
  async search(query: string, k: number, allow?: ReadonlySet<number>, slice = new TimeSlice()): Promise<LexicalHit[]> {
    if (this.size === 0 || k <= 0) return [];
    const terms = await this.#queryTerms(query, slice);
    const n = this.size;
    if (k >= n) return this.#exhaustive(terms, k, allow, slice);
    const average = this.#totalLength / n;
    const cursors = this.#cursors(terms, n, average);
    if (cursors.length === 0) return [];
    return this.#maxScore(cursors, k, average, allow, slice);
  }

  /**
   * `search` without pruning: every posting of every query term scored into an accumulator, term at a time. The
   * reference that pruned search must equal (tests and benchmarks), and the faster road when k covers the corpus.
   */
  async searchExhaustive(
    query: string,
    k: number,
    allow?: ReadonlySet<number>,
    slice = new TimeSlice(),
  ): Promise<LexicalHit[]> {
    if (this.size === 0 || k <= 0) return [];
    return this.#exhaustive(await this.#queryTerms(query, slice), k, allow, slice);
  }

  async #exhaustive(
    terms: ReadonlySet<string>,
    k: number,
    allow: ReadonlySet<number> | undefined,
    slice: TimeSlice,
  ): Promise<LexicalHit[]> {
    const n = this.size;
    if (n === 0) return [];
    const average = this.#totalLength / n;
    const cursors = this.#cursors(terms, n, average);
    if (cursors.length === 0) return [];
    const lengths = this.#lengths;
    const labels = this.#labels;
    const ids = this.#ids;
    let scores = this.#accumulators.pop();
    if (scores === undefined || scores.length < ids) scores = new Float64Array(Math.max(ids, 64));
    const touched: number[] = [];
    try {
      let steps = 0;
      for (const { docs, tfs, length: count, idf } of cursors) {
        for (let i = 0; i < count; i++) {
          const doc = docs[i]!;
          const length = lengths[doc]!;
          if (length < 0 || (allow !== undefined && !allow.has(labels[doc]!))) continue;
          const score = this.contribution(idf, tfs[i]!, length, average);
          if (scores[doc] === 0) touched.push(doc);
          scores[doc] = scores[doc]! + score;
          if (++steps % STEPS_PER_CHECK === 0) await slice.due();
        }
      }
      const top = new TopK(Math.min(k, touched.length));
      for (let i = 0; i < touched.length; i++) {
        const doc = touched[i]!;
        top.offer(scores[doc]!, labels[doc]!);
        if ((i + 1) % STEPS_PER_CHECK === 0) await slice.due();
      }
      return top.sorted();
    } finally {
      for (const doc of touched) scores[doc] = 0;
      this.#accumulators.push(scores);
    }
  }

  /**
   * MaxScore, document at a time. Cursors sorted by bound, ascending; `prefix[j]` is the sum of the first j bounds.
   * Once k documents are held and the k-th best score is θ, the first `e` cursors with prefix[e] < θ are
   * non-essential: a document found only in them cannot reach θ, so candidates come from the others, and the
   * non-essential ones are probed (best bound first) only while the document can still reach θ.
   */
  async #maxScore(
    unsorted: readonly Cursor[],
    k: number,
    average: number,
    allow: ReadonlySet<number> | undefined,
    slice: TimeSlice,
  ): Promise<LexicalHit[]> {
    const { m, docs, tfs, counts, idfs, orders, prefix } = columnsByBound(unsorted);
    const at = new Int32Array(m);
    const lengths = this.#lengths;
    const labels = this.#labels;
    const { k1, b } = this.options;
    // A candidate's contributions, by the term's query order, to sum them in the exhaustive order.
    const found = new Int32Array(m);
    const parts = new Float64Array(m);
    const top = new TopK(Math.min(k, this.size));
    let threshold = 0;
    let essential = 0; // cursors [0, essential) are non-essential
    let steps = 0;
    let nextCheck = STEPS_PER_CHECK;
    for (;;) {
      const doc = smallestNext(docs, at, counts, essential);
      if (doc === NO_DOC) break;
      const length = lengths[doc]!;
      const wanted = length >= 0 && (allow === undefined || allow.has(labels[doc]!));
      // The length part of the denominator, the same expression for every term (so the same bits as exhaustive).
      const norm = k1 * (1 - b + (b * length) / average);
      let partial = 0;
      let nfound = 0;
      for (let j = essential; j < m; j++) {
        const i = at[j]!;
        if (i < counts[j]! && docs[j]![i] === doc) {
          if (wanted) {
            const tf = tfs[j]![i]!;
            const part = (idfs[j]! * tf * (k1 + 1)) / (tf + norm);
            partial += part;
            found[nfound] = orders[j]!;
            parts[nfound++] = part;
          }
          at[j] = i + 1;
          steps++;
        }
      }
      if (wanted && (!top.full || (partial + prefix[essential]!) * MARGIN >= threshold)) {
        let competitive = true;
        for (let j = essential - 1; j >= 0; j--) {
          if (top.full && (partial + prefix[j + 1]!) * MARGIN < threshold) {
            competitive = false;
            break;
          }
          const i = seek(docs[j]!, at[j]!, counts[j]!, doc);
          at[j] = i;
          steps++;
          if (i < counts[j]! && docs[j]![i] === doc) {
            const tf = tfs[j]![i]!;
            const part = (idfs[j]! * tf * (k1 + 1)) / (tf + norm);
            partial += part;
            found[nfound] = orders[j]!;
            parts[nfound++] = part;
          }
        }
        if (competitive && (!top.full || partial * MARGIN >= threshold)) {
          if (top.offer(sumInQueryOrder(found, parts, nfound), labels[doc]!) && top.full) {
            threshold = top.worstScore;
            while (essential < m && prefix[essential + 1]! * MARGIN < threshold) essential++;
          }
        }
      }
      if (steps >= nextCheck) {
        nextCheck = steps + STEPS_PER_CHECK;
        await slice.due();
      }
    }
    return top.sorted();
  }
}

const NO_DOC = 0x7fffffff;

/** The cursors' columns, sorted by bound ascending, and `prefix[j]`: the sum of the first j bounds. */
function columnsByBound(unsorted: readonly Cursor[]) {
  const cursors = [...unsorted].sort((x, y) => x.bound - y.bound);
  const m = cursors.length;
  const prefix = new Float64Array(m + 1);
  for (let j = 0; j < m; j++) prefix[j + 1] = prefix[j]! + cursors[j]!.bound;
  return {
    m,
    prefix,
    docs: cursors.map((cursor) => cursor.docs),
    tfs: cursors.map((cursor) => cursor.tfs),
    counts: Int32Array.from(cursors, (cursor) => cursor.length),
    idfs: Float64Array.from(cursors, (cursor) => cursor.idf),
    orders: Int32Array.from(cursors, (cursor) => cursor.order),
  };
}

/** The smallest document id at the cursors [from, m): the next candidate (NO_DOC once they are all exhausted). */
function smallestNext(docs: readonly Int32Array[], at: Int32Array, counts: Int32Array, from: number): number {
  let doc = NO_DOC;
  for (let j = from; j < docs.length; j++) {
    if (at[j]! < counts[j]!) {
      const candidate = docs[j]![at[j]!]!;
      if (candidate < doc) doc = candidate;
    }
  }
  return doc;
}

/**
 * A candidate's score: its `n` term contributions summed in the exhaustive order, by each term's place in the query
 * (an insertion sort of a handful of terms), so a pruned score has the same bits as an exhaustive one.
 */
function sumInQueryOrder(found: Int32Array, parts: Float64Array, n: number): number {
  for (let x = 1; x < n; x++) {
    const order = found[x]!;
    const part = parts[x]!;
    let y = x - 1;
    for (; y >= 0 && found[y]! > order; y--) {
      found[y + 1] = found[y]!;
      parts[y + 1] = parts[y]!;
    }
    found[y + 1] = order;
    parts[y + 1] = part;
  }
  let score = 0;
  for (let x = 0; x < n; x++) score += parts[x]!;
  return score;
}

/** The first index in [from, to) whose id is ≥ `doc` (ids ascending): galloping, then binary search. */
function seek(docs: Int32Array, from: number, to: number, doc: number): number {
  if (from >= to || docs[from]! >= doc) return from;
  let step = 1;
  let low = from; // docs[low] < doc
  let high = from + 1;
  while (high < to && docs[high]! < doc) {
    low = high;
    step *= 2;
    high = low + step;
  }
  if (high > to) high = to;
  // docs[low] < doc, and high === to or docs[high] >= doc
  while (high - low > 1) {
    const middle = (low + high) >>> 1;
    if (docs[middle]! < doc) low = middle;
    else high = middle;
  }
  return high;
}

function grown<T extends Int32Array | Float32Array>(array: T): T {
  const next = new (array.constructor as new (length: number) => T)(array.length * 2);
  next.set(array);
  return next;
}

/**
 * The k best (score, label) pairs: best first, ties by smaller label; a bounded min-heap in typed arrays, its root
 * the worst kept pair.
 */
class TopK {
  readonly #scores: Float64Array;
  readonly #labels: Float64Array;
  #size = 0;

  private readonly k: number;

  constructor(k: number) {
    this.k = Math.max(0, Math.ceil(k)); // a fractional k keeps as many as `size < k` would
    this.#scores = new Float64Array(this.k);
    this.#labels = new Float64Array(this.k);
  }

  get full(): boolean {
    return this.#size === this.k;
  }

  /** The k-th best score (valid once full). */
  get worstScore(): number {
    return this.#scores[0]!;
  }

  /** Whether (x, xl) ranks after (y, yl). */
  static #worse(x: number, xl: number, y: number, yl: number): boolean {
    return x < y || (x === y && xl > yl);
  }

  /** Keeps the pair if it is among the k best so far; says whether it was kept. */
  offer(score: number, label: number): boolean {
    const scores = this.#scores;
    const labels = this.#labels;
    if (this.k === 0) return false;
    if (this.#size < this.k) {
      let i = this.#size++;
      while (i > 0) {
        const parent = (i - 1) >> 1;
        if (!TopK.#worse(score, label, scores[parent]!, labels[parent]!)) break;
        scores[i] = scores[parent]!;
        labels[i] = labels[parent]!;
        i = parent;
      }
      scores[i] = score;
      labels[i] = label;
      return true;
    }
    if (!TopK.#worse(scores[0]!, labels[0]!, score, label)) return false;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= this.#size) break;
      const right = left + 1;
      let child = left;
      if (right < this.#size && TopK.#worse(scores[right]!, labels[right]!, scores[left]!, labels[left]!))
        child = right;
      if (!TopK.#worse(scores[child]!, labels[child]!, score, label)) break;
      scores[i] = scores[child]!;
      labels[i] = labels[child]!;
      i = child;
    }
    scores[i] = score;
    labels[i] = label;
    return true;
  }

  sorted(): LexicalHit[] {
    const hits: LexicalHit[] = [];
    for (let i = 0; i < this.#size; i++) hits.push({ label: this.#labels[i]!, score: this.#scores[i]! });
    return hits.sort((x, y) => (TopK.#worse(x.score, x.label, y.score, y.label) ? 1 : -1));
  }
}

/** How many of a posting list's documents are live (their length is not −1). */
function liveIn(docs: Int32Array, lengths: Float64Array): number {
  let live = 0;
  for (let i = 0; i < docs.length; i++) if (lengths[docs[i]!]! >= 0) live++;
  return live;
}

/** The documents' runs of terms as `Bm25Index` keeps them: starts by internal id, then term ids and frequencies. */
interface Runs {
  readonly starts: Float64Array<ArrayBuffer>;
  readonly terms: Int32Array<ArrayBuffer>;
  readonly tfs: Float32Array<ArrayBuffer>;
}

/**
 * A restored state's runs, read the other way from its postings (term id = the term's place in the vocabulary):
 * yields every STEPS_PER_CHECK terms, so a caller may give the event loop back between, and returns the runs.
 */
function* forwardRuns({ ids, vocabulary, ends, docs, tfs }: Bm25State): Generator<void, Runs> {
  const counts = new Uint32Array(ids + 1);
  for (let i = 0; i < docs.length; i++) counts[docs[i]! + 1]!++;
  for (let doc = 0; doc < ids; doc++) counts[doc + 1]! += counts[doc]!;
  const terms = new Int32Array(docs.length);
  const frequencies = new Float32Array(docs.length);
  const filled = counts.slice(0, ids);
  for (let t = 0, start = 0; t < vocabulary.length; start = ends[t++]!) {
    for (let i = start, end = ends[t]!; i < end; i++) {
      const at = filled[docs[i]!]!++;
      terms[at] = t;
      frequencies[at] = tfs[i]!;
    }
    if (t % STEPS_PER_CHECK === STEPS_PER_CHECK - 1) yield;
  }
  return { starts: Float64Array.from(counts.subarray(0, ids)), terms, tfs: frequencies };
}
