import { createHash, randomUUID } from 'node:crypto';
import { RpcError } from '../protocol/errors.js';
import { TimeSlice } from '../protocol/time-slice.js';
import { requireWellFormed } from '../protocol/validation.js';
import type { Encoder } from '../models/index.js';
import { chunkText } from './chunking.js';
import { screenInSlices } from './screen/screen.js';
import { validateMetadata, type FieldType, type MetadataLimits } from './metadata.js';
import type { CorpusDocument, WriteCaller } from './ports.js';
import { MAX_PREPARED_CONTEXT, requireStorableVector, validatePrepared, type PreparedDocument } from './prepared.js';
import type { DocumentOrigin, NewChunk, NewDocument } from './store/corpus-store.js';

/**
 * A write's preparation (docs/architecture.md §5): every document validated (all or nothing), chunked and embedded,
 * outside the write lock and before anything is written.
 */

/** Texts embedded per encoder call: keeps one large write within the model queue's bound. */
const EMBED_SLICE = 64;

/**
 * §9 the share of a write done as each stage ends (ports.ts `WriteStage`; `read`: index/add's bodies read and parsed,
 * before the corpus has them): embedding is most of it.
 */
export const WRITE_PROGRESS = { read: 0.05, chunked: 0.1, embedded: 0.9, written: 0.95, indexed: 1 } as const;

export interface AddOptions extends WriteCaller {
  /** `operator` for `rcp-server ingest`; everything over the wire is `client` (§15.2). */
  readonly origin?: DocumentOrigin | undefined;
  readonly chunk: boolean;
  readonly contextual: boolean;
  readonly idempotencyKey?: string | undefined;
  /**
   * Vectors embedded elsewhere, by document index (`rcp-server ingest` of records that carry a `vector`): such a
   * document is one chunk stored with that vector, unit length when the encoder's outputs are (docs/corpus.md), and
   * the encoder is not asked. It cannot be chunked (one vector is one chunk).
   */
  readonly vectors?: readonly (Float32Array | undefined)[] | undefined;
  /**
   * Documents as another corpus stored them, by document index (prepared.ts): stored with their own chunks, vectors,
   * hash and origin; neither chunked nor embedded here.
   */
  readonly prepared?: readonly (PreparedDocument | undefined)[] | undefined;
  /** Who wrote each document, by index, where not the caller: an export's documents keep theirs (§15.2). */
  readonly origins?: readonly (DocumentOrigin | undefined)[] | undefined;
  /**
   * Most chunks the write may make (`index.maxChunksPerAdd` for index/add): past it, -32013 while chunking, before
   * anything is embedded. Every writer of the dir waits while a write is applied (docs/architecture.md §5).
   */
  readonly maxChunks?: number | undefined;
}

/** What a document must satisfy to be stored (configuration `index.*`). */
export interface DocumentRules {
  readonly maxDocumentBytes: number;
  readonly metadata: MetadataLimits;
  readonly fields: Readonly<Record<string, FieldType>>;
}

/** Validates every document (all or nothing), chunks and embeds them; nothing is written here. */
export async function prepareDocuments(
  documents: readonly CorpusDocument[],
  options: AddOptions,
  encoder: Encoder,
  rules: DocumentRules,
): Promise<NewDocument[]> {
  const given = options.vectors ?? [];
  const prepared = options.prepared ?? [];
  documents.forEach((document, i) => {
    validateDocument(document, `documents.${i}`, rules);
    const vector = given[i];
    if (vector !== undefined) validateGivenVector(vector, `documents.${i}.vector`, encoder.info.dimension, options);
    const own = prepared[i];
    if (own !== undefined) validatePrepared(document, own, `documents.${i}`, encoder.info.dimension);
  });
  const encoded = documents.filter((_, i) => given[i] === undefined && prepared[i] === undefined);
  // §15.5: a caller whose own texts waiting at the model are past the queue's time bound is refused before its
  // documents are chunked and tokenized (docs/architecture.md §10), not after that work.
  const refusal = encoded.length > 0 ? encoder.queueRefusal?.(options.caller) : undefined;
  if (refusal !== undefined) throw refusal;
  const staged = await stageDocuments(documents, options, encoder);
  const texts = staged
    .filter((_, i) => given[i] === undefined && prepared[i] === undefined)
    .flatMap((document) => document.chunks.map((chunk) => lexicalText(chunk.text, chunk.context)));
  const made = staged.reduce((sum, document) => sum + document.chunks.length, 0);
  options.progress?.('chunk', WRITE_PROGRESS.chunked, `${staged.length} documents in ${made} chunks`);
  const vectors = texts.length === 0 ? [] : await embedDistinct(texts, encoder, options);
  let next = 0;
  return staged.map((document, i) => {
    const own = prepared[i];
    if (own !== undefined) {
      // An export carries no screens (docs/trust.md): its chunks were screened as they were staged.
      const chunks = own.chunks.map((chunk, c) => ({
        ...storedChunk(chunk, encoder),
        screen: document.chunks[c]?.screen,
      }));
      return { ...document, ...own, hash: importedHash(documents[i]!, own), chunks };
    }
    const vector = given[i];
    const stored = vector === undefined ? undefined : storedVector(vector, encoder.info.normalized);
    return {
      ...document,
      chunks: document.chunks.map((chunk) => ({
        ...chunk,
        vector: stored ?? vectors[next++] ?? new Float32Array(encoder.info.dimension),
      })),
    };
  });
}

/**
 * Each document's id, hash, origin and chunks (without vectors), chunked unless given its chunks or a vector, in time
 * slices; past `options.maxChunks` chunks, -32013 before anything is embedded.
 */
async function stageDocuments(documents: readonly CorpusDocument[], options: AddOptions, encoder: Encoder) {
  const count = options.chunk ? await encoder.tokenCounter() : undefined;
  const slice = new TimeSlice(options.signal);
  const staged = [];
  let made = 0;
  for (const [i, document] of documents.entries()) {
    const meta = document.meta ?? {};
    // An export's chunks are its own (prepared.ts), staged here to be screened.
    const own = options.prepared?.[i]?.chunks.map(({ text, start, end }) => ({ text, start, end, headings: [] }));
    const pieces =
      own ??
      (count === undefined
        ? [{ text: document.text, headings: [], start: 0, end: document.text.length }]
        : await chunkText(document.text, count, encoder.info.maxTokens, slice));
    made += pieces.length;
    if (options.maxChunks !== undefined && made > options.maxChunks) {
      throw RpcError.payloadTooLarge(
        `documents 0-${i} already make ${made} chunks, more than the ${options.maxChunks} one index/add may ` +
          'make; nothing was written (split the documents over several calls)',
        'documents',
      );
    }
    const title = typeof meta.title === 'string' ? meta.title : undefined;
    const chunks = [];
    for (const piece of pieces) {
      const context = options.contextual ? situatingContext(title, piece.headings) : '';
      // docs/trust.md: each chunk's injection screen is stored with it (~0.1 ms a kilobyte, in time slices).
      const screen = await screenInSlices(piece.text, () => slice.due());
      chunks.push({ text: piece.text, start: piece.start, end: piece.end, context, screen });
      await slice.due();
    }
    const id = document.id ?? randomUUID();
    const origin = options.origins?.[i] ?? options.origin ?? 'client';
    const hash = contentHash(document.text, meta, options, options.vectors?.[i]);
    staged.push({ id, text: document.text, meta, hash, origin, chunks });
    // Hashing a megabyte of text takes ~2 ms: a batch of them gives the loop back between documents.
    await slice.due();
  }
  return staged;
}

/**
 * A prepared chunk as the store keeps it: a vector already of unit length (as exported from a store that keeps them
 * so) is kept bit for bit, so the imported corpus scores exactly as the exported one; any other as a given vector.
 */
function storedChunk(chunk: NewChunk, encoder: Encoder): NewChunk {
  let squares = 0;
  for (const x of chunk.vector) squares += x * x;
  if (!encoder.info.normalized || Math.abs(Math.sqrt(squares) - 1) < UNIT_TOLERANCE) return chunk;
  return { ...chunk, vector: storedVector(chunk.vector, true) };
}

/**
 * An imported document's content hash: the export's, when it is what `ingest` computes for this text and metadata
 * with some chunking option (so re-ingesting the source skips it); else one of the document as imported, so that a
 * hash that does not belong to its text can never make a later ingest of the real source skip it.
 */
function importedHash(document: CorpusDocument, prepared: PreparedDocument): string {
  const meta = document.meta ?? {};
  const options = [false, true].flatMap((chunk) => [false, true].map((contextual) => ({ chunk, contextual })));
  if (options.some((option) => contentHash(document.text, meta, option) === prepared.hash)) return prepared.hash;
  const hash = createHash('sha256').update(JSON.stringify(['imported', document.text, meta]));
  for (const chunk of prepared.chunks) {
    hash.update(JSON.stringify([chunk.start, chunk.end, chunk.context]));
    hash.update(new Uint8Array(chunk.vector.buffer, chunk.vector.byteOffset, chunk.vector.byteLength));
  }
  return hash.digest('hex');
}

/** How far from 1 a float32 vector's norm may be and still be of unit length as stored (float32 rounding). */
const UNIT_TOLERANCE = 1e-5;

/** -32602 naming the field unless a given vector can be stored (requireStorableVector) and its document not chunked. */
function validateGivenVector(
  vector: Float32Array,
  field: string,
  dimension: number,
  options: Pick<AddOptions, 'chunk'>,
): void {
  if (options.chunk) {
    throw RpcError.invalidParams(field, 'a document with its own vector is one chunk: it cannot also be chunked');
  }
  requireStorableVector(vector, field, dimension);
}

/**
 * A given vector as the store keeps it: scaled to unit length when the encoder's own outputs are (so `ip` ranks as
 * `cosine`, and imported chunks score on the scale of encoded ones), else as given.
 */
function storedVector(vector: Float32Array, normalized: boolean): Float32Array {
  if (!normalized) return Float32Array.from(vector);
  let squares = 0;
  for (const x of vector) squares += x * x;
  const norm = Math.sqrt(squares);
  return vector.map((x) => x / norm);
}

/**
 * One vector per text, each distinct text embedded once: a write's repeated chunks (boilerplate, a document of one
 * repeated line) share the vector, which is the model's per-chunk cost, ~6 ms of two cores. A 1 MiB document of
 * one-letter words (4,096 identical chunks) took 27 s of model time; now one inference.
 */
async function embedDistinct(
  texts: readonly string[],
  encoder: Encoder,
  { signal, caller, progress }: WriteCaller,
): Promise<Float32Array[]> {
  const first = new Map<string, number>();
  const distinct: string[] = [];
  const slot = texts.map((text) => {
    let at = first.get(text);
    if (at === undefined) first.set(text, (at = distinct.push(text) - 1));
    return at;
  });
  const vectors: Float32Array[] = [];
  const total = distinct.length;
  const { chunked, embedded } = WRITE_PROGRESS;
  for (let start = 0; start < total; start += EMBED_SLICE) {
    // §9: a frame per model batch, counting the distinct chunk texts embedded so far.
    const batch =
      progress === undefined
        ? undefined
        : (done: number) =>
            progress(
              'embed',
              chunked + ((embedded - chunked) * (start + done)) / total,
              `embedded ${start + done}/${total}`,
            );
    vectors.push(
      ...(await encoder.embed(distinct.slice(start, start + EMBED_SLICE), 'document', signal, caller, batch)),
    );
  }
  return slot.map((at) => vectors[at] ?? new Float32Array(encoder.info.dimension));
}

/** -32602 naming the field unless `document` can be stored. */
function validateDocument(document: CorpusDocument, field: string, rules: DocumentRules): void {
  if (document.text.trim() === '') throw RpcError.invalidParams(`${field}.text`, 'a document needs text');
  // The store keeps UTF-8: a lone surrogate would come back as U+FFFD, and the id or the citation offsets with it.
  if (document.id !== undefined) requireWellFormed(document.id, `${field}.id`);
  requireWellFormed(document.text, `${field}.text`);
  const bytes = Buffer.byteLength(document.text);
  if (bytes > rules.maxDocumentBytes) {
    throw RpcError.invalidParams(`${field}.text`, `${bytes} bytes exceed the ${rules.maxDocumentBytes}-byte limit`);
  }
  validateMetadata(document.meta ?? {}, rules.fields, `${field}.meta`, rules.metadata);
}

/**
 * A chunk's situating context (`contextual: true`, §7.10): the document's title, then the path of headings the chunk
 * lies under (`A study — Methods › Samples`); a heading that repeats the title is left out.
 */
export function situatingContext(title: string | undefined, headings: readonly string[]): string {
  const path = headings.filter((heading) => heading !== title);
  const context = [title, path.join(' › ')].filter((part) => part !== undefined && part !== '').join(' — ');
  // Bounded as an export's chunk context is (prepared.ts), never cutting a surrogate pair.
  return context.length <= MAX_PREPARED_CONTEXT
    ? context
    : context.slice(0, MAX_PREPARED_CONTEXT).replace(/[\uD800-\uDBFF]$/, '');
}

/** What the lexical index and the encoder read of a chunk: its context (title, heading) before its text. */
export function lexicalText(text: string, context: string): string {
  return context === '' ? text : `${context}\n\n${text}`;
}

/**
 * What ingest compares to skip unchanged documents. A given vector counts as it was given (its float32 bytes, before
 * any scaling): a record re-imported with another vector is written again.
 */
export function contentHash(
  text: string,
  meta: Record<string, unknown>,
  options: Pick<AddOptions, 'chunk' | 'contextual'>,
  vector?: Float32Array,
): string {
  const hash = createHash('sha256').update(JSON.stringify([text, meta, options.chunk, options.contextual]));
  if (vector !== undefined)
    hash.update('\0vector\0').update(new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength));
  return hash.digest('hex');
}
