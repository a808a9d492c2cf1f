import { bm25Idf, STEPS_PER_CHECK, type Bm25Index, type LexicalFrame } from '../../lexical/bm25.js';
import { TimeSlice } from '../../protocol/time-slice.js';
import type { VersionHistory } from './history.js';

/**
 * §7.7.1 BM25 as `version` scored it: N, avgdl and each term's document frequency of that version, from the live
 * index (less the chunks written after the version) and the history (the chunks removed since, with their terms).
 * Every contribution is the live index's expression with the same numbers, summed in query order, so a version gives
 * the same bits while it is current and after it (docs/architecture.md §5).
 *
 * Writes may come between slices. The frame's arrays stay as captured but for a removal's length −1 in place: a chunk
 * removed meanwhile is scored with the length the history took from the index at its removal, and the removed chunks
 * captured at the start are counted only from the history, never twice.
 */
export class LexicalAt {
  readonly #retired: Map<number, { counts: ReadonlyMap<string, number>; length: number }>;
  readonly #size: number;
  readonly #average: number;

  private constructor(
    private readonly index: Bm25Index,
    private readonly history: VersionHistory,
    private readonly version: number,
    private readonly terms: readonly string[],
    private readonly frame: LexicalFrame,
  ) {
    this.#retired = new Map([...history.retiredIn(version)]);
    let size = frame.size + this.#retired.size;
    let total = frame.totalLength;
    for (const { length } of this.#retired.values()) total += length;
    for (const label of history.addedAfter(version)) {
      const length = history.retired(label) === undefined ? index.lengthOf(label) : undefined;
      if (length === undefined) continue; // removed since, or not yet in the index: in neither count
      size--;
      total -= length;
    }
    this.#size = size;
    this.#average = size > 0 ? total / size : 1;
  }

  /** Captured in one synchronous step once the query is analysed. */
  static async open(index: Bm25Index, history: VersionHistory, version: number, query: string, signal?: AbortSignal) {
    const terms = [...(await index.queryTerms(query, new TimeSlice(signal)))];
    return new LexicalAt(index, history, version, terms, index.frame(terms));
  }

  /** The `k` best of the version's chunks (of `allow`, when given): score descending, then label. */
  async search(k: number, allow: ReadonlySet<number> | undefined, signal?: AbortSignal) {
    const slice = new TimeSlice(signal);
    const idfs = await this.#idfs(slice);
    const scores = new Map<number, number>();
    for (let t = 0; t < this.terms.length; t++) {
      await this.#eachPosting(this.terms[t]!, slice, (label, tf, length) => {
        if (allow !== undefined && !allow.has(label)) return;
        scores.set(label, (scores.get(label) ?? 0) + this.#contribution(idfs[t]!, tf, length));
      });
    }
    return [...scores]
      .map(([label, score]) => ({ label, score }))
      .sort((x, y) => y.score - x.score || x.label - y.label)
      .slice(0, Math.max(0, k));
  }

  /** The version's scores of given chunks (0 for one without the query's terms, or not in the version). */
  async scores(labels: readonly number[], signal?: AbortSignal): Promise<number[]> {
    const slice = new TimeSlice(signal);
    const idfs = await this.#idfs(slice);
    const scores: number[] = [];
    for (const label of labels) {
      const found = this.#countsOf(label);
      let score = 0;
      this.terms.forEach((term, t) => {
        const tf = found?.counts.get(term);
        if (tf !== undefined && found !== undefined) score += this.#contribution(idfs[t]!, tf, found.length);
      });
      scores.push(score);
      if (scores.length % 256 === 0) await slice.due();
    }
    return scores;
  }

  /** A chunk's terms as the version held them, or undefined when it is not in the version. */
  #countsOf(label: number): { counts: ReadonlyMap<string, number>; length: number } | undefined {
    const retired = this.#retired.get(label);
    if (retired !== undefined) return retired;
    if (!this.history.holdsLive(label, this.version)) return undefined;
    return this.index.termCounts(label) ?? this.history.retired(label);
  }

  /** Each query term's idf at the version: its document frequency counted over the version's chunks. */
  async #idfs(slice: TimeSlice): Promise<number[]> {
    const idfs: number[] = [];
    for (const term of this.terms) {
      let df = 0;
      await this.#eachPosting(term, slice, () => df++);
      idfs.push(bm25Idf(this.#size, df));
    }
    return idfs;
  }

  /** Calls `visit` for every chunk of the version that holds `term`: the live ones, then the removed ones. */
  async #eachPosting(term: string, slice: TimeSlice, visit: (label: number, tf: number, length: number) => void) {
    const posting = this.frame.postings.get(term);
    const { lengths, labels } = this.frame;
    for (let i = 0; posting !== undefined && i < posting.length; i++) {
      const doc = posting.docs[i]!;
      const label = labels[doc]!;
      if (this.#retired.has(label) || !this.history.holdsLive(label, this.version)) continue;
      const length = lengths[doc]! >= 0 ? lengths[doc]! : this.history.retired(label)?.length;
      if (length !== undefined) visit(label, posting.tfs[i]!, length);
      if ((i + 1) % STEPS_PER_CHECK === 0) await slice.due();
    }
    for (const [label, { counts, length }] of this.#retired) {
      const tf = counts.get(term);
      if (tf !== undefined) visit(label, tf, length);
    }
  }

  /** The live index's own expression, with the version's avgdl. */
  #contribution(idf: number, tf: number, length: number): number {
    return this.index.contribution(idf, tf, length, this.#average);
  }
}
