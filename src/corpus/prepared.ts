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

/**
 * -32602 naming the field unless the prepared chunks can be stored as `document`'s: between 1 and
 * MAX_PREPARED_CHUNKS of them, each a slice of the document's text by its offsets (`0 <= start < end <= length` and
 * `text === text.slice(start, end)`, as the chunker makes them; or `start` 0 and `end` -1 from a store that kept no
 * offsets), each vector of the encoder's dimension, finite and not all zeros.
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
  chunks.forEach((chunk, i) => {
    const at = `${field}.chunks.${i}`;
    const { start, end } = chunk;
    const offsetsKept = end !== -1 || start !== 0;
    const inside = start >= 0 && start < end && end <= document.text.length;
    if (offsetsKept && (!inside || chunk.text !== document.text.slice(start, end))) {
      throw RpcError.invalidParams(at, `[${start}, ${end}) is not a slice of the document's text`);
    }
    if (chunk.text.trim() === '') throw RpcError.invalidParams(at, 'is empty');
    if (chunk.context.length > MAX_PREPARED_CONTEXT) {
      throw RpcError.invalidParams(`${at}.context`, `is over ${MAX_PREPARED_CONTEXT} characters`);
    }
    const { vector } = chunk;
    if (vector.length !== dimension) {
      throw RpcError.invalidParams(
        `${at}.vector`,
        `has ${vector.length} numbers; the encoder's dimension is ${dimension}`,
      );
    }
    if (!vector.every(Number.isFinite) || vector.every((x) => x === 0)) {
      throw RpcError.invalidParams(`${at}.vector`, 'is not finite, or all zeros');
    }
  });
}
