/**
 * Backend ports (docs/architecture.md §3): what methods and pipeline stages may ask of models and indexes. Adapters
 * under src/backend/<adapter>/ implement them; nothing above the backend imports an adapter.
 *
 * Fault contract: a port method either resolves, or rejects with an RpcError (-32010 when the model cannot run,
 * -32011 when its queue is full, -32006/-32014 when the caller's signal aborts). Anything else is a bug.
 */

import type { TimeSlice } from '../protocol/time-slice.js';

export type TextKind = 'query' | 'document';

/** Whether a model can serve now; `reason` says why not (logged, and reported by readiness). */
export interface ModelHealth {
  readonly ready: boolean;
  readonly reason?: string;
}

export interface EncoderInfo {
  /** Stable across restarts; changes whenever the weights or the tokenizer change. */
  readonly identity: string;
  readonly dimension: number;
  readonly normalized: boolean;
  readonly maxTokens: number;
}

/** A dense text encoder (§7.3). */
export interface Encoder {
  readonly info: EncoderInfo;
  health(): ModelHealth;
  /** A synchronous token counter over the encoder's own tokenizer (for chunking to its limit). */
  tokenCounter(): Promise<(text: string) => number>;
  /** The token count of a text of any length (§7.7.2 `tokenBudget`), counted in the caller's time slices. */
  tokenCount(text: string, slice: TimeSlice): Promise<number>;
  /** One vector per text, in order. */
  embed(texts: readonly string[], kind: TextKind | undefined, signal?: AbortSignal): Promise<Float32Array[]>;
  /**
   * Contextual token vectors per text (rows of `dimension` floats, padding excluded), for late interaction (§7.5).
   * Absent when the model does not expose them.
   */
  embedTokens?(texts: readonly string[], kind: TextKind | undefined, signal?: AbortSignal): Promise<TokenMatrix[]>;
}

export interface TokenMatrix {
  readonly rows: number;
  readonly dimension: number;
  readonly data: Float32Array;
}

export interface CrossEncoderInfo {
  readonly identity: string;
  readonly maxTokens: number;
}

/** A (query, passage) → relevance scorer (§7.6 `cross-encoder`). */
export interface CrossEncoder {
  readonly info: CrossEncoderInfo;
  health(): ModelHealth;
  /** One score per passage, in order; higher is more relevant. */
  score(query: string, passages: readonly string[], signal?: AbortSignal): Promise<Float32Array>;
}

/**
 * §7.5 MaxSim: for each document, Σ over query tokens of the best cosine against any document token. A port so the
 * arithmetic runs in the model runtime's threads (vectorised, off the event loop) rather than in JavaScript.
 */
export interface LateInteractionKernel {
  maxSim(query: TokenMatrix, documents: readonly TokenMatrix[], signal?: AbortSignal): Promise<Float32Array>;
}

/** A document as written (index/add over the wire, or `rcp-server ingest`): an id is made when none is given. */
export interface CorpusDocument {
  readonly id?: string | undefined;
  readonly text: string;
  readonly meta?: Record<string, unknown> | undefined;
}

/**
 * A write's caller: `signal` abandons it before it commits (nothing applied); `commit` is called once, right before
 * the commit, and throws if the caller has already given up — after it, the write completes and is answered.
 */
export interface WriteCaller {
  readonly signal?: AbortSignal | undefined;
  readonly commit?: (() => void) | undefined;
}

/** The write side of the corpus (§7.10, §7.11): durable when the promise resolves. */
export interface CorpusWriter {
  add(
    documents: readonly CorpusDocument[],
    options: WriteCaller & { chunk: boolean; contextual: boolean; idempotencyKey?: string | undefined },
  ): Promise<{ ids: string[]; chunks: number; indexVersion: string }>;
  delete(ids: readonly string[], caller?: WriteCaller): Promise<{ deleted: number; indexVersion: string }>;
}

/** Typed metadata fields (configuration `index.fields`; advertised as `filter.fields`, §8). */
export type FieldType = 'keyword' | 'text' | 'int' | 'float' | 'bool' | 'date';

export interface ChunkRecord {
  readonly label: number;
  readonly docId: string;
  readonly ordinal: number;
  readonly text: string;
  readonly context: string;
  /** Character offsets of the chunk in its document. */
  readonly start: number;
  readonly end: number;
  readonly vector: Float32Array;
}

/** A stored chunk without its vector: what a hit is built from (the vector, when asked for, is read apart). */
export type ChunkBody = Omit<ChunkRecord, 'vector'>;

export interface ChunkPlace {
  readonly docId: string;
  readonly ordinal: number;
}

/** The read side of the corpus, for `retrieve` (§7.7). */
export interface CorpusReader {
  /** `caller`: whose turn the search waits for at the index (callers take turns, §15.5). */
  searchDense(
    vector: Float32Array,
    k: number,
    allow?: readonly number[],
    signal?: AbortSignal,
    caller?: string,
  ): Promise<{ label: number; score: number }[]>;
  searchLexical(
    query: string,
    k: number,
    allow?: ReadonlySet<number>,
    signal?: AbortSignal,
  ): Promise<{ label: number; score: number }[]>;
  /** Exact scores of given chunks, for candidates one recall list missed (fusion over the union, §16.3). */
  denseScores(vector: Float32Array, labels: readonly number[], signal?: AbortSignal): Promise<number[]>;
  lexicalScores(query: string, labels: readonly number[], signal?: AbortSignal): Promise<number[]>;
  /** §7.8 query transformation from the corpus's lexical statistics (no language model). */
  transformQuery(query: string, method: 'rewrite' | 'multi-query', n: number, signal?: AbortSignal): Promise<string[]>;
  /** The lexical index's term weights for a text (BM25's query or document side, §7.4 embed/sparse). */
  termWeights(text: string, kind: TextKind): Map<string, number>;
  labelsWhere(predicate: (meta: Record<string, unknown>) => boolean, signal?: AbortSignal): Promise<number[]>;
  getChunk(label: number): ChunkBody | undefined;
  /** A chunk's stored vector alone. */
  vectorOf(label: number): Float32Array | undefined;
  /** The stored vectors of many chunks (a label not stored is absent), read in time slices. */
  vectorsOf(labels: readonly number[], signal?: AbortSignal): Promise<Map<number, Float32Array>>;
  /** Where a chunk sits, from memory (no store read): hit ids and grouping need only this. */
  placeOf(label: number): ChunkPlace | undefined;
  metaOf(documentId: string): Record<string, unknown>;
  /** Who wrote the document: `client` (index/add) or `operator` (rcp-server ingest). */
  originOf(documentId: string): 'client' | 'operator';
  getDocument(id: string): { readonly text: string } | undefined;
  /** Throws -32010 unless `pinned` is absent or the current indexVersion. */
  assertVersion(pinned: string | undefined): void;
  readonly indexVersion: string;
}

/**
 * Dereferences a Content block's `uri` to text (§4.8) under the operator's policy (§15.5). Rejects with -32602 naming
 * `field` when the policy refuses the uri or what it points at is not usable text.
 */
export interface UriFetcher {
  fetchText(uri: string, field: string, signal: AbortSignal): Promise<string>;
}

/** What an engine said about itself at initialize (§7.1), cached per connection (§13.2). */
export interface EngineInfo {
  readonly server: Readonly<Record<string, unknown>>;
  readonly capabilities: Readonly<Record<string, unknown>>;
}

export interface EngineCallOptions {
  /** Milliseconds this call may take, retries included. */
  readonly deadlineMs: number;
  readonly signal?: AbortSignal | undefined;
  /** Attempts for a retryable failure (§12.2); 1 means no retry. */
  readonly attempts?: number;
}

/**
 * A downstream RCP engine of a federation (§16): its registry entry, what it advertised, and calls that resolve with
 * its result or reject with an RpcError (its own, or -32010/-32014 when no answer came in time).
 */
export interface RemoteEngine {
  readonly id: string;
  readonly weight: number;
  readonly required: boolean;
  readonly priority: number;
  /** Where a client may reach it directly (HTTP engines only; §7.13 `endpoint`). */
  readonly endpoint: { transport: 'http'; url: string } | undefined;
  readonly info: EngineInfo | undefined;
  connect(deadlineMs: number, signal?: AbortSignal): Promise<EngineInfo>;
  call(method: string, params: Record<string, unknown>, options: EngineCallOptions): Promise<Record<string, unknown>>;
  /** §7.15 liveness: whether it answers `ping` within `timeoutMs`. */
  alive(timeoutMs: number): Promise<boolean>;
  close(): Promise<void>;
}
