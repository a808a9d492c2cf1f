import { RpcError } from '../protocol/errors.js';
import type { Logger } from '../protocol/logger.js';
import { TimeSlice } from '../protocol/time-slice.js';
import type { Encoder, ModelHealth, TextKind } from '../models/index.js';
import { ChunkCache } from './chunk-cache.js';
import type { Outline } from './outline.js';
import { OutlineCache } from './outline-cache.js';
import { ScreenCache } from './screen/screen-cache.js';
import type { Screen } from './screen/screen.js';
import { DerivedIndexes } from './indexes.js';
import type {
  ChunkBody,
  ChunkPlace,
  CorpusDocument,
  CorpusReader,
  CorpusWriter,
  DenseSearchOptions,
  WriteCaller,
} from './ports.js';
import { WRITE_PROGRESS, prepareDocuments, type AddOptions } from './prepare.js';
import { Replica, type ReplicaTarget } from './replica.js';
import { openCorpusStore, writesLocally, type CorpusSettings } from './settings.js';
import type { CorpusStore, DocumentOrigin, StoredDocument } from './store/corpus-store.js';
import { sqliteCode, StoreError } from './store/dir-lock.js';
import { WriteOrder } from './write-order.js';
import { notRetained, SnapshotReader } from './snapshots/reader.js';

export { contentHash, type AddOptions } from './prepare.js';
export { CorpusError, type CorpusSettings } from './settings.js';

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

/** Stored vectors read per statement (64 × 2 KB rows: well under a millisecond). */
const VECTOR_BATCH = 64;

/**
 * The corpus: the durable store of record plus the two derived indexes, kept in step. A write is validated whole,
 * chunked and embedded outside the write lock (prepare.ts), then committed in one SQLite transaction (durable on
 * return) and applied to the dense and lexical indexes (indexes.ts) before it is acknowledged — all or nothing, in
 * commit order. This class holds what joins them: readiness, writes (ordered by write-order.ts), replicas, and the
 * read side; settings.ts opens the store for its settings.
 *
 * Start-up (in the background; not ready until done): the newest saved dense index is loaded and the writes after its
 * sequence number are replayed from the store (stored vectors, never re-embedded); a missing or corrupt file means a
 * rebuild from the store, logged. The lexical index saved with it (same seq) is opened likewise and the texts of the
 * chunks written after it analysed; without one that verifies it is rebuilt from every chunk's text.
 */
export class Corpus implements CorpusWriter, CorpusReader {
  readonly store: CorpusStore;
  readonly #order: WriteOrder;
  readonly #ready: Promise<void>;
  #state: { status: 'loading' } | { status: 'ready' } | { status: 'failed'; reason: string; fatal: boolean } = {
    status: 'loading',
  };
  #timer: NodeJS.Timeout | undefined;
  #closing = false;
  /** Settles once the store's scrub has checked it whole (see `checked`). */
  readonly #checked: Promise<void>;
  /** Resolves with the reason once the store is found damaged, while loading or after (see `damaged`). */
  readonly #damaged: Promise<string>;
  #found: (reason: string) => void = () => undefined;
  /** Recently served chunks (text and offsets, never vectors), bounded in bytes: no store read per hit when warm. */
  readonly #chunks: ChunkCache | undefined;
  readonly #outlines = new OutlineCache();
  readonly #screens = new ScreenCache();
  /** Present when the corpus of record is a shared PostgreSQL store. */
  readonly replica: Replica | undefined;

  constructor(
    private readonly settings: CorpusSettings,
    private readonly encoder: Encoder,
    private readonly log: Logger,
  ) {
    this.store = openCorpusStore(settings, encoder);
    this.#chunks = settings.chunkCacheBytes ? new ChunkCache(settings.chunkCacheBytes) : undefined;
    this.#order = new WriteOrder(this.store, () => this.#derived(), log);
    const gone = (reason: string) => this.#foundDamage(reason, 'corpus dropped from its store of record');
    this.replica =
      settings.store && new Replica({ ...settings.store, encoder: encoder.info.identity, gone }, this.#target(), log);
    // A replica that cannot start (its store's schema gone or newer than this build) fails the corpus as the open does.
    this.#ready = this.#open()
      .then(() => this.replica?.start())
      .then(
        () => {
          this.#state = { status: 'ready' };
          // Closed while loading: no timers to start (they would outlive the store).
          if (this.#closing) return;
          if (this.replica === undefined) this.#order.followOthers(settings.followMs);
          if (!writesLocally(settings)) return;
          // A failed periodic save is logged (the next one retries); it never becomes an unhandled rejection.
          this.#timer = setInterval(
            () => void this.save().catch((error: unknown) => this.#saveFailed(error)),
            settings.saveIntervalMs,
          );
          this.#timer.unref();
        },
        (error: unknown) => {
          const reason = (error as Error).message;
          if (this.fatal !== undefined) return; // found damaged or gone already, and said so
          // A damaged store is no passing fault: the process should stop rather than serve (see `fatal`).
          if (isDamage(error)) return this.#foundDamage(reason);
          this.#state = { status: 'failed', reason, fatal: false };
          log.error({ dir: settings.dir, reason }, 'corpus failed to open; index calls answer -32010');
        },
      );
    this.#damaged = new Promise((resolve) => (this.#found = resolve));
    this.#checked = this.#ready.then(() => this.#scrub());
  }

  /**
   * The store checked whole once the corpus is ready (docs/architecture.md §5, "Damage"), on a thread of its own:
   * a start reads only what it needs (a hit's row is checked as it is read), so a million chunks are served in
   * seconds, and damage anywhere else is found by this within its first minutes.
   */
  async #scrub(): Promise<void> {
    if (this.#state.status !== 'ready' || this.#closing) return;
    const started = performance.now();
    try {
      const damage = await this.store.scrub();
      if (damage !== undefined) return this.#foundDamage(damage);
      this.log.info({ dir: this.settings.dir, ms: Math.round(performance.now() - started) }, 'store checked whole');
    } catch (error) {
      if (this.#closing) return;
      this.log.warn({ dir: this.settings.dir, reason: (error as Error).message }, 'store check did not finish');
    }
  }

  /**
   * The store is damaged, or (a replica) gone from its store of record: nothing more is served from it (index calls
   * answer -32010) and `damaged` says why.
   */
  #foundDamage(reason: string, what = 'store found damaged'): void {
    if (this.fatal !== undefined) return;
    this.#state = { status: 'failed', reason, fatal: true };
    clearInterval(this.#timer);
    this.log.error({ dir: this.settings.dir, reason }, `${what}; index calls answer -32010`);
    this.#found(reason);
  }

  /** Settles once the store has been checked whole (or could not be); `fatal` then says whether it is damaged. */
  get checked(): Promise<void> {
    return this.#checked;
  }

  /** Resolves with the reason once the store is found damaged, while loading or while serving; otherwise never. */
  get damaged(): Promise<string> {
    return this.#damaged;
  }

  /** The indexes searches read now (write-order.ts swaps them on a reload). */
  get #indexes(): DerivedIndexes {
    return this.#order.indexes;
  }

  /** Indexes to derive from the store, empty until loaded. */
  #derived(): DerivedIndexes {
    const { space, m, efConstruction, efSearch, bm25, dir, snapshots } = this.settings;
    const writable = writesLocally(this.settings);
    const textBytes = (this.settings.maxBytes ?? 0) > 0;
    const { dimension } = this;
    const options = { dir, space, m, efConstruction, efSearch, dimension, bm25, writable, snapshots, textBytes };
    return new DerivedIndexes(this.store, options, this.#chunks, this.log);
  }

  /** What a replica brings up to date: the local snapshot, and the indexes after it, in write order. */
  #target(): ReplicaTarget {
    const applied = () => this.#indexes.appliedSeq;
    return {
      get seq() {
        return applied();
      },
      getMeta: (key) => this.store.getMeta(key),
      setMeta: (key, value) => this.store.setMeta(key, value),
      apply: (changes) => this.#order.serialized(async () => this.#indexes.apply(await this.store.apply(changes))),
    };
  }

  get ready(): Promise<void> {
    return this.#ready;
  }

  /** Why the store cannot be served at all (found damaged while loading, by the scrub or by a read), if it cannot. */
  get fatal(): string | undefined {
    return this.#state.status === 'failed' && this.#state.fatal ? this.#state.reason : undefined;
  }

  get dimension(): number {
    return this.encoder.info.dimension;
  }

  /** The encoder's identity, which the store records and an export names. */
  get encoderIdentity(): string {
    return this.encoder.info.identity;
  }

  health(): ModelHealth {
    if (this.#state.status === 'ready') return { ready: true };
    const away = this.replica?.unreachable;
    const loading = away === undefined ? 'corpus: loading' : `corpus: the store of record cannot be reached (${away})`;
    return { ready: false, reason: this.#state.status === 'loading' ? loading : `corpus: ${this.#state.reason}` };
  }

  async #open(): Promise<void> {
    const started = performance.now();
    const { dense, lexical } = await this.#indexes.load();
    const stats = await this.stats();
    const how = (seq: number) => (seq > 0 ? `loaded at seq ${seq}` : 'rebuilt');
    this.log.info(
      {
        ...stats,
        denseIndex: how(dense),
        lexicalIndex: how(lexical),
        ms: Math.round(performance.now() - started),
      },
      'corpus ready',
    );
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

  async add(documents: readonly CorpusDocument[], options: AddOptions): Promise<AddResult> {
    await this.#whenReady();
    if (this.replica !== undefined) return this.#addToStore(this.replica, documents, options);
    const key = options.idempotencyKey;
    const previous = key === undefined ? undefined : await this.#repeated(key);
    if (previous !== undefined) return previous;
    const prepared = await prepareDocuments(documents, options, this.encoder, this.settings);
    return this.#order.serialized(async () => {
      this.#withinQuota(prepared);
      pointOfNoReturn(options);
      const ids = prepared.map((document) => document.id);
      const chunks = prepared.reduce((sum, document) => sum + document.chunks.length, 0);
      const write = await this.store.upsert(prepared, key === undefined ? undefined : { key, result: { ids, chunks } });
      options.progress?.('write', WRITE_PROGRESS.written, `committed ${ids.length} documents, ${chunks} chunks`);
      await this.#order.applyOwn(write);
      options.progress?.('index', WRITE_PROGRESS.indexed, `indexed at version ${write.seq}`);
      return (write.repeated as AddResult | undefined) ?? { ids, chunks, indexVersion: String(write.seq) };
    });
  }

  /**
   * A named corpus's quota of documents (docs/tenants.md): a write that adds documents past it is refused whole, -32013
   * (a server limit: the same write cannot succeed until documents are deleted). A write that adds none (it replaces
   * documents the corpus holds) is within it. Counted by the indexes of this process, in the order of its writes.
   */
  #withinQuota(documents: readonly { readonly id: string; readonly text: string }[]): void {
    const held = this.#indexes.documents;
    const max = this.settings.maxDocuments ?? 0;
    const adding = new Set(documents.map((document) => document.id).filter((id) => !held.hasDocument(id))).size;
    if (max > 0 && adding > 0 && held.documents + adding > max) {
      throw RpcError.payloadTooLarge(
        `the corpus holds ${held.documents} documents of its quota of ${max}, and this write adds ${adding}`,
      );
    }
    const maxBytes = this.settings.maxBytes ?? 0;
    if (maxBytes === 0) return;
    // The last of a document given twice is the one kept; a replaced document gives back what it held.
    const latest = new Map(documents.map((document) => [document.id, Buffer.byteLength(document.text)]));
    const growth = [...latest].reduce((sum, [id, bytes]) => sum + bytes - held.bytesOf(id), 0);
    if (growth > 0 && held.textBytes + growth > maxBytes) {
      throw RpcError.payloadTooLarge(
        `the corpus holds ${held.textBytes} bytes of text of its quota of ${maxBytes}, and this write adds ${growth}`,
      );
    }
  }

  /**
   * The first answer to a keyed write (§7.10), once the write is applied here (any process of the dir may have taken
   * it): undefined if the key is not known.
   */
  async #repeated(key: string): Promise<AddResult | undefined> {
    const previous = this.store.idempotentResult(key) as AddResult | undefined;
    if (previous !== undefined) await this.#order.caughtUp(Number(previous.indexVersion));
    return previous;
  }

  async delete(ids: readonly string[], caller: WriteCaller = {}): Promise<{ deleted: number; indexVersion: string }> {
    await this.#whenReady();
    if (this.replica !== undefined) {
      pointOfNoReturn(caller);
      const { seq, deletedIds } = await this.replica.delete(ids, caller.signal);
      caller.progress?.('write', WRITE_PROGRESS.written, `deleted ${deletedIds.length} documents`);
      await this.replica.caughtUpTo(seq);
      return { deleted: deletedIds.length, indexVersion: String(seq) };
    }
    return this.#order.serialized(async () => {
      pointOfNoReturn(caller);
      const write = await this.store.delete(ids);
      caller.progress?.('write', WRITE_PROGRESS.written, `deleted ${write.deletedIds.length} documents`);
      await this.#order.applyOwn(write);
      caller.progress?.('index', WRITE_PROGRESS.indexed, `indexed at version ${write.seq}`);
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
    const prepared = await prepareDocuments(documents, options, this.encoder, this.settings);
    pointOfNoReturn(options);
    const ids = prepared.map((document) => document.id);
    const chunks = prepared.reduce((sum, document) => sum + document.chunks.length, 0);
    const idempotency = key === undefined ? undefined : { key, result: { ids, chunks } };
    const committed = await replica.upsert(prepared, idempotency, options.signal);
    options.progress?.('write', WRITE_PROGRESS.written, `committed ${ids.length} documents, ${chunks} chunks`);
    return answered(committed.repeated ?? { ids, chunks, indexVersion: String(committed.seq) });
  }

  /** Saves the dense index if it changed since the last save; tombstones it covers are pruned. */
  async save(): Promise<void> {
    if (this.#state.status !== 'ready' || !writesLocally(this.settings)) return;
    await this.#order.serialized(() => this.#indexes.save());
  }

  #saveFailed(error: unknown): void {
    this.log.error({ reason: (error as Error).message }, 'could not save the dense index');
  }

  get indexVersion(): string {
    return String(this.#indexes.appliedSeq);
  }

  /**
   * §7.7.1 snapshots: a pinned version in the window (`index.snapshots`) is served as it was, by a SnapshotReader
   * (docs/architecture.md §5), the current one included, so that a pinned retrieve answers alike now and later; any
   * other fails with -32010 rather than silently reading a different corpus. Without snapshots only the current
   * version is served, by the live corpus.
   */
  async at(pinned: string | undefined): Promise<CorpusReader> {
    if (pinned === undefined) return this;
    await this.#whenReady();
    const current = this.#indexes.appliedSeq;
    // Versions are written in decimal without leading zeros; anything else names none.
    const version = /^(0|[1-9]\d*)$/.test(pinned) ? Number(pinned) : undefined;
    if (version !== undefined && version > current) {
      // A version another replica or process of the dir has applied and this one has not yet: it will, within the
      // lag (docs/architecture.md §5), so the client may retry.
      throw RpcError.backendUnavailable(`this process has not reached indexVersion ${pinned} yet (at ${current})`, 250);
    }
    const history = this.#indexes.history;
    if (history === undefined) {
      if (version === current) return this;
      throw notRetained(pinned, `only the current version, ${current}`);
    }
    if (version !== undefined && history.serves(version)) {
      return new SnapshotReader(this, this.#indexes, this.store, history, version);
    }
    // Retrying here cannot bring an old snapshot back (§12.2 lets data.retryable narrow the code); a replica that
    // joined or caught up after a version in the window says another replica may hold it.
    const versions = this.settings.snapshots?.versions ?? 0;
    const elsewhere = this.replica !== undefined && version !== undefined && version > current - versions;
    throw notRetained(pinned, history.describe(current), elsewhere);
  }

  /** The live corpus serves whatever is current. */
  verify(): void {}

  /** Dense recall (§7.7); `caller` names the lane the search waits in, so callers take turns at the index (§15.5). */
  async searchDense(
    vector: Float32Array,
    k: number,
    allow?: readonly number[],
    signal?: AbortSignal,
    caller?: string,
    options: DenseSearchOptions = {},
  ): Promise<{ label: number; score: number }[]> {
    await this.#whenReady();
    return this.#indexes.searchDense(vector, k, allow, signal, caller, options);
  }

  async searchLexical(
    query: string,
    k: number,
    allow?: ReadonlySet<number>,
    signal?: AbortSignal,
  ): Promise<{ label: number; score: number }[]> {
    await this.#whenReady();
    return this.#indexes.searchLexical(query, k, allow, signal);
  }

  /** Each label's similarity to `vector`, from its stored vector; -1 for a label not stored. */
  async denseScores(vector: Float32Array, labels: readonly number[], signal?: AbortSignal): Promise<number[]> {
    return this.#indexes.similarities(vector, labels, await this.vectorsOf(labels, signal));
  }

  transformQuery(query: string, method: 'rewrite' | 'multi-query', n: number, signal?: AbortSignal): Promise<string[]> {
    return this.#indexes.transformQuery(query, method, n, signal);
  }

  termWeights(text: string, kind: TextKind, signal?: AbortSignal): Promise<Map<string, number>> {
    return this.#indexes.termWeights(text, kind, signal);
  }

  lexicalScores(query: string, labels: readonly number[], signal?: AbortSignal): Promise<number[]> {
    return this.#indexes.lexicalScores(query, labels, signal);
  }

  labelsWhere(predicate: (meta: Record<string, unknown>) => boolean, signal?: AbortSignal): Promise<number[]> {
    return this.#indexes.labelsWhere(predicate, signal);
  }

  placeOf(label: number): ChunkPlace | undefined {
    return this.#indexes.placeOf(label);
  }

  originOf(documentId: string): DocumentOrigin {
    return this.#indexes.originOf(documentId);
  }

  metaOf(documentId: string): Record<string, unknown> {
    return this.#indexes.metaOf(documentId);
  }

  getChunk(label: number): ChunkBody | undefined {
    // A label names one chunk for ever (a replaced document's chunks get new labels), so a cached body never goes
    // stale; a removed label is dropped from the cache when the write is applied.
    const cached = this.#chunks?.get(label);
    if (cached !== undefined) return cached;
    let read: ChunkBody | undefined;
    try {
      read = this.store.getChunk(label);
    } catch (error) {
      if (!isDamage(error)) throw error;
      this.#foundDamage((error as Error).message);
      throw RpcError.backendUnavailable(`corpus: ${(error as Error).message}`, 5_000);
    }
    return this.#chunks === undefined ? read : this.#chunks.keep(read);
  }

  screenOf(chunk: ChunkBody, document?: string): Screen {
    return this.#screens.of(chunk, document);
  }

  screenBody(chunk: ChunkBody, document: string, signal?: AbortSignal): Promise<Screen> {
    const slice = new TimeSlice(signal);
    return this.#screens.body(chunk, document, () => slice.due());
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

  outlineOf(id: string): Outline | undefined {
    return this.#outlines.get(id, this.store.hashOf(id), () => this.store.getDocument(id)?.text);
  }

  async stats(): Promise<CorpusStats> {
    const { documents, chunks } = this.store.counts();
    return {
      documents,
      chunks,
      ...(await this.#indexes.counts()),
      indexVersion: String(this.#indexes.appliedSeq),
    };
  }

  async close(): Promise<void> {
    this.#closing = true;
    clearInterval(this.#timer);
    await this.replica?.close();
    await this.#ready;
    try {
      await this.save();
    } catch (error) {
      this.#saveFailed(error);
    }
    await this.#order.close();
    await this.store.close();
  }
}

/** A damaged store, as found by a row's sum or by SQLite reading a damaged page. */
function isDamage(error: unknown): boolean {
  return error instanceof StoreError || ['SQLITE_CORRUPT', 'SQLITE_NOTADB'].includes(sqliteCode(error));
}

/**
 * Right before a write commits: a caller that has given up (cancelled, past its deadline) gets its error and nothing
 * is applied; otherwise the write is committed and applied, and answered with its result (§7.10, §13.1).
 */
function pointOfNoReturn(caller: WriteCaller): void {
  caller.signal?.throwIfAborted();
  caller.commit?.();
}
