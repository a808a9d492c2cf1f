import {
  MAX_PREPARED_CHUNKS,
  MAX_PREPARED_CONTEXT,
  type DocumentOrigin,
  type ExportHeader as ExportFileHeader,
  type PreparedDocument,
} from '../corpus/index.js';
import type { SourceItem } from './sources.js';
import { parseVector } from './vector.js';

/**
 * A file `rcp-server export` wrote (docs/corpus.md, "Export and import"), read by `rcp-server ingest`: its first line
 * names the encoder and the documents that follow; each document line carries its chunks with their vectors, stored as
 * they are when the encoder is this corpus's, or (with `--re-embed`) read as text to be chunked and embedded again.
 */
export type ExportHeader = Pick<ExportFileHeader, 'encoder' | 'dimension' | 'documents'>;

/** Whether a first line's object is an export's header (it names `rcpExport`). */
export function isExportHeader(value: object): boolean {
  return 'rcpExport' in value;
}

/** The most numbers a vector of an export may have (a bound on its lines, whatever its header says). */
const MAX_DIMENSION = 8192;

/**
 * The header, or why the file is not read: a format this server does not read, or vectors this corpus cannot search
 * (another encoder, or another dimension than its encoder's) unless `reEmbed` (its texts embedded again).
 */
export function exportHeader(
  value: Record<string, unknown>,
  corpus: {
    readonly encoder?: string | undefined;
    readonly dimension?: number | undefined;
    readonly reEmbed?: boolean | undefined;
  },
): ExportHeader | { reason: string } {
  const { rcpExport, encoder, dimension, documents } = value;
  if (rcpExport !== 1)
    return { reason: `an export of format ${JSON.stringify(rcpExport)}; this server reads format 1` };
  if (typeof encoder !== 'string' || !Number.isSafeInteger(dimension) || !Number.isSafeInteger(documents)) {
    return { reason: 'an export header without its "encoder", "dimension" and "documents"' };
  }
  const header = { encoder, dimension: dimension as number, documents: documents as number };
  if (header.dimension < 1 || header.dimension > MAX_DIMENSION) {
    return { reason: `an export of ${header.dimension}-number vectors; at most ${MAX_DIMENSION} are read` };
  }
  if (corpus.reEmbed === true) return header;
  if (corpus.encoder !== undefined && encoder !== corpus.encoder) {
    return {
      reason: `exported with the encoder ${encoder}, not this corpus's ${corpus.encoder}: ingest it with --re-embed to embed its texts again`,
    };
  }
  if (corpus.dimension !== undefined && header.dimension !== corpus.dimension) {
    return { reason: `its vectors have ${header.dimension} numbers, this corpus's encoder makes ${corpus.dimension}` };
  }
  return header;
}

/**
 * The longest document line of an export whose vectors are of `dimension` numbers: `base` (a BEIR line's bound) and
 * MAX_PREPARED_CHUNKS chunks of a base64 vector, a context written with escapes and their offsets.
 */
export function exportLineBytes(base: number, dimension: number): number {
  return base + MAX_PREPARED_CHUNKS * (Math.ceil((dimension * 4) / 3) + 6 * MAX_PREPARED_CONTEXT + 128);
}

interface ExportedLine {
  _id?: unknown;
  text?: unknown;
  metadata?: unknown;
  origin?: unknown;
  hash?: unknown;
  chunks?: unknown;
}

interface ExportedChunkLine {
  start?: unknown;
  end?: unknown;
  context?: unknown;
  vector?: unknown;
}

/** A document line: its document, prepared from its chunks unless `reEmbed`; or why it is none. */
export function fromExported(line: ExportedLine, origin: string, dimension: number, reEmbed: boolean): SourceItem {
  const { _id: id, text, metadata } = line;
  if (typeof id !== 'string') return { origin, reason: 'no "_id"' };
  if (typeof text !== 'string') return { origin, reason: 'no "text"' };
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) {
    return { origin, reason: '"metadata" is not an object' };
  }
  const writtenBy = line.origin === 'client' || line.origin === 'operator' ? line.origin : undefined;
  if (writtenBy === undefined) return { origin, reason: '"origin" is neither "client" nor "operator"' };
  const document = { id, text, meta: metadata as Record<string, unknown>, origin };
  // §15.2: who wrote it is kept, embedded again or not: an import never raises a client's document to the operator's.
  if (reEmbed) return { ...document, writtenBy };
  const prepared = preparedOf(line, text, dimension, writtenBy);
  return 'reason' in prepared ? { origin, reason: prepared.reason } : { ...document, prepared };
}

function preparedOf(
  line: ExportedLine,
  text: string,
  dimension: number,
  origin: DocumentOrigin,
): PreparedDocument | { reason: string } {
  const { hash, chunks } = line;
  if (typeof hash !== 'string' || hash.length > 128) return { reason: '"hash" is not a content hash' };
  if (!Array.isArray(chunks) || chunks.length > MAX_PREPARED_CHUNKS) {
    return { reason: `"chunks" is not a list of at most ${MAX_PREPARED_CHUNKS} chunks` };
  }
  const prepared = [];
  for (const [i, chunk] of (chunks as unknown[]).entries()) {
    if (typeof chunk !== 'object' || chunk === null) return { reason: `"chunks"[${i}] is not an object` };
    const { start, end, context = '', vector } = chunk as ExportedChunkLine;
    if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || typeof context !== 'string') {
      return { reason: `"chunks"[${i}] has no integer "start" and "end", or a "context" that is not a string` };
    }
    const parsed = parseVector(vector, dimension);
    if ('reason' in parsed) return { reason: `"chunks"[${i}]: ${parsed.reason}` };
    // A chunk is its document's slice: a chunk of a store that kept no offsets (`end` -1) is imported with --re-embed.
    if (end === -1)
      return { reason: `"chunks"[${i}] has no offsets (a store from before them): ingest with --re-embed` };
    prepared.push({
      text: text.slice(start as number, end as number),
      context,
      start: start as number,
      end: end as number,
      vector: parsed,
    });
  }
  return { chunks: prepared, hash, origin };
}
