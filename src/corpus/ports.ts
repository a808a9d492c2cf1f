import type { Screen } from './screen/screen.js';
/**
 * The corpus's ports (docs/architecture.md §3): what methods and retrieval stages may ask of the store of record and
 * its indexes. src/corpus/ implements them; other layers reach them through src/corpus/index.ts.
 *
 * Fault contract: as the models' ports (src/models/ports.ts): resolve, or reject with an RpcError.
 */

import type { TextKind } from '../models/index.js';
import type { Outline } from './outline.js';

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
  /** Who writes (§15.6): the model's queue takes turns between callers (docs/architecture.md §10). */
  readonly caller?: string | undefined;
  readonly commit?: (() => void) | undefined;
  /** Told as each stage of the write ends (§9): see {@link WriteStage}. */
  readonly progress?: WriteProgress | undefined;
}

/**
 * The stages of a write, in order, each reported as it ends: `chunk` (documents validated and chunked), `embed` (once
 * per model batch of chunks), `write` (committed to the store of record: past this the write stands), `index` (applied
 * to this process's indexes). `fraction` is of the whole write.
 */
export type WriteStage = 'chunk' | 'embed' | 'write' | 'index';
export type WriteProgress = (stage: WriteStage, fraction: number, message: string) => void;

/** The write side of the corpus (§7.10, §7.11): durable when the promise resolves. */
export interface CorpusWriter {
  add(
    documents: readonly CorpusDocument[],
    options: WriteCaller & {
      chunk: boolean;
      contextual: boolean;
      idempotencyKey?: string | undefined;
      /** Most chunks the write may make; more is -32013 before anything is embedded. */
      maxChunks?: number | undefined;
    },
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
  /** The injection screen of its text (screen/screen.ts) as stored; absent in a row written before it was. */
  readonly screen?: Screen | undefined;
}

/** A stored chunk without its vector: what a hit is built from (the vector, when asked for, is read apart). */
export type ChunkBody = Omit<ChunkRecord, 'vector'>;

export interface ChunkPlace {
  readonly docId: string;
  readonly ordinal: number;
}

/** How a dense search runs: `exact` scores every vector (deterministic in any process, §7.7.1), not the graph. */
export interface DenseSearchOptions {
  readonly exact?: boolean | undefined;
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
    options?: DenseSearchOptions,
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
  /** The lexical index's term weights for a text (BM25's query or document side, §7.4 embed/sparse), in time slices. */
  termWeights(text: string, kind: TextKind, signal?: AbortSignal): Promise<Map<string, number>>;
  labelsWhere(predicate: (meta: Record<string, unknown>) => boolean, signal?: AbortSignal): Promise<number[]>;
  getChunk(label: number): ChunkBody | undefined;
  /**
   * The injection screen of a hit's body (docs/trust.md): the chunk's stored one, or (a chunk stored without one, or
   * `document`, the text of its page or whole document, as the body of a `unit: "page"` or `"document"` hit)
   * screened now and kept, bounded.
   */
  screenOf(chunk: ChunkBody, document?: string): Screen;
  /** The screen of a page's or a document's text (as `screenOf`), screened in time slices and kept for screenOf. */
  screenBody(chunk: ChunkBody, document: string, signal?: AbortSignal): Promise<Screen>;
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
  /** The headings and page breaks of a document's text (outline.ts), for a hit's heading path and pages. */
  outlineOf(id: string): Outline | undefined;
  /**
   * §7.7.1 the corpus as version `pinned` holds it (absent: the live corpus); -32010 when that version is not held
   * (`retryable: false` once it is gone, retryable while this process has not reached it yet).
   */
  at(pinned: string | undefined): Promise<CorpusReader>;
  /** Throws -32010 if the version this reader serves left the window while a request used it. */
  verify(): void;
  readonly indexVersion: string;
}
