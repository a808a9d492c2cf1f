import { RpcError } from '../protocol/errors.js';
import type { CorpusDocument } from './ports.js';
import type { DocumentOrigin, NewChunk } from './store/corpus-store.js';

/**
 * A document as another corpus stored it (`rcp-server ingest` of a file `rcp-server export` wrote, docs/corpus.md
 * "Export and import"): its chunks with their offsets, contexts and vectors, its content hash and its origin. Stored
 * as it is: the encoder is not asked, and the chunks are not made again.
 */
export interface PreparedDocument {
  readonly chunks: readonly NewChunk[];
  readonly hash: string;
  readonly origin: DocumentOrigin;
}

/**
 * The most chunks one imported document may have: the chunker's own worst case at the default 1 MiB document (4,096
 * chunks of one-letter words), which bounds the line that holds them. A document of more is imported with
 * `--re-embed`.
 */
export const MAX_PREPARED_CHUNKS = 4096;

/** The longest context (title and heading) one prepared chunk may carry. */
export const MAX_PREPARED_CONTEXT = 1024;

/** The most text a document's chunks may hold together, in multiples of its own (the chunker's overlap is ~1/5). */
const MAX_COVERAGE = 3;

/**
 * -32602 naming the field unless the prepared chunks can be stored as `document`'s, as the chunker makes them (every
 * chunk a verbatim slice of its document: citations point into it): between 1 and MAX_PREPARED_CHUNKS of them, each
 * `[start, end)` inside the text, not empty, in order (starts and ends rising), together at most MAX_COVERAGE times
 * the text; each context at most MAX_PREPARED_CONTEXT characters; each vector of the encoder's dimension, finite and
 * not all zeros.
 */
export function validatePrepared(
  document: CorpusDocument,
  prepared: PreparedDocument,
  field: string,
  dimension: number,
): void {
  const { chunks } = prepared;
  if (chunks.length === 0 || chunks.length > MAX_PREPARED_CHUNKS) {
    throw RpcError.invalidParams(
      `${field}.chunks`,
      `has ${chunks.length} chunks; 1 to ${MAX_PREPARED_CHUNKS} may be imported`,
    );
  }
  let covered = 0;
  chunks.forEach((chunk, i) => {
    const at = `${field}.chunks.${i}`;
    const { start, end } = chunk;
    const previous = chunks[i - 1];
    const inOrder = previous === undefined || (start > previous.start && end > previous.end);
    if (!(start >= 0 && start < end && end <= document.text.length) || !inOrder) {
      throw RpcError.invalidParams(at, `[${start}, ${end}) is not the next slice of the document's text`);
    }
    if (chunk.text !== document.text.slice(start, end) || chunk.text.trim() === '') {
      throw RpcError.invalidParams(at, "is not a slice of the document's text, or is blank");
    }
    covered += end - start;
    if (chunk.context.length > MAX_PREPARED_CONTEXT) {
      throw RpcError.invalidParams(`${at}.context`, `is over ${MAX_PREPARED_CONTEXT} characters`);
    }
    requireStorableVector(chunk.vector, `${at}.vector`, dimension);
  });
  if (covered > MAX_COVERAGE * document.text.length) {
    throw RpcError.invalidParams(`${field}.chunks`, `cover ${covered} characters, over ${MAX_COVERAGE} times the text`);
  }
}

/**
 * -32602 naming the field unless a vector given with a write can be stored as a chunk's: the encoder's dimension,
 * finite, not all zeros (it has no direction: cosine is undefined).
 */
export function requireStorableVector(vector: Float32Array, field: string, dimension: number): void {
  if (vector.length !== dimension) {
    throw RpcError.invalidParams(field, `has ${vector.length} numbers; the encoder's dimension is ${dimension}`);
  }
  const bad = vector.findIndex((x) => !Number.isFinite(x));
  if (bad !== -1) throw RpcError.invalidParams(field, `[${bad}] is ${vector[bad]}, not a finite number`);
  if (vector.every((x) => x === 0)) throw RpcError.invalidParams(field, 'is all zeros: it has no direction');
}
