import type { Logger } from '../protocol/logger.js';
import { TimeSlice } from '../protocol/time-slice.js';
import type { TextKind } from '../models/index.js';
import type { ChunkCache } from './chunk-cache.js';
import { ChunkPlaces } from './chunk-places.js';
import { DenseIndex, savedIndexFiles, type DenseIndexOptions } from './hnsw/dense-index.js';
import { Bm25Index, type Bm25Options } from '../lexical/bm25.js';
import { readLexical, writeLexical } from '../lexical/saved-lexical.js';
import { companionOf } from './hnsw/saved-file.js';
import { multiQuery, rewriteQuery } from '../lexical/query-transform.js';
import type { ChunkPlace, DenseSearchOptions } from './ports.js';
import { lexicalText } from './prepare.js';
import type { CorpusStore, DocumentOrigin, RetiredChunk, RetiredDocument, WriteResult } from './store/corpus-store.js';
import { sameDigest } from './labels-digest.js';
import { cosineSimilarity, dotProduct } from '../protocol/vectors.js';
import { VersionHistory } from './snapshots/history.js';
import type { Retention } from './store/retired.js';
import { LexicalAt } from './snapshots/lexical-at.js';

/** Chunks per dense-index message while rebuilding or replaying. */
const REPLAY_BATCH = 1024;

export interface IndexSettings {
  readonly dir: string;
  readonly space: DenseIndexOptions['space'];
  readonly m: number;
  readonly efConstruction: number;
  readonly efSearch: number;
  readonly dimension: number;
  readonly bm25: Bm25Options;
  /** Whether this process writes its data dir (and so may save the dense index and prune what it covers). */
  readonly writable: boolean;
  /** §7.7.1 how many recent versions stay queryable (`index.snapshots`); absent: only the current one, not pinned. */
  readonly snapshots?: Pick<Retention, 'versions' | 'maxChunks' | 'maxBytes'> | undefined;
  /** Whether each document's text bytes are counted (a quota in bytes): read at start only then. */
  readonly textBytes?: boolean | undefined;
}

/**
 * What the corpus derives from its store of record (docs/architecture.md §5), kept in step with it: the dense index
 * (HNSW in its worker), the lexical index (BM25), and, in memory for recall-time filtering and hit assembly, each
 * chunk's place and each document's metadata and origin. Loaded at start, then changed only by `apply` of a
 * committed write, in commit order (the Corpus serialises writes).
 */
export class DerivedIndexes {
  readonly #dense = new DenseIndex();
  #lexical: Bm25Index;
  readonly #chunkPlace = new ChunkPlaces();
  #savedSeq = 0;
  /**
   * The last write in both indexes, not only in the store (whose seq moves at its commit, before the indexes take
   * the write): the indexVersion a retrieve reports (§7.7.1), and what a replica has applied (read-your-writes).
   */
  #appliedSeq = 0;
  /** §7.7.1 what the recent versions held that the live indexes no longer say (snapshots/history.ts). */
  #history: VersionHistory | undefined;

  constructor(
    private readonly store: CorpusStore,
    private readonly settings: IndexSettings,
    private readonly chunks: ChunkCache | undefined,
    private readonly log: Logger,
  ) {
    this.#lexical = new Bm25Index(settings.bm25);
  }

  get appliedSeq(): number {
    return this.#appliedSeq;
  }

  /** §7.7.1 the recent versions this process serves, when snapshots are on. */
  get history(): VersionHistory | undefined {
    return this.#history;
  }

  /**
   * Loads the newest saved dense index and replays the store's writes after it (a rebuild when none verifies), and
   * the maps and the newest saved lexical index, brought up to date from the store (rebuilt from every chunk's text
   * when none verifies), in time slices. Returns the seqs the two were loaded at (0: rebuilt).
   */
  load(): Promise<{ dense: number; lexical: number }> {
    // One snapshot of the store: other processes write on while this one loads, and the indexes must be of one seq.
    return this.store.snapshot(() => this.#load());
  }

  async #load(): Promise<{ dense: number; lexical: number }> {
    // The dense index loads in its worker while this thread reads the maps and the lexical index: each is checked
    // on its own (a digest, then the store), so neither waits for the other.
    const [dense, lexical] = await Promise.all([this.#loadDense(), this.#loadMapsAndLexical()]);
    this.#savedSeq = dense;
    this.#appliedSeq = this.store.seq;
    await this.#loadHistory();
    // The restored lexical index's runs of terms, in time slices once serving (see Bm25Index.restore).
    void this.#lexical.runsBuilt();
    return { dense, lexical };
  }

  /**
   * §7.7.1 the recent versions, read back from the store (inside the load's snapshot): when each chunk written after
   * the floor came, and the chunks and documents removed after it, their terms analysed as the lexical index analyses
   * and their vectors handed to the dense index's worker.
   */
  async #loadHistory(): Promise<void> {
    const snapshots = this.settings.snapshots;
    if (snapshots === undefined) return;
    const floor = Math.max(this.store.snapshotFloor, this.store.seq - snapshots.versions + 1, 0);
    const history = new VersionHistory(floor, this.settings.dimension * 4);
    history.setHoles(this.store.snapshotHoles);
    const documents = new Map<string, RetiredDocument>();
    for (const document of this.store.retiredDocuments(history.floor)) {
      history.retireDocument(document.id, document);
      documents.set(`${document.id}\0${document.removedSeq}`, document);
    }
    const written = this.store.chunkSeqsAfter(history.floor);
    const removed: RetiredChunk[] = [];
    const slice = new TimeSlice();
    for (const chunk of this.store.retiredChunks(history.floor)) {
      const metaJson = documents.get(`${chunk.docId}\0${chunk.removedSeq}`)?.metaJson;
      const meta = metaJson === undefined ? undefined : (JSON.parse(metaJson) as Record<string, unknown>);
      const terms = await this.#lexical.countsOf(lexicalText(chunk.text, chunk.context), meta, slice);
      const { docId, ordinal, seq, removedSeq } = chunk;
      history.retire(chunk.label, { docId, ordinal, ...terms, seq, removedSeq });
      if (seq > history.floor) written.push({ label: chunk.label, seq });
      removed.push(chunk);
      await slice.due();
    }
    written.sort((x, y) => x.seq - y.seq); // the history takes writes in seq order
    for (const { label, seq } of written) history.added([label], seq);
    history.moveFloor(history.crowdedFloor(snapshots.maxChunks, snapshots.maxBytes));
    const kept = removed.filter((chunk) => chunk.removedSeq > history.floor);
    await this.#dense.keep(written, kept, this.settings.dimension);
    await this.#dense.forget(history.floor);
    this.#history = history;
  }

  /** The documents' metadata and origins, then the lexical index and the chunks' places (in time slices). */
  async #loadMapsAndLexical(): Promise<number> {
    // In time slices: requests that arrive meanwhile are read and wait for readiness, and ping is answered.
    const slice = new TimeSlice();
    await this.#loadDocuments(slice);
    return this.#loadLexical(slice);
  }

  async #loadDocuments(slice: TimeSlice): Promise<void> {
    for (const { id, meta, origin, bytes } of this.store.documentMetas(this.settings.textBytes === true)) {
      this.#chunkPlace.setDocument(id, meta, origin, bytes);
      if (slice.spent()) await slice.due();
    }
  }

  /**
   * The newest saved lexical index that verifies, brought up to the store, and every chunk placed; rebuilt from every
   * chunk's text when there is none, or it then disagrees with the store. Returns the seq it was loaded at (0:
   * rebuilt).
   */
  async #loadLexical(slice: TimeSlice): Promise<number> {
    const restored = await this.#newestLexical();
    if (restored !== undefined) this.#lexical = restored.index;
    const lexicalSeq = restored?.seq ?? 0;
    await this.#placeChunks(lexicalSeq, slice);
    if (lexicalSeq === 0 || this.#lexical.size === this.#chunkPlace.size) return lexicalSeq;
    this.log.warn({ dir: this.settings.dir }, 'saved lexical index disagrees with the store; rebuilding it');
    this.#lexical = new Bm25Index(this.settings.bm25);
    this.#chunkPlace.clear();
    await this.#loadDocuments(slice);
    await this.#placeChunks(0, slice);
    return 0;
  }

  /** The lexical index saved with the newest dense index at or before the store's seq whose file verifies. */
  async #newestLexical(): Promise<{ index: Bm25Index; seq: number } | undefined> {
    for (const { seq, file } of savedIndexFiles(this.settings.dir)) {
      if (seq > this.store.seq) continue; // another process's newer save
      const index = await this.#readLexical(companionOf(file), seq);
      if (index !== undefined) return { index, seq };
    }
    return undefined;
  }

  /**
   * Every chunk placed, and the lexical index brought up to the store: the text of each chunk written after
   * `lexicalSeq` analysed and added (every chunk's when 0: a rebuild), the removals after it taken out.
   */
  async #placeChunks(lexicalSeq: number, slice: TimeSlice): Promise<void> {
    // With a saved lexical index every chunk is placed from its place alone (a few columns, not its text and vector),
    // and only the texts written after the save are read; a rebuild places each chunk as it reads its text.
    if (lexicalSeq > 0) {
      for (const { label, doc_id: docId, ordinal } of this.store.chunkPlaces()) {
        this.#chunkPlace.set(label, docId, ordinal);
        if (slice.spent()) await slice.due();
      }
    }
    for (const { label, docId, ordinal, text, context } of this.store.chunkTexts(lexicalSeq)) {
      if (lexicalSeq === 0) this.#chunkPlace.set(label, docId, ordinal);
      await this.#lexical.addInSlices(label, lexicalText(text, context), slice, this.#chunkPlace.metaOf(docId));
      await slice.due();
    }
    if (lexicalSeq === 0) return;
    const removed = this.store.tombstonesAfter(lexicalSeq);
    if (removed.length > 0) await this.#lexical.runsBuilt(slice);
    for (const label of removed) this.#lexical.remove(label);
  }

  /** The lexical index in `file`, if it verifies as saved at `seq` of this store with these settings. */
  async #readLexical(file: string, seq: number): Promise<Bm25Index | undefined> {
    const restored = await readLexical(file, { seq, store: this.store.id, options: this.settings.bm25 });
    if (typeof restored !== 'string') return restored;
    this.log.warn({ dir: this.settings.dir, file, reason: restored }, 'saved lexical index not used; rebuilding it');
    return undefined;
  }

  /**
   * The newest saved dense index that verifies, with the store's writes after it replayed; rebuilt from every chunk's
   * vector when none does. Returns the seq it was loaded at (0: rebuilt).
   */
  async #loadDense(): Promise<number> {
    const store = { id: this.store.id, seq: this.store.seq };
    const { seq, discarded } = await this.#dense.open(this.settings.dir, this.#denseOptions(), store, {
      keep: !this.settings.writable,
    });
    for (const reason of discarded) this.log.warn({ dir: this.settings.dir, reason }, 'saved dense index discarded');
    if (seq === 0 && this.store.counts().chunks > 0) {
      this.log.warn({ dir: this.settings.dir }, 'no usable saved dense index; rebuilding it from the store');
    }
    await this.#replay(seq);
    // The store is the truth: a dense index that holds other labels than the store's chunks (a file that lied about
    // what it held, rows relabelled since) is rebuilt from it.
    if (seq > 0 && !sameDigest(await this.#dense.labelsDigest(), this.store.labelsDigest())) {
      this.log.warn({ dir: this.settings.dir }, 'dense index disagrees with the store; rebuilding');
      await this.#dense.reset(this.#denseOptions());
      await this.#replay(0);
      return 0;
    }
    return seq;
  }

  /** Replay: chunks written after `savedSeq` (all of them on a rebuild), then removals after it. */
  async #replay(savedSeq: number): Promise<void> {
    const { dimension } = this.settings;
    let labels: number[] = [];
    let vectors: Float32Array[] = [];
    for (const chunk of this.store.chunks(savedSeq)) {
      labels.push(chunk.label);
      vectors.push(chunk.vector);
      if (labels.length === REPLAY_BATCH) {
        await this.#dense.add(labels, vectors, dimension);
        [labels, vectors] = [[], []];
      }
    }
    if (labels.length > 0) await this.#dense.add(labels, vectors, dimension);
    await this.#dense.remove(this.store.tombstonesAfter(savedSeq));
  }

  #denseOptions(): DenseIndexOptions {
    const { space, dimension, m, efConstruction, efSearch } = this.settings;
    return { space, dimension, m, efConstruction, efSearch, initialCapacity: 1024 };
  }

  /**
   * Applies a committed write to both indexes and the maps, so that a reader never sees two versions of a document
   * at once (§7.10). Recall keeps only placed labels (a label's place is how a hit names the client's document), so:
   * the new chunks go into both indexes unplaced, then in one synchronous step they are placed and the replaced ones
   * unplaced and taken out of the lexical index, then they leave the dense index. (A search made before that step
   * and filtered after it may miss the document for that one request: no version of it was in its list.)
   */
  async apply(write: WriteResult): Promise<void> {
    const removed = new Set(write.removed);
    // A document given twice in one batch: its first chunks were replaced inside the same transaction.
    const added = write.added.filter((chunk) => !removed.has(chunk.label));
    // §7.7.1 before either index holds them: a search at an earlier version never counts them.
    this.#history?.added(
      added.map((chunk) => chunk.label),
      write.seq,
    );
    // The HNSW insert runs in its worker while BM25 analyses on this thread: a bulk ingest spends most of a write
    // in the two (docs/corpus.md, "Vectors embedded elsewhere").
    const dense =
      added.length > 0
        ? this.#dense.add(
            added.map((chunk) => chunk.label),
            added.map((chunk) => chunk.vector),
            this.settings.dimension,
            this.#history === undefined ? undefined : write.seq,
          )
        : Promise.resolve(0);
    // Handled here, awaited below: a failed insert is this write's error, not an unhandled rejection meanwhile.
    dense.catch(() => undefined);
    await this.#addLexical(added, new Map(write.written.map(({ id, meta }) => [id, meta])));
    // A removal reads its document's run of terms: built in slices if the restored index has not built them yet.
    if (removed.size > 0) await this.#lexical.runsBuilt();
    await dense;
    // §7.7.1 the worker learns which vectors to keep before this write becomes a version a search may pin.
    if (this.#history !== undefined && removed.size > 0) await this.#dense.removing([...removed], write.seq);
    this.#switch(write, added, removed);
    if (removed.size > 0) await this.#dense.remove([...removed]);
    if (this.#history !== undefined) await this.#moveFloor(write);
  }

  /**
   * The step a reader cannot see into: the write's chunks and documents become the corpus, at its seq. The replaced
   * chunks leave the lexical index here too: its N, df and avgdl score every hit, so a search that sees this seq must
   * not count them (the dense index scores each vector alone, and unplaced labels are never hits).
   */
  #switch(write: WriteResult, added: WriteResult['added'], removed: ReadonlySet<number>): void {
    if (this.#history !== undefined) this.#retire(this.#history, removed, write.seq);
    for (const chunk of added) this.#chunkPlace.set(chunk.label, chunk.docId, chunk.ordinal);
    for (const label of removed) {
      this.#chunkPlace.delete(label);
      this.#lexical.remove(label);
      this.chunks?.delete(label);
    }
    // A deleted document went with its last chunk.
    for (const { id, meta, origin, bytes } of write.written) this.#chunkPlace.setDocument(id, meta, origin, bytes);
    this.#appliedSeq = Math.max(this.#appliedSeq, write.seq);
  }

  /**
   * §7.7.1: the chunks write `seq` removes, and their documents, as the versions before it held them (read from the
   * live indexes and maps before the switch changes them).
   */
  #retire(history: VersionHistory, removed: ReadonlySet<number>, seq: number): void {
    const documents = new Map<string, number>();
    for (const label of removed) {
      const place = this.#chunkPlace.get(label);
      const terms = this.#lexical.termCounts(label);
      if (place === undefined || terms === undefined) continue;
      const written = history.writtenAt(label);
      history.retire(label, { ...place, ...terms, seq: written, removedSeq: seq });
      documents.set(place.docId, Math.max(documents.get(place.docId) ?? 0, written));
    }
    for (const [id, written] of documents) {
      const [metaJson, origin] = [JSON.stringify(this.#chunkPlace.metaOf(id)), this.#chunkPlace.originOf(id)];
      history.retireDocument(id, { metaJson, origin, seq: written, removedSeq: seq });
    }
  }

  /**
   * After write `write.seq`: versions past the window, past what the store still keeps of removed rows (another
   * process may keep fewer), or past the memory bound are no longer served; nor are the store's holes (a replica's
   * catch-ups). A write read back after later ones (`partial`) may lack what they removed: its own version is not
   * served either.
   */
  async #moveFloor(write: WriteResult): Promise<void> {
    const history = this.#history!;
    const { versions, maxChunks, maxBytes } = this.settings.snapshots!;
    const floor = Math.max(
      write.seq - versions + 1,
      this.store.snapshotFloor,
      history.crowdedFloor(maxChunks, maxBytes),
    );
    history.setHoles(this.store.snapshotHoles);
    if (write.partial === true) history.addHole(write.seq);
    if (history.moveFloor(floor)) await this.#dense.forget(floor);
  }

  /**
   * Analysing long texts for BM25 is CPU work on the event loop: in time slices (docs/architecture.md §9). A chunk's
   * lexical fields (index.bm25.fields) come from its document's metadata, as written in this batch.
   */
  async #addLexical(added: WriteResult['added'], written: Map<string, Record<string, unknown>>): Promise<void> {
    const slice = new TimeSlice();
    for (const chunk of added) {
      const meta = written.get(chunk.docId) ?? this.#chunkPlace.metaOf(chunk.docId);
      await this.#lexical.addInSlices(chunk.label, lexicalText(chunk.text, chunk.context), slice, meta);
      await slice.due();
    }
  }

  /**
   * Applies, in seq order, the writes other processes committed after this one's indexes, through `through` (the
   * store's head unless said): read back from the store (docs/architecture.md §5).
   */
  async follow(through = this.store.seq): Promise<void> {
    for (let seq = this.#appliedSeq + 1; seq <= through; seq++) {
      const write = await this.store.writeOf(seq);
      // A document whose chunks went and that the store no longer holds was deleted (a document has a chunk).
      const written = new Set(write.written.map(({ id }) => id));
      const gone = new Set(write.removed.map((label) => this.#chunkPlace.docOf(label)));
      const deletedIds = [...gone].filter(
        (id): id is string => id !== undefined && !written.has(id) && this.store.hashOf(id) === undefined,
      );
      await this.apply({ ...write, deletedIds });
    }
  }

  /**
   * Saves the dense index at the seq it has applied, if it moved since the last save. The tombstones the previous
   * save covered are pruned: a process following the store stays one save interval clear of the pruning.
   */
  async save(): Promise<void> {
    const seq = this.#appliedSeq;
    if (seq === this.#savedSeq) return;
    const { dir, space, dimension } = this.settings;
    const lexical = { seq, store: this.store.id, options: this.settings.bm25 };
    await this.#dense.save(dir, seq, { space, dimension, store: this.store.id }, (file) =>
      writeLexical(file, this.#lexical, lexical),
    );
    await this.store.pruneTombstones(this.#savedSeq);
    this.#savedSeq = seq;
  }

  /**
   * Dense recall: cosine similarity (or dot product for `ip`), best first; `allow` restricts labels during search.
   * `version`: §7.7.1 every vector an earlier version held, scored exactly (the worker keeps the removed ones).
   */
  async searchDense(
    vector: Float32Array,
    k: number,
    allow?: readonly number[],
    signal?: AbortSignal,
    caller?: string,
    { exact = false, version }: DenseSearchOptions & { version?: number } = {},
  ): Promise<{ label: number; score: number }[]> {
    const neighbours = await this.#dense.search(vector, k, k, allow, signal, caller, exact, version);
    return neighbours.map(({ label, distance }) => ({ label, score: 1 - distance }));
  }

  /** Lexical recall: BM25, best first; `allow` restricts labels while scoring the postings. */
  searchLexical(query: string, k: number, allow?: ReadonlySet<number>, signal?: AbortSignal) {
    return this.#lexical.search(query, k, allow, new TimeSlice(signal));
  }

  lexicalScores(query: string, labels: readonly number[], signal?: AbortSignal): Promise<number[]> {
    return this.#lexical.scoreLabels(query, labels, new TimeSlice(signal));
  }

  termWeights(text: string, kind: TextKind, signal?: AbortSignal): Promise<Map<string, number>> {
    return this.#lexical.termWeights(text, kind, new TimeSlice(signal));
  }

  /** §7.8 query transformation from the lexical index's statistics and the texts of the chunks it names. */
  async transformQuery(query: string, method: 'rewrite' | 'multi-query', n: number, signal?: AbortSignal) {
    const textOf = (label: number) => this.store.getChunk(label)?.text ?? '';
    if (method === 'rewrite') {
      const textsOf = (term: string) => this.#lexical.labelsWith(term, 3).map(textOf);
      return [await rewriteQuery(query, this.#lexical, textsOf, new TimeSlice(signal))];
    }
    return multiQuery(query, n, this.#lexical, textOf, new TimeSlice(signal));
  }

  /** Labels of chunks whose document metadata satisfies `predicate` (for filtered recall), in time slices. */
  async labelsWhere(predicate: (meta: Record<string, unknown>) => boolean, signal?: AbortSignal): Promise<number[]> {
    const slice = new TimeSlice(signal);
    const labels: number[] = [];
    for (const [label, docId] of this.#chunkPlace.entries()) {
      if (predicate(this.#chunkPlace.metaOf(docId))) labels.push(label);
      // After every document: one document's test may cost milliseconds (§8 filters of 1,024 `contains` nodes over
      // 20 KB values: 16 documents between checks held other clients ~75 ms a turn).
      if (slice.spent()) await slice.due();
    }
    return labels;
  }

  placeOf(label: number): ChunkPlace | undefined {
    return this.#chunkPlace.get(label);
  }

  /** Each label's similarity to `vector` from its stored vector (`stored`); -1 for a label not stored. */
  similarities(vector: Float32Array, labels: readonly number[], stored: ReadonlyMap<number, Float32Array>): number[] {
    const similarity = this.settings.space === 'cosine' ? cosineSimilarity : dotProduct;
    return labels.map((label) => {
      const found = stored.get(label);
      return found === undefined ? -1 : similarity(found, vector);
    });
  }

  /** §7.7.1 BM25 at an earlier version (lexical-at.ts), once the query is analysed. */
  lexicalAt(version: number, query: string, signal?: AbortSignal): Promise<LexicalAt> {
    return LexicalAt.open(this.#lexical, this.#history!, version, query, signal);
  }

  /**
   * §7.7.1 the labels of `version` whose document then satisfied `predicate`: the live chunks it held, then the
   * removed ones (a chunk removed while this runs is in both passes: once in the answer).
   */
  async labelsWhereAt(
    version: number,
    predicate: (meta: Record<string, unknown>) => boolean,
    signal?: AbortSignal,
  ): Promise<number[]> {
    const history = this.#history!;
    const slice = new TimeSlice(signal);
    const labels = new Set<number>();
    for (const [label, docId] of this.#chunkPlace.entries()) {
      if (history.holdsLive(label, version) && predicate(this.metaAt(version, docId))) labels.add(label);
      if (slice.spent()) await slice.due();
    }
    for (const [label, facts] of history.retiredIn(version)) {
      if (predicate(this.metaAt(version, facts.docId))) labels.add(label);
      if (slice.spent()) await slice.due();
    }
    return [...labels];
  }

  /** Where a chunk of `version` sat; undefined for a label the version did not hold. */
  placeAt(version: number, label: number): ChunkPlace | undefined {
    const history = this.#history!;
    const retired = history.retired(label);
    if (retired !== undefined) return retired.seq <= version && retired.removedSeq > version ? retired : undefined;
    return history.holdsLive(label, version) ? this.#chunkPlace.get(label) : undefined;
  }

  /** A document's metadata and origin as `version` held it. */
  documentAt(version: number, id: string): { meta: Record<string, unknown>; origin: DocumentOrigin } {
    const removed = this.#history?.documentAt(id, version);
    if (removed === undefined) return { meta: this.metaOf(id), origin: this.originOf(id) };
    return { meta: JSON.parse(removed.metaJson) as Record<string, unknown>, origin: removed.origin };
  }

  metaAt(version: number, id: string): Record<string, unknown> {
    return this.documentAt(version, id).meta;
  }

  originOf(documentId: string): DocumentOrigin {
    return this.#chunkPlace.originOf(documentId);
  }

  metaOf(documentId: string): Record<string, unknown> {
    return this.#chunkPlace.metaOf(documentId);
  }

  /** The documents the indexes hold, whether they hold `id`, and the bytes of their texts (where counted). */
  get documents(): Pick<ChunkPlaces, 'documents' | 'hasDocument' | 'textBytes' | 'bytesOf'> {
    return this.#chunkPlace;
  }

  async counts(): Promise<{ dense: number; lexical: number }> {
    return { dense: await this.#dense.count(), lexical: this.#lexical.size };
  }

  close(): Promise<void> {
    return this.#dense.close();
  }
}
