/**
 * The models' ports (docs/architecture.md §3): what methods, retrieval stages and the corpus may ask of a model.
 * The adapters under src/models/ implement them; other layers reach them through src/models/index.ts.
 *
 * Fault contract: a port method either resolves, or rejects with an RpcError (-32010 when the model cannot run,
 * -32011 when its queue is full, -32006/-32014 when the caller's signal aborts). Anything else is a bug.
 */

import type { RpcError } from '../protocol/errors.js';
import type { TimeSlice } from '../protocol/time-slice.js';

export type TextKind = 'query' | 'document';

/**
 * Told as a call's texts come back from the model, a batch at a time: how many of its `total` are done (§9 progress;
 * docs/architecture.md §10). Called on the event loop; it must not throw.
 */
export type BatchProgress = (done: number, total: number) => void;

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
  /**
   * One vector per text, in order. `caller`: whose work it is — the model's queue takes turns between callers, and
   * takes texts of kind 'query' before bulk work (docs/architecture.md §10).
   */
  embed(
    texts: readonly string[],
    kind: TextKind | undefined,
    signal?: AbortSignal,
    caller?: string,
    progress?: BatchProgress,
  ): Promise<Float32Array[]>;
  /**
   * -32011 when `caller`'s own texts waiting at the model's queue are past `maxQueueWaitMs` of work (§15.5;
   * docs/architecture.md §10); undefined if not. A write asks before it chunks and tokenizes its documents.
   */
  queueRefusal?(caller: string | undefined): RpcError | undefined;
  /**
   * Contextual token vectors per text (rows of `dimension` floats, padding excluded), for late interaction (§7.5).
   * Absent when the model does not expose them.
   */
  embedTokens?(
    texts: readonly string[],
    kind: TextKind | undefined,
    signal?: AbortSignal,
    caller?: string,
    progress?: BatchProgress,
  ): Promise<TokenMatrix[]>;
}

export interface TokenMatrix {
  readonly rows: number;
  readonly dimension: number;
  readonly data: Float32Array;
  /**
   * Where the tokenizer can tell: each row's characters in the input text, flat `[start, end, …]` (2 × rows), in
   * UTF-16 code units, `end` exclusive (§7.5: token offsets that align with chunk boundaries).
   */
  readonly offsets?: Uint32Array;
}

export interface CrossEncoderInfo {
  readonly identity: string;
  readonly maxTokens: number;
}

/** A (query, passage) → relevance scorer (§7.6 `cross-encoder`). `progress`: as for {@link Encoder.embed}. */
export interface CrossEncoder {
  readonly info: CrossEncoderInfo;
  health(): ModelHealth;
  /** One score per passage, in order; higher is more relevant. `caller`, `progress`: as for {@link Encoder.embed}. */
  score(
    query: string,
    passages: readonly string[],
    signal?: AbortSignal,
    caller?: string,
    progress?: BatchProgress,
  ): Promise<Float32Array>;
}

/**
 * §7.5 MaxSim: for each document, Σ over query tokens of the best cosine against any document token. A port so the
 * arithmetic runs in the model runtime's threads (vectorised, off the event loop) rather than in JavaScript.
 */
export interface LateInteractionKernel {
  maxSim(query: TokenMatrix, documents: readonly TokenMatrix[], signal?: AbortSignal): Promise<Float32Array>;
}
