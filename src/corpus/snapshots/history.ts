import type { ChunkPlace } from '../ports.js';
import type { VersionRanges } from '../store/retired.js';
import type { DocumentOrigin } from '../store/writes.js';
import { WritesBySeq } from './writes-by-seq.js';

/** A removed chunk as a version before its removal held it: where it sat, and its lexical terms (BM25). */
export interface RetiredChunkFacts extends ChunkPlace {
  /** The write that added it, and the one that removed it. */
  readonly seq: number;
  readonly removedSeq: number;
  readonly counts: ReadonlyMap<string, number>;
  readonly length: number;
}

/** A removed or replaced document as the versions before its removal held it. */
export interface RetiredDocumentFacts {
  /** Its metadata as JSON: held as text (its size is what memory holds), parsed when read. */
  readonly metaJson: string;
  readonly origin: DocumentOrigin;
  readonly seq: number;
  readonly removedSeq: number;
}

/** What a term of a removed chunk's counts holds in memory, about (a Map entry; the string is the index's). */
const TERM_BYTES = 64;

/** What memory holds of a removed document, about: its metadata as text (UTF-16) and an entry. */
const documentBytes = (facts: RetiredDocumentFacts): number => 2 * facts.metaJson.length + TERM_BYTES;

/**
 * §7.7.1 snapshots, in memory (docs/architecture.md §5): what the versions from `floor` to the current one held
 * that the live indexes no longer say. A label belongs to version v when the write that added it is at or before v
 * and no write at or before v removed it; the live indexes hold the chunks of the current version, this holds when
 * each chunk written after the floor came, and each chunk removed after it (its place, its document's metadata, its
 * terms; its vector is kept by the dense index's worker, its text by the store). Changed only in a write's
 * synchronous switch (DerivedIndexes), so a reader sees one state between its awaits.
 */
export class VersionHistory {
  #floor: number;
  readonly #written = new WritesBySeq();
  readonly #retired = new Map<number, RetiredChunkFacts>();
  readonly #documents = new Map<string, RetiredDocumentFacts[]>();
  #holes: VersionRanges = [];
  /** What memory holds of the removed chunks and documents, about (see crowdedFloor). */
  #bytes = 0;
  #ownHoles: [number, number][] = [];

  /** `vectorBytes`: what the dense index's worker keeps of each removed chunk (its dimension × 4). */
  constructor(
    floor: number,
    private readonly vectorBytes: number,
  ) {
    this.#floor = floor;
  }

  /** The oldest version held whole. */
  get floor(): number {
    return this.#floor;
  }

  /** Whether `version` (at most the current one) is held whole: at or above the floor, in no hole. */
  serves(version: number): boolean {
    const inside = ([from, to]: readonly [number, number]) => from <= version && version <= to;
    return version >= this.#floor && !this.#holes.some(inside) && !this.#ownHoles.some(inside);
  }

  /** The versions served, in words, for an error's detail. */
  describe(current: number): string {
    const holes = [...this.#holes, ...this.#ownHoles].filter(([from, to]) => from <= current && to >= this.#floor);
    if (this.#floor > current) return 'no whole version until it applies the next write (it caught up several at once)';
    if (this.#floor === current) return `only the current version, ${current}`;
    const but =
      holes.length === 0
        ? ''
        : `, but not ${holes.map(([from, to]) => (from === to ? from : `${from}-${to}`)).join(', ')}`;
    return `versions ${this.#floor} to ${current}${but}`;
  }

  /** The holes the store records (a replica's catch-ups of several writes at once, retired.ts). */
  setHoles(holes: VersionRanges): void {
    this.#holes = holes;
  }

  /** A version this process applied without holding it whole (read back after later writes had pruned its rows). */
  addHole(version: number): void {
    this.#ownHoles.push([version, version]);
  }

  added(labels: Iterable<number>, seq: number): void {
    this.#written.added(labels, seq);
  }

  /** The write that added a chunk, when after the floor (else 0: before every version served). */
  writtenAt(label: number): number {
    return this.#written.seqOf(label);
  }

  retire(label: number, facts: RetiredChunkFacts): void {
    if (facts.seq >= facts.removedSeq || this.#retired.has(label)) return; // added and replaced in one write
    this.#retired.set(label, facts);
    this.#bytes += this.#chunkBytes(facts);
  }

  retireDocument(id: string, facts: RetiredDocumentFacts): void {
    if (facts.seq >= facts.removedSeq) return;
    const kept = this.#documents.get(id) ?? [];
    kept.push(facts);
    this.#documents.set(id, kept);
    this.#bytes += documentBytes(facts);
  }

  #chunkBytes(facts: RetiredChunkFacts): number {
    return this.vectorBytes + facts.counts.size * TERM_BYTES;
  }

  /** Whether a chunk the live indexes held belongs to `version` (written at or before it). */
  holdsLive(label: number, version: number): boolean {
    if (this.#written.seqOf(label) > version) return false;
    const removed = this.#retired.get(label)?.removedSeq;
    return removed === undefined || removed > version;
  }

  retired(label: number): RetiredChunkFacts | undefined {
    return this.#retired.get(label);
  }

  /** The removed chunks that belonged to `version`. */
  *retiredIn(version: number): Generator<[number, RetiredChunkFacts]> {
    for (const entry of this.#retired) if (entry[1].seq <= version && entry[1].removedSeq > version) yield entry;
  }

  /** The chunks written after `version` (some since removed: `retired` says which). */
  addedAfter(version: number): Generator<number> {
    return this.#written.after(version);
  }

  /** Document `id` as `version` held it, when a later write removed or replaced it. */
  documentAt(id: string, version: number): RetiredDocumentFacts | undefined {
    return this.#documents.get(id)?.find((facts) => facts.seq <= version && facts.removedSeq > version);
  }

  /**
   * The floor that keeps at most `maxChunks` removed chunks and about `maxBytes` of what memory holds of them (each
   * one's vector, its terms at TERM_BYTES each, its document's metadata as text): the oldest removals go first.
   */
  crowdedFloor(maxChunks: number, maxBytes: number): number {
    if (this.#retired.size <= maxChunks && this.#bytes <= maxBytes) return this.#floor;
    const chunks = [...this.#retired.values()].map((facts) => ({
      seq: facts.removedSeq,
      bytes: this.#chunkBytes(facts),
      chunks: 1,
    }));
    const documents = [...this.#documents.values()].flat().map((facts) => ({
      seq: facts.removedSeq,
      bytes: documentBytes(facts),
      chunks: 0,
    }));
    const removals = [...chunks, ...documents].sort((a, b) => b.seq - a.seq);
    let [bytes, count] = [0, 0];
    for (const removal of removals) {
      bytes += removal.bytes;
      count += removal.chunks;
      if (count > maxChunks || bytes > maxBytes) return Math.max(this.#floor, removal.seq);
    }
    return this.#floor;
  }

  /** Versions before `floor` are no longer served; what only they needed is forgotten. */
  moveFloor(floor: number): boolean {
    if (floor <= this.#floor) return false;
    this.#floor = floor;
    this.#ownHoles = this.#ownHoles.filter(([, to]) => to >= floor);
    this.#written.forget(floor);
    for (const [label, facts] of this.#retired) {
      if (facts.removedSeq > floor) continue;
      this.#retired.delete(label);
      this.#bytes -= this.#chunkBytes(facts);
    }
    for (const [id, kept] of this.#documents) {
      const left = kept.filter((facts) => facts.removedSeq > floor);
      for (const facts of kept) if (facts.removedSeq <= floor) this.#bytes -= documentBytes(facts);
      if (left.length === 0) this.#documents.delete(id);
      else this.#documents.set(id, left);
    }
    return true;
  }
}
