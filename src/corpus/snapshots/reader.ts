import { RpcErrorCode } from '../../protocol/codes.js';
import type { TextKind } from '../../models/index.js';
import { RpcError } from '../../protocol/errors.js';
import type { DerivedIndexes } from '../indexes.js';
import { outlineOf, type Outline } from '../outline.js';
import type { ChunkBody, ChunkPlace, CorpusReader } from '../ports.js';
import type { CorpusStore } from '../store/corpus-store.js';
import type { Screen } from '../screen/screen.js';
import type { VersionHistory } from './history.js';

/**
 * §7.7.1 a pinned version this process does not hold (`held` says which it does): retrying here cannot bring it back
 * (§12.2 `retryable`), unless another replica may hold it (`elsewhere`).
 */
export function notRetained(pinned: string, held: string, elsewhere = false): RpcError {
  const where = elsewhere ? '; another replica of the store may hold it' : '';
  return new RpcError(RpcErrorCode.BackendUnavailable, 'snapshot unavailable', {
    detail: `indexVersion ${pinned} is not retained; this server holds ${held}${where}`,
    retryable: elsewhere,
  });
}

/**
 * The corpus as an earlier version held it (§7.7.1 snapshots; docs/architecture.md §5): the read side a retrieve
 * pinned to `version` runs on. Chunks the version held that later writes removed come from the history (their
 * place, document, terms), the dense index's worker (their vectors) and the store (their text and stored vector);
 * the rest from the live corpus, less what was written after the version. Dense recall scores every vector exactly,
 * so a pinned retrieve gives the same answer while its version is current and after.
 */
export class SnapshotReader implements CorpusReader {
  readonly indexVersion: string;
  #lastOutline: { id: string; outline: Outline | undefined } | undefined;

  constructor(
    private readonly live: CorpusReader,
    private readonly indexes: DerivedIndexes,
    private readonly store: CorpusStore,
    private readonly history: VersionHistory,
    private readonly version: number,
  ) {
    this.indexVersion = String(version);
  }

  at(pinned: string | undefined): Promise<CorpusReader> {
    return this.live.at(pinned);
  }

  /** Throws once the version has left the window (a request that ran while the floor passed it). */
  verify(): void {
    if (!this.history.serves(this.version)) {
      throw notRetained(this.indexVersion, this.history.describe(this.indexes.appliedSeq));
    }
  }

  searchDense(
    vector: Float32Array,
    k: number,
    allow?: readonly number[],
    signal?: AbortSignal,
    caller?: string,
  ): Promise<{ label: number; score: number }[]> {
    // Exact whatever the options say: a pinned version is scored over every vector it held.
    return this.indexes.searchDense(vector, k, allow, signal, caller, { exact: true, version: this.version });
  }

  async searchLexical(query: string, k: number, allow?: ReadonlySet<number>, signal?: AbortSignal) {
    return (await this.indexes.lexicalAt(this.version, query, signal)).search(k, allow, signal);
  }

  async denseScores(vector: Float32Array, labels: readonly number[], signal?: AbortSignal): Promise<number[]> {
    return this.indexes.similarities(vector, labels, await this.vectorsOf(labels, signal));
  }

  async lexicalScores(query: string, labels: readonly number[], signal?: AbortSignal): Promise<number[]> {
    return (await this.indexes.lexicalAt(this.version, query, signal)).scores(labels, signal);
  }

  /** Query transformation reads the live index's statistics and texts: not kept for earlier versions. */
  transformQuery(): Promise<string[]> {
    return Promise.reject(this.#notKept('query transformation'));
  }

  /** A query's terms are the analyzer's alone (each weighs 1), as at any version; a document's weigh by statistics. */
  termWeights(text: string, kind: TextKind, signal?: AbortSignal): Promise<Map<string, number>> {
    if (kind === 'query') return this.live.termWeights(text, kind, signal);
    return Promise.reject(this.#notKept('term weights'));
  }

  labelsWhere(predicate: (meta: Record<string, unknown>) => boolean, signal?: AbortSignal): Promise<number[]> {
    return this.indexes.labelsWhereAt(this.version, predicate, signal);
  }

  /*
   * A label names one chunk for ever, whether its row is live or kept as removed. The store is read as committed, and
   * a write this process has not applied yet may have moved a row of this version to the removed rows (in the same
   * transaction): what the live rows lack is read from those.
   */

  getChunk(label: number): ChunkBody | undefined {
    const live = this.history.retired(label) === undefined ? this.live.getChunk(label) : undefined;
    return live ?? this.store.getChunk(label, 'retired_chunks') ?? this.#gone();
  }

  screenOf(chunk: ChunkBody, document?: string): Screen {
    return this.live.screenOf(chunk, document);
  }

  screenBody(chunk: ChunkBody, document: string, signal?: AbortSignal): Promise<Screen> {
    return this.live.screenBody(chunk, document, signal);
  }

  vectorOf(label: number): Float32Array | undefined {
    const live = this.history.retired(label) === undefined ? this.live.vectorOf(label) : undefined;
    return live ?? this.store.vectorsOf([label], 'retired_chunks').get(label) ?? this.#gone();
  }

  async vectorsOf(labels: readonly number[], signal?: AbortSignal): Promise<Map<number, Float32Array>> {
    const vectors = await this.live.vectorsOf(
      labels.filter((label) => this.history.retired(label) === undefined),
      signal,
    );
    const missing = labels.filter((label) => !vectors.has(label));
    for (const [label, vector] of this.store.vectorsOf(missing, 'retired_chunks')) vectors.set(label, vector);
    if (vectors.size < new Set(labels).size) this.#gone();
    return vectors;
  }

  placeOf(label: number): ChunkPlace | undefined {
    return this.indexes.placeAt(this.version, label);
  }

  metaOf(documentId: string): Record<string, unknown> {
    return this.indexes.documentAt(this.version, documentId).meta;
  }

  originOf(documentId: string): 'client' | 'operator' {
    return this.indexes.documentAt(this.version, documentId).origin;
  }

  getDocument(id: string): { readonly text: string } | undefined {
    const text = this.store.documentTextAt(id, this.version);
    return text === undefined ? this.#gone() : { text };
  }

  /** A document's outline as this version holds it; the last one read is kept (one answer's hits often share it). */
  outlineOf(id: string): Outline | undefined {
    if (this.#lastOutline?.id !== id) {
      const document = this.getDocument(id);
      this.#lastOutline = { id, outline: document === undefined ? undefined : outlineOf(document.text) };
    }
    return this.#lastOutline.outline;
  }

  /** A removed row the store no longer keeps (another process's window is shorter): the version is not whole. */
  #gone(): never {
    throw notRetained(this.indexVersion, `not this one whole (the store keeps less of it)`);
  }

  #notKept(what: string): RpcError {
    return new RpcError(RpcErrorCode.BackendUnavailable, 'snapshot unavailable', {
      detail: `${what} is not served on a pinned indexVersion (§7.7.1); drop indexVersion to use it`,
      retryable: false,
    });
  }
}
