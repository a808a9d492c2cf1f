import { createWriteStream, renameSync } from 'node:fs';
import { once } from 'node:events';
import { dirname, join } from 'node:path';
import { isFile, removeFile, syncPath } from '../../platform/files.js';
import { StoreError } from '../store/dir-lock.js';
import { STORE_FILE } from '../store/scrub.js';
import { StoreExport, type ExportedChunk, type ExportedDocument } from '../store/store-export.js';
import { outputFile, type OutputKind } from './output.js';

/**
 * The first line of an export (docs/corpus.md, "Export and import"): what the documents after it were embedded with,
 * and how many of them there are, so that an import can refuse another encoder's vectors and tell a file cut short.
 */
export interface ExportHeader {
  readonly rcpExport: 1;
  readonly encoder: string;
  readonly dimension: number;
  readonly indexVersion: string;
  readonly store: string;
  readonly documents: number;
  readonly chunks: number;
  readonly created: string;
}

/** How an export begins, as this writes it: its header's first member (ingest knows an export by it). */
const EXPORT_HEAD = '{"rcpExport":';

/** Whether bytes are the beginning of an export. */
export const isExportHead = (bytes: Buffer): boolean =>
  bytes.subarray(0, EXPORT_HEAD.length).toString('latin1') === EXPORT_HEAD;

/** An export's `--to`: replaced only if it is an export. */
const EXPORT_OUTPUT: OutputKind = { name: 'export', isOurs: isExportHead };

/**
 * `rcp-server export --to FILE`: every document of the data dir's store (a replica's: its snapshot) as JSON Lines,
 * with its metadata, origin, content hash and chunks (offsets, context, vector as §7.3.1 `f32-base64`), as of one read
 * transaction while servers write on. Written beside FILE (output.ts), then renamed over it.
 */
export async function exportDataDir(dir: string, to: string): Promise<ExportHeader> {
  const storeFile = join(dir, STORE_FILE);
  if (!isFile(storeFile)) throw new StoreError(`${dir} holds no corpus (no ${STORE_FILE})`);
  const output = outputFile(dir, to, EXPORT_OUTPUT);
  const partial = output.temporary('.tmp');
  const reader = StoreExport.open(storeFile);
  try {
    const out = createWriteStream(partial, { flags: 'wx', mode: 0o600 });
    const failed = once(out, 'error').then(([error]) => Promise.reject(error as Error));
    failed.catch(() => undefined);
    const header = headerOf(reader);
    const write = async (line: string) => {
      if (!out.write(`${line}\n`)) await Promise.race([once(out, 'drain'), failed]);
    };
    await write(JSON.stringify(header));
    for (const document of reader.documents()) await write(JSON.stringify(exportedLine(document)));
    out.end();
    await Promise.race([once(out, 'finish'), failed]);
    syncPath(partial);
    renameSync(partial, output.target);
    syncPath(dirname(output.target));
    return header;
  } finally {
    reader.close();
    removeFile(partial);
  }
}

function headerOf(reader: StoreExport): ExportHeader {
  const { facts, counts, dimension } = reader;
  return {
    rcpExport: 1,
    encoder: facts.encoder ?? '',
    dimension,
    indexVersion: String(facts.seq),
    store: facts.store,
    ...counts,
    created: new Date().toISOString(),
  };
}

function exportedLine(document: ExportedDocument): Record<string, unknown> {
  return {
    _id: document.id,
    text: document.text,
    metadata: JSON.parse(document.meta) as unknown,
    origin: document.origin,
    hash: document.hash,
    chunks: withOffsets(document).map(exportedChunk),
  };
}

/**
 * The chunks with their offsets: a chunk of a store from before offsets were kept (`end` -1) is found in its text,
 * after the chunk before it; one that is not found keeps `end` -1 (and its text), which an import refuses but with
 * --re-embed.
 */
function withOffsets(document: ExportedDocument): ExportedChunk[] {
  let from = 0;
  return document.chunks.map((chunk) => {
    if (chunk.end !== -1) return chunk;
    const at = document.text.indexOf(chunk.text, from);
    if (at === -1 || chunk.text === '') return chunk;
    from = at + 1;
    return { ...chunk, start: at, end: at + chunk.text.length };
  });
}

/** A chunk's text is its document's slice by its offsets; only a chunk from a store that kept none carries it. */
function exportedChunk(chunk: ExportedChunk): Record<string, unknown> {
  const { start, end, context, vector } = chunk;
  const bytes = Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength);
  return {
    start,
    end,
    ...(context === '' ? {} : { context }),
    ...(end === -1 ? { text: chunk.text } : {}),
    vector: bytes.toString('base64'),
  };
}
