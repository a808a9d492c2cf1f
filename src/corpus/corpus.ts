import { createHash, randomUUID } from 'node:crypto';
import { RpcErrorCode } from '../protocol/codes.js';
import { RpcError } from '../protocol/errors.js';
import type { Logger } from '../protocol/logger.js';
import { TimeSlice } from '../protocol/time-slice.js';
import { cosineSimilarity, dotProduct } from '../protocol/vectors.js';
import { requireWellFormed } from '../protocol/validation.js';
import { DenseIndex, type DenseIndexOptions } from './hnsw/dense-index.js';
import { Bm25Index, type Bm25Options } from './lexical/bm25.js';
import { multiQuery, rewriteQuery } from './lexical/query-transform.js';
import type { ChunkBody, ChunkPlace, CorpusDocument, CorpusReader, CorpusWriter, WriteCaller } from './ports.js';
import type { Encoder, ModelHealth } from '../models/index.js';
import {
  CorpusStore,
  type NewDocument,
  type DocumentOrigin,
  type StoredDocument,
  type WriteResult,
} from './store/corpus-store.js';
import { StoreError } from './store/dir-lock.js';
import { Replica, type ReplicaTarget } from './replica.js';
import { ChunkCache } from './chunk-cache.js';
import { chunkText } from './chunking.js';
import { validateMetadata, type FieldType, type MetadataLimits } from './metadata.js';
import { StartupError } from '../startup-error.js';

export interface CorpusSettings {
  readonly dir: string;
  readonly space: DenseIndexOptions['space'];
  readonly m: number;
  readonly efConstruction: number;
  readonly efSearch: number;
  readonly saveIntervalMs: number;
  readonly maxDocumentBytes: number;
  readonly metadata: MetadataLimits;
  readonly fields: Readonly<Record<string, FieldType>>;
  readonly bm25: Bm25Options;
  /** `index.writable`; false: nothing in the dir is ever written (it may be on a read-only filesystem). */
  readonly writable?: boolean | undefined;
  /**
   * A PostgreSQL store of record shared by replicas (`store.url`): the data dir then holds this replica's snapshot of
   * it, written only by catching up (replica.ts).
   */
  readonly store?: { readonly url: string; readonly pollMs: number } | undefined;
  /** `index.chunkCacheBytes`: chunk texts kept in memory for building hits; 0 or absent reads each from the store. */
  readonly chunkCacheBytes?: number | undefined;
}

export interface AddOptions extends WriteCaller {
  /** `operator` for `rcp-server ingest`; everything over the wire is `client` (§15.2). */
  readonly origin?: DocumentOrigin | undefined;
  readonly chunk: boolean;
  readonly contextual: boolean;
  readonly idempotencyKey?: string | undefined;
}

export interface AddResult {
  readonly ids: string[];
  readonly chunks: number;
  readonly indexVersion: string;
}

export interface CorpusStats {
  readonly documents: number;
  readonly chunks: number;
  readonly dense: number;
  readonly lexical: number;
  readonly indexVersion: string;
}

/** Texts embedded per encoder call: keeps one large write within the model queue's bound. */
const EMBED_SLICE = 64;
/** Chunks per dense-index message while rebuilding or replaying. */
const REPLAY_BATCH = 1024;
/** Stored vectors read per statement (64 × 2 KB rows: well under a millisecond). */
const VECTOR_BATCH = 64;

/** A data dir that cannot serve this configuration: a start-up error with clear text, never a wire code. */
export class CorpusError extends StartupError {
  override name = 'CorpusError';
}

/**
 * The corpus: the durable store of record plus the two derived indexes, kept in step. A write is validated whole,
 * chunked and embedded outside the write lock, then committed in one SQLite transaction (durable on return) and
 * applied to the dense and lexical indexes before it is acknowledged — all or nothing, in commit order.
 *
 * Start-up (in the background; not ready until done): the newest saved dense index is loaded and the writes after its
 * sequence number are replayed from the store (stored vectors, never re-embedded); a missing or corrupt file means a
 * rebuild from the store, logged. The lexical index is rebuilt from the store's text every start: it is derived,
 * cheap to rebuild (~0.5 s per 5k SciFact abstracts), and one persisted structure fewer to keep crash-consistent.
 */
export class Corpus implements CorpusWriter, CorpusReader {
  readonly store: CorpusStore;
  readonly #dense = new DenseIndex();
  readonly #lexical: Bm25Index;
  readonly #ready: Promise<void>;
  #state: { status: 'loading' } | { status: 'ready' } | { status: 'failed'; reason: string; fatal: boolean } = {
    status: 'loading',
  };
  #writes: Promise<unknown> = Promise.resolve();
  #savedSeq = 0;
  /**
   * The last write in both indexes, not only in the store (whose seq moves at its commit, before the indexes take
   * the write): the indexVersion a retrieve reports (§7.7.1), and what a replica has applied (read-your-writes).
   */
  #appliedSeq = 0;
  #timer: NodeJS.Timeout | undefined;
  /** In memory for recall-time filtering and hit assembly: chunk label → document id, document id → metadata. */
  readonly #chunkPlace = new Map<number, ChunkPlace>();
  readonly #documentMeta = new Map<string, Record<string, unknown>>();
  readonly #documentOrigin = new Map<string, DocumentOrigin>();
  /** Recently served chunks (text and offsets, never vectors), bounded in bytes: no store read per hit when warm. */
  readonly #chunks: ChunkCache | undefined;
  /** Present when the corpus of record is a shared PostgreSQL store. */
  readonly replica: Replica | undefined;

  constructor(
    private readonly settings: CorpusSettings,
    private readonly encoder: Encoder,
    private readonly log: Logger,
  ) {
    this.store = openStore(settings.dir, !this.#localWritable);
    this.#chunks = settings.chunkCacheBytes ? new ChunkCache(settings.chunkCacheBytes) : undefined;
    const built = this.store.getMeta('encoder');
    if (built !== undefined && built !== encoder.info.identity && this.store.counts().chunks > 0) {
      void this.store.close();
      throw new CorpusError(
        `data dir ${settings.dir} was embedded with ${built}, but the configured encoder is ${encoder.info.identity}; ` +
          're-ingest into a new data dir (or configure the original encoder)',
      );
    }
    if (built !== encoder.info.identity && this.#localWritable) this.store.setMeta('encoder', encoder.info.identity);
    this.#lexical = new Bm25Index(settings.bm25);
    this.replica =
      settings.store && new Replica({ ...settings.store, encoder: encoder.info.identity }, this.#target(), log);
    this.#ready = this.#open().then(
      async () => {
        await this.replica?.start();
        this.#state = { status: 'ready' };
        if (!this.#localWritable) return;
        // A failed periodic save is logged (the next one retries); it never becomes an unhandled rejection.
        this.#timer = setInterval(
          () => void this.save().catch((error: unknown) => this.#saveFailed(error)),
          settings.saveIntervalMs,
        );
        this.#timer.unref();
      },
      (error: unknown) => {
        const reason = (error as Error).message;
        // A damaged store is no passing fault: the process should stop rather than serve (see `fatal`).
        const fatal = error instanceof StoreError;
        this.#state = { status: 'failed', reason, fatal };
        log.error({ dir: settings.dir, reason }, 'corpus failed to open; index calls answer -32010');
      },
    );
  }

  /** Whether this process writes its data dir: a server that takes writes, or a replica catching up. */
  get #localWritable(): boolean {
    return this.settings.writable !== false || this.settings.store !== undefined;
  }

  /** What a replica brings up to date: the local snapshot, and the indexes after it, in write order. */
  #target(): ReplicaTarget {
    const applied = () => this.#appliedSeq;
    return {
      get seq() {
        return applied();
      },
      getMeta: (key) => this.store.getMeta(key),
      setMeta: (key, value) => this.store.setMeta(key, value),
      apply: (changes) => this.#serialized(async () => this.#apply(await this.store.apply(changes))),
    };
  }

  get ready(): Promise<void> {
    return this.#ready;
  }

  /** Once `ready` settles: why the store cannot be served at all (found damaged while loading), if it cannot. */
  get fatal(): string | undefined {
    return this.#state.status === 'failed' && this.#state.fatal ? this.#state.reason : undefined;
  }

  get dimension(): number {
    return this.encoder.info.dimension;
  }

  health(): ModelHealth {
    if (this.#state.status === 'ready') return { ready: true };
    const away = this.replica?.unreachable;
    const loading = away === undefined ? 'corpus: loading' : `corpus: the store of record cannot be reached (${away})`;
    return { ready: false, reason: this.#state.status === 'loading' ? loading : `corpus: ${this.#state.reason}` };
  }

  async #open(): Promise<void> {
    const started = performance.now();
    let savedSeq = await this.#loadDense();
    // The store is the truth: a dense index that holds other labels than the store's chunks (a file that lied about
    // what it held, rows relabelled since) is rebuilt from it.
    if (savedSeq > 0 && !sameLabels(await this.#dense.labels(), this.store.labels())) {
      this.log.warn({ dir: this.settings.dir }, 'dense index disagrees with the store; rebuilding');
      await this.#dense.reset(this.#denseOptions());
      savedSeq = 0;
      await this.#replay(0);
    }
    const loaded = savedSeq > 0;
    // In time slices: requests that arrive meanwhile are read and wait for readiness, and ping is answered.
    const slice = new TimeSlice();
    for (const { id, meta, origin } of this.store.documentMetas()) {
      this.#documentMeta.set(id, meta);
      this.#documentOrigin.set(id, origin);
      await slice.due();
    }
    for (const { label, docId, ordinal, text, context } of this.store.chunkTexts()) {
      this.#chunkPlace.set(label, { docId, ordinal });
      await this.#lexical.addInSlices(label, lexicalText(text, context), slice, this.#documentMeta.get(docId));
      await slice.due();
    }
    this.#savedSeq = savedSeq;
    this.#appliedSeq = this.store.seq;
    const stats = await this.stats();
    this.log.info(
      {
        ...stats,
        denseIndex: loaded ? `loaded at seq ${savedSeq}` : 'rebuilt',
        ms: Math.round(performance.now() - started),
      },
      'corpus ready',
    );
  }

  /** Loads the newest verified saved dense index and replays the store's writes after it; returns its seq. */
  async #loadDense(): Promise<number> {
    const store = { id: this.store.id, seq: this.store.seq };
    const { seq, discarded } = await this.#dense.open(this.settings.dir, this.#denseOptions(), store, {
      keep: !this.#localWritable,
    });
    for (const reason of discarded) this.log.warn({ dir: this.settings.dir, reason }, 'saved dense index discarded');
    if (seq === 0 && this.store.counts().chunks > 0) {
      this.log.warn({ dir: this.settings.dir }, 'no usable saved dense index; rebuilding it from the store');
    }
    await this.#replay(seq);
    return seq;
  }

  /** Replay: chunks written after `savedSeq` (all of them on a rebuild), then removals after it. */
  async #replay(savedSeq: number): Promise<void> {
    let labels: number[] = [];
    let vectors: Float32Array[] = [];
    for (const chunk of this.store.chunks(savedSeq)) {
      labels.push(chunk.label);
      vectors.push(chunk.vector);
      if (labels.length === REPLAY_BATCH) {
        await this.#dense.add(labels, vectors, this.dimension);
        [labels, vectors] = [[], []];
      }
    }
    if (labels.length > 0) await this.#dense.add(labels, vectors, this.dimension);
    await this.#dense.remove(this.store.tombstonesAfter(savedSeq));
  }

  #denseOptions(): DenseIndexOptions {
    const { space, m, efConstruction, efSearch } = this.settings;
    return { space, dimension: this.dimension, m, efConstruction, efSearch, initialCapacity: 1024 };
  }

  async #whenReady(): Promise<void> {
    if (this.#state.status === 'loading' && this.replica !== undefined) await this.#unlessUnreachable(this.replica);
    await this.#ready;
    if (this.#state.status !== 'ready') {
      throw RpcError.backendUnavailable(this.health().reason ?? 'corpus unavailable', 5_000);
    }
  }

  /**
   * A replica that cannot reach its store to start cannot tell what the corpus holds: -32010 at once (§12, an
   * upstream down), retryable, rather than a wait until the request's deadline. Once it starts, the wait is over.
   */
  async #unlessUnreachable(replica: Replica): Promise<void> {
    const reason = await Promise.race([replica.untilUnreachable(), this.#ready.then(() => undefined)]);
    if (reason === undefined || this.#state.status !== 'loading') return;
    throw RpcError.backendUnavailable(
      `the store of record cannot be reached (${reason}); this replica serves once it has caught up with it`,
      1_000,
    );
  }

  /** Runs `write` after every earlier write: commits and index updates happen in sequence order. */
  #serialized<T>(write: () => Promise<T>): Promise<T> {
    const next = this.#writes.then(write, write);
    this.#writes = next.catch(() => undefined);
    return next;
  }

  async add(documents: readonly CorpusDocument[], options: AddOptions): Promise<AddResult> {
    await this.#whenReady();
    if (this.replica !== undefined) return this.#addToStore(this.replica, documents, options);
    const key = options.idempotencyKey;
    const previous = key === undefined ? undefined : this.store.idempotentResult(key);
    if (previous !== undefined) return previous as AddResult;
    const prepared = await this.#prepare(documents, options);
    return this.#serialized(async () => {
      const repeated = key === undefined ? undefined : this.store.idempotentResult(key);
      if (repeated !== undefined) return repeated as AddResult;
      pointOfNoReturn(options);
      const ids = prepared.map((document) => document.id);
      const chunks = prepared.reduce((sum, document) => sum + document.chunks.length, 0);
      const write = await this.store.upsert(prepared, key === undefined ? undefined : { key, result: { ids, chunks } });
      await this.#apply(write);
      return { ids, chunks, indexVersion: String(write.seq) };
    });
  }

  async delete(ids: readonly string[], caller: WriteCaller = {}): Promise<{ deleted: number; indexVersion: string }> {
    await this.#whenReady();
    if (this.replica !== undefined) {
      pointOfNoReturn(caller);
      const { seq, deletedIds } = await this.replica.delete(ids);
      await this.replica.caughtUpTo(seq);
      return { deleted: deletedIds.length, indexVersion: String(seq) };
    }
    return this.#serialized(async () => {
      pointOfNoReturn(caller);
      const write = await this.store.delete(ids);
      await this.#apply(write);
      return { deleted: write.deletedIds.length, indexVersion: String(write.seq) };
    });
  }

  /**
   * index/add on a replica: committed to the store of record (whose transaction orders it among every replica's
   * writes), answered once applied here. A keyed retry gets the first answer (§7.10), also once applied here.
   */
  async #addToStore(replica: Replica, documents: readonly CorpusDocument[], options: AddOptions): Promise<AddResult> {
    const key = options.idempotencyKey;
    const answered = async (result: Record<string, unknown>) => {
      await replica.caughtUpTo(Number(result.indexVersion));
      return result as unknown as AddResult;
    };
    const previous = key === undefined ? undefined : await replica.idempotentResult(key);
    if (previous !== undefined) return answered(previous);
    const prepared = await this.#prepare(documents, options);
    pointOfNoReturn(options);
    const ids = prepared.map((document) => document.id);
    const chunks = prepared.reduce((sum, document) => sum + document.chunks.length, 0);
    const committed = await replica.upsert(prepared, key === undefined ? undefined : { key, result: { ids, chunks } });
    return answered(committed.repeated ?? { ids, chunks, indexVersion: String(committed.seq) });
  }

  /** Validates every document (all or nothing), chunks and embeds them; nothing is written here. */
  async #prepare(documents: readonly CorpusDocument[], options: AddOptions): Promise<NewDocument[]> {
    documents.forEach((document, i) => this.#validate(document, `documents.${i}`));
    const count = options.chunk ? await this.encoder.tokenCounter() : undefined;
    const slice = new TimeSlice(options.signal);
    const staged = [];
    for (const document of documents) {
      const meta = document.meta ?? {};
      const pieces =
        count === undefined
          ? [{ text: document.text, heading: undefined, start: 0, end: document.text.length }]
          : await chunkText(document.text, count, this.encoder.info.maxTokens, slice);
      const title = typeof meta.title === 'string' ? meta.title : undefined;
      const chunks = pieces.map((piece) => ({
        text: piece.text,
        start: piece.start,
        end: piece.end,
        context: options.contextual
          ? [title, piece.heading].filter((s) => s !== undefined && s !== '').join(' — ')
          : '',
      }));
      const id = document.id ?? randomUUID();
      const origin = options.origin ?? 'client';
      staged.push({ id, text: document.text, meta, hash: contentHash(document.text, meta, options), origin, chunks });
      // Hashing a megabyte of text takes ~2 ms: a batch of them gives the loop back between documents.
      await slice.due();
    }
    const texts = staged.flatMap((document) => document.chunks.map((chunk) => lexicalText(chunk.text, chunk.context)));
    const vectors = await this.#embedDistinct(texts, options.signal);
    let next = 0;
    return staged.map((document) => ({
      ...document,
      chunks: document.chunks.map((chunk) => ({
        ...chunk,
        vector: vectors[next++] ?? new Float32Array(this.dimension),
      })),
    }));
  }

  /**
   * One vector per text, each distinct text embedded once: a write's repeated chunks (boilerplate, a document of one
   * repeated line) share the vector, which is the model's per-chunk cost, ~6 ms of two cores. A 1 MiB document of
   * one-letter words (4,096 identical chunks) took 27 s of model time; now one inference.
   */
  async #embedDistinct(texts: readonly string[], signal: AbortSignal | undefined): Promise<Float32Array[]> {
    const first = new Map<string, number>();
    const distinct: string[] = [];
    const slot = texts.map((text) => {
      let at = first.get(text);
      if (at === undefined) first.set(text, (at = distinct.push(text) - 1));
      return at;
    });
    const vectors: Float32Array[] = [];
    for (let start = 0; start < distinct.length; start += EMBED_SLICE) {
      vectors.push(...(await this.encoder.embed(distinct.slice(start, start + EMBED_SLICE), 'document', signal)));
    }
    return slot.map((at) => vectors[at] ?? new Float32Array(this.dimension));
  }

  /** -32602 naming the field unless `document` can be stored. */
  #validate(document: CorpusDocument, field: string): void {
    if (document.text.trim() === '') throw RpcError.invalidParams(`${field}.text`, 'a document needs text');
    // The store keeps UTF-8: a lone surrogate would come back as U+FFFD, and the id or the citation offsets with it.
    if (document.id !== undefined) requireWellFormed(document.id, `${field}.id`);
    requireWellFormed(document.text, `${field}.text`);
    const bytes = Buffer.byteLength(document.text);
    if (bytes > this.settings.maxDocumentBytes) {
      throw RpcError.invalidParams(
        `${field}.text`,
        `${bytes} bytes exceed the ${this.settings.maxDocumentBytes}-byte limit`,
      );
    }
    validateMetadata(document.meta ?? {}, this.settings.fields, `${field}.meta`, this.settings.metadata);
  }

  /** Applies a committed write to both derived indexes. */
  async #apply(write: WriteResult): Promise<void> {
    const removed = new Set(write.removed);
    // A document given twice in one batch: its first chunks were replaced inside the same transaction.
    const added = write.added.filter((chunk) => !removed.has(chunk.label));
    // A label is placed before any index can return it, and unplaced only after both have dropped it: a concurrent
    // retrieve never holds a label it cannot name (hits carry the client's document id, never an internal label).
    for (const chunk of added) this.#chunkPlace.set(chunk.label, { docId: chunk.docId, ordinal: chunk.ordinal });
    if (added.length > 0) {
      await this.#dense.add(
        added.map((chunk) => chunk.label),
        added.map((chunk) => chunk.vector),
        this.dimension,
      );
    }
    if (removed.size > 0) await this.#dense.remove([...removed]);
    for (const label of removed) {
      this.#lexical.remove(label);
      this.#chunkPlace.delete(label);
      this.#chunks?.delete(label);
    }
    // Analysing long texts for BM25 is CPU work on the event loop: in time slices (docs/architecture.md §9).
    const slice = new TimeSlice();
    // A chunk's lexical fields (index.bm25.fields) come from its document's metadata, as written in this batch.
    const metaOf = new Map(write.written.map(({ id, meta }) => [id, meta]));
    for (const chunk of added) {
      const meta = metaOf.get(chunk.docId) ?? this.#documentMeta.get(chunk.docId);
      await this.#lexical.addInSlices(chunk.label, lexicalText(chunk.text, chunk.context), slice, meta);
      await slice.due();
    }
    for (const { id, meta, origin } of write.written) {
      this.#documentMeta.set(id, meta);
      this.#documentOrigin.set(id, origin);
    }
    for (const id of write.deletedIds) {
      this.#documentMeta.delete(id);
      this.#documentOrigin.delete(id);
    }
    this.#appliedSeq = Math.max(this.#appliedSeq, write.seq);
  }

  /** Saves the dense index if it changed since the last save; tombstones it covers are pruned. */
  async save(): Promise<void> {
    if (this.#state.status !== 'ready' || !this.#localWritable) return;
    await this.#serialized(async () => {
      const seq = this.store.seq;
      if (seq === this.#savedSeq) return;
      const { space } = this.settings;
      await this.#dense.save(this.settings.dir, seq, { space, dimension: this.dimension, store: this.store.id });
      this.store.pruneTombstones(seq);
      this.#savedSeq = seq;
    });
  }

  #saveFailed(error: unknown): void {
    this.log.error({ reason: (error as Error).message }, 'could not save the dense index');
  }

  get indexVersion(): string {
    return String(this.#appliedSeq);
  }

  /**
   * §7.7.1 snapshots: this server serves only the current indexVersion (the dense index has no older states), so a
   * request pinned to any other version fails with -32010 rather than silently reading a different corpus, and
   * `retrieve.snapshots` is not advertised.
   */
  assertVersion(pinned: string | undefined): void {
    const current = String(this.#appliedSeq);
    if (pinned === undefined || pinned === current) return;
    if (this.replica !== undefined && /^\d+$/.test(pinned) && Number(pinned) > this.#appliedSeq) {
      // A version another replica has applied and this one has not yet: it will, within the replication lag.
      throw RpcError.backendUnavailable(`this replica has not reached indexVersion ${pinned} yet (at ${current})`, 250);
    }
    // Retrying cannot bring an old snapshot back: say so (§12.2 lets data.retryable narrow the code's default).
    throw new RpcError(RpcErrorCode.BackendUnavailable, 'snapshot unavailable', {
      detail: `indexVersion ${pinned} is not retained; the current version is ${current}`,
      retryable: false,
    });
  }

  /**
   * Dense recall: cosine similarity (or dot product for `ip`), best first; `allow` restricts labels during search.
   * `caller` names the lane the search waits in, so callers take turns at the index (§15.5).
   */
  async searchDense(
    vector: Float32Array,
    k: number,
    allow?: readonly number[],
    signal?: AbortSignal,
    caller?: string,
  ): Promise<{ label: number; score: number }[]> {
    await this.#whenReady();
    const neighbours = await this.#dense.search(vector, k, k, allow, signal, caller);
    return neighbours.map(({ label, distance }) => ({ label, score: 1 - distance }));
  }

  /** Lexical recall: BM25, best first; `allow` restricts labels while scoring the postings. */
  async searchLexical(
    query: string,
    k: number,
    allow?: ReadonlySet<number>,
    signal?: AbortSignal,
  ): Promise<{ label: number; score: number }[]> {
    await this.#whenReady();
    return this.#lexical.search(query, k, allow, new TimeSlice(signal));
  }

  /** Each label's similarity to `vector`, from its stored vector; -1 for a label not stored. */
  async denseScores(vector: Float32Array, labels: readonly number[], signal?: AbortSignal): Promise<number[]> {
    const similarity = this.settings.space === 'cosine' ? cosineSimilarity : dotProduct;
    const stored = await this.vectorsOf(labels, signal);
    return labels.map((label) => {
      const found = stored.get(label);
      return found === undefined ? -1 : similarity(found, vector);
    });
  }

  async transformQuery(
    query: string,
    method: 'rewrite' | 'multi-query',
    n: number,
    signal?: AbortSignal,
  ): Promise<string[]> {
    const textOf = (label: number) => this.store.getChunk(label)?.text ?? '';
    if (method === 'rewrite') {
      const textsOf = (term: string) => this.#lexical.labelsWith(term, 3).map(textOf);
      return [await rewriteQuery(query, this.#lexical, textsOf, new TimeSlice(signal))];
    }
    return multiQuery(query, n, this.#lexical, textOf, new TimeSlice(signal));
  }

  termWeights(text: string, kind: 'query' | 'document'): Map<string, number> {
    return this.#lexical.termWeights(text, kind);
  }

  lexicalScores(query: string, labels: readonly number[], signal?: AbortSignal): Promise<number[]> {
    return this.#lexical.scoreLabels(query, labels, new TimeSlice(signal));
  }

  /** Labels of chunks whose document metadata satisfies `predicate` (for filtered recall), in time slices. */
  async labelsWhere(predicate: (meta: Record<string, unknown>) => boolean, signal?: AbortSignal): Promise<number[]> {
    const slice = new TimeSlice(signal);
    const labels: number[] = [];
    let seen = 0;
    for (const [label, { docId }] of this.#chunkPlace) {
      if (predicate(this.#documentMeta.get(docId) ?? {})) labels.push(label);
      if (++seen % 1024 === 0) await slice.due();
    }
    return labels;
  }

  placeOf(label: number): ChunkPlace | undefined {
    return this.#chunkPlace.get(label);
  }

  originOf(documentId: string): DocumentOrigin {
    return this.#documentOrigin.get(documentId) ?? 'client';
  }

  metaOf(documentId: string): Record<string, unknown> {
    return this.#documentMeta.get(documentId) ?? {};
  }

  getChunk(label: number): ChunkBody | undefined {
    if (this.#chunks === undefined) return this.store.getChunk(label);
    // A label names one chunk for ever (a replaced document's chunks get new labels), so a cached body never goes
    // stale; a removed label is dropped from the cache when the write is applied.
    return this.#chunks.get(label) ?? this.#chunks.keep(this.store.getChunk(label));
  }

  vectorOf(label: number): Float32Array | undefined {
    return this.store.vectorOf(label);
  }

  /**
   * The stored vectors of `labels`, read a batch per statement (one statement each cost about 35 µs a row here,
   * batched about 9 µs), in time slices; a label not stored is absent.
   */
  async vectorsOf(labels: readonly number[], signal?: AbortSignal): Promise<Map<number, Float32Array>> {
    const slice = new TimeSlice(signal);
    const vectors = new Map<number, Float32Array>();
    for (let start = 0; start < labels.length; start += VECTOR_BATCH) {
      for (const [label, found] of this.store.vectorsOf(labels.slice(start, start + VECTOR_BATCH))) {
        vectors.set(label, found);
      }
      await slice.due();
    }
    return vectors;
  }

  getDocument(id: string): StoredDocument | undefined {
    return this.store.getDocument(id);
  }

  async stats(): Promise<CorpusStats> {
    const { documents, chunks } = this.store.counts();
    return {
      documents,
      chunks,
      dense: await this.#dense.count(),
      lexical: this.#lexical.size,
      indexVersion: String(this.#appliedSeq),
    };
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
    await this.replica?.close();
    await this.#ready;
    try {
      await this.save();
    } catch (error) {
      this.#saveFailed(error);
    }
    await this.#writes;
    await this.#dense.close();
    await this.store.close();
  }
}

/** The store, or a CorpusError (a start-up error) when another process holds the data dir or the store is unfit. */
function openStore(dir: string, readOnly: boolean): CorpusStore {
  try {
    return new CorpusStore(dir, { readOnly });
  } catch (error) {
    if (error instanceof StoreError) throw new CorpusError(error.message);
    throw error;
  }
}

/**
 * Right before a write commits: a caller that has given up (cancelled, past its deadline) gets its error and nothing
 * is applied; otherwise the write is committed and applied, and answered with its result (§7.10, §13.1).
 */
function pointOfNoReturn(caller: WriteCaller): void {
  caller.signal?.throwIfAborted();
  caller.commit?.();
}

function sameLabels(held: Float64Array, stored: readonly number[]): boolean {
  return held.length === stored.length && stored.every((label, i) => held[i] === label);
}

function lexicalText(text: string, context: string): string {
  return context === '' ? text : `${context}\n\n${text}`;
}

/** What ingest compares to skip unchanged documents. */
export function contentHash(
  text: string,
  meta: Record<string, unknown>,
  options: Pick<AddOptions, 'chunk' | 'contextual'>,
): string {
  return createHash('sha256')
    .update(JSON.stringify([text, meta, options.chunk, options.contextual]))
    .digest('hex');
}
