import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { cannotRead, type DocumentParser } from '../documents/index.js';
import { isExportHead, type CorpusDocument, type DocumentOrigin, type PreparedDocument } from '../corpus/index.js';
import { exportHeader, exportLineBytes, fromExported, isExportHeader, type ExportHeader } from './exported.js';
import { BoundedLines, isBlank, type Line } from './lines.js';
import { parseVector } from './vector.js';
import { looksBinary, NOT_UTF8, utf8 } from './text-file.js';
import { countFolderFiles, folderFiles, parseFile, parsedInOrder } from './document-files.js';
import { StartupError } from '../startup-error.js';

/**
 * What `rcp-server ingest` reads: JSON Lines in BEIR form (`{"_id", "title", "text", "metadata"?}`, `id` accepted
 * too), folders of documents (document-files.ts: PDF, Word, HTML, Markdown, text; id = the path under the folder)
 * and single document files (id = the file's name). A BEIR title is kept in `meta.title` (the situating context for
 * `--contextual`) and, as BEIR evaluations do, put before the text.
 *
 * A bad file or line is not a reason to stop: it comes out as a `SourceRejection` (where, and a one-line why) and
 * reading goes on. Only a path named on the command line that does not exist is a `SourceError`: a mistake in the
 * command, found before anything is written.
 */
export interface SourceDocument extends CorpusDocument {
  readonly id: string;
  /** Where it came from, for error messages: `corpus.jsonl:12`, `notes/a.md`. */
  readonly origin: string;
  /** A JSON line's own `vector`, embedded elsewhere: stored as the document's one chunk's, the encoder not asked. */
  readonly vector?: Float32Array | undefined;
  /** A line of an export: the document as another corpus stored it, chunks and vectors (exported.ts). */
  readonly prepared?: PreparedDocument | undefined;
  /** A document file's path as found (its id is the path under the folder named, or its name). */
  readonly file?: string | undefined;
  /** A line of an export embedded again: who wrote the document (§15.2), kept. */
  readonly writtenBy?: DocumentOrigin | undefined;
}

export interface SourceRejection {
  /** The file, or `file:line`, as documents from it are named. */
  readonly origin: string;
  readonly reason: string;
}

/** A file of a folder left alone: its name declares no format read here (`skipped` is its extension). */
export interface SourceSkip {
  readonly origin: string;
  readonly skipped: string;
}

export type SourceItem = SourceDocument | SourceRejection | SourceSkip;

export function isRejection(item: SourceItem): item is SourceRejection {
  return 'reason' in item;
}

export function isSkip(item: SourceItem): item is SourceSkip {
  return 'skipped' in item;
}

/** The corpus's own limits (`index.maxDocumentBytes`, `index.maxMetadataBytes`), so inputs beyond them go unread. */
export interface SourceLimits {
  readonly maxDocumentBytes: number;
  readonly maxMetadataBytes: number;
  /** The encoder's dimension, which a JSON line's `vector` must have (unchecked here when absent). */
  readonly dimension?: number | undefined;
  /** The encoder's identity: an export made with another is refused, unless `reEmbed` (its texts embedded again). */
  readonly encoder?: string | undefined;
  readonly reEmbed?: boolean | undefined;
}

export class SourceError extends StartupError {
  override name = 'SourceError';
}

/**
 * The longest JSON line that could still hold an acceptable document: JSON may write any character as an escape of up
 * to 6 bytes (`\u0001` for one byte), so text and metadata within the limits can take 6 times their size on the line,
 * plus the member names and punctuation around them.
 */
export function maxLineBytes(limits: SourceLimits): number {
  // A vector's numbers as JSON: at most ~24 characters each (`-1.2345678901234567e-10,`) with spacing to spare.
  const vector = 32 * (limits.dimension ?? 0);
  return 6 * (limits.maxDocumentBytes + limits.maxMetadataBytes) + vector + 4096;
}

export async function* readSources(
  paths: readonly string[],
  limits: SourceLimits,
  parser: DocumentParser,
): AsyncGenerator<SourceItem> {
  const ahead = parser.limits.processes;
  for (const path of paths) {
    const kind = await sourceKind(path);
    if (kind === 'folder') yield* parsedInOrder(folderFiles(path), parser, ahead);
    else if (kind === 'jsonl') yield* jsonLines(path, limits);
    else if (kind === 'document') yield await parseFile({ id: basename(path), path }, parser);
    else yield kind;
  }
}

/**
 * How many items the sources hold (for progress and ETA): non-blank lines of JSON Lines and matching files of folders,
 * found without parsing or reading any text file. A path that cannot be read counts once, as the rejection it will be.
 */
export async function countSources(paths: readonly string[], limits: SourceLimits): Promise<number> {
  let count = 0;
  for (const path of paths) {
    const kind = await sourceKind(path);
    if (kind === 'folder') count += await countFolderFiles(path);
    else if (kind === 'jsonl') count += await countLines(path, maxLineBytes(limits));
    else count += 1;
  }
  return count;
}

/**
 * What a path named on the command line is: a folder of documents, JSON Lines, or one document file (read by its
 * content); a path that cannot even be looked at is a rejection.
 */
async function sourceKind(path: string): Promise<'folder' | 'jsonl' | 'document' | SourceRejection> {
  let info;
  try {
    info = await stat(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new SourceError(`${path}: no such file or directory`);
    return { origin: path, reason: cannotRead(error) };
  }
  if (info.isDirectory()) return 'folder';
  return /\.jsonl?$/i.test(path) ? 'jsonl' : 'document';
}

// JSON Lines

interface BeirLine {
  _id?: unknown;
  id?: unknown;
  title?: unknown;
  text?: unknown;
  metadata?: unknown;
  vector?: unknown;
}

async function* jsonLines(path: string, limits: SourceLimits): AsyncGenerator<SourceItem> {
  const name = basename(path);
  const lines = new BoundedLines(maxLineBytes(limits));
  const reading = new JsonLinesFile(name, limits, lines);
  let last = 0;
  try {
    for await (const line of fileLines(path, lines)) {
      last = line.number;
      const item = reading.item(line);
      if (item !== undefined) yield item;
      if (reading.refused) return;
    }
  } catch (error) {
    // The rest of the file is lost, not the run: what was read stays read.
    const reason = error instanceof NotText ? error.message : cannotRead(error);
    yield {
      origin: last === 0 ? name : `${name}:${last + 1}`,
      reason: last === 0 ? reason : `${reason}; read stopped here`,
    };
    return;
  }
  const shortBy = reading.shortBy();
  if (shortBy !== undefined) yield { origin: name, reason: shortBy };
}

/**
 * One JSON Lines file as its lines come: BEIR lines, or an export (exported.ts) when its first line is an export's
 * header, whose encoder must be this corpus's unless its texts are to be embedded again.
 */
class JsonLinesFile {
  #export: ExportHeader | undefined;
  #maxLine: number;
  #documents = 0;
  #seen = false;
  /** The whole file is refused (an export of another encoder, or of a format this server does not read). */
  refused = false;

  constructor(
    private readonly name: string,
    private readonly limits: SourceLimits,
    private readonly lines: BoundedLines,
  ) {
    this.#maxLine = maxLineBytes(limits);
  }

  item(line: Line): SourceItem | undefined {
    const origin = `${this.name}:${line.number}`;
    const parsed = parseLine(line, origin, this.#maxLine);
    if (parsed === undefined) return undefined;
    const first = !this.#seen;
    this.#seen = true;
    if ('reason' in parsed) return this.#counted(parsed);
    const { value } = parsed;
    if (first && isExportHeader(value)) return this.#header(value, origin);
    if (this.#export === undefined) return fromBeir(value, origin, this.limits.dimension);
    return this.#counted(fromExported(value, origin, this.#export.dimension, this.limits.reEmbed === true));
  }

  #header(value: Record<string, unknown>, origin: string): SourceRejection | undefined {
    const header = exportHeader(value, this.limits);
    if ('reason' in header) {
      this.refused = true;
      return { origin, reason: header.reason };
    }
    this.#export = header;
    this.#maxLine = exportLineBytes(this.#maxLine, header.dimension);
    this.lines.allow(this.#maxLine);
    return undefined;
  }

  #counted(item: SourceItem): SourceItem {
    this.#documents += 1;
    return item;
  }

  /** An export that holds other than the documents its header names: why, else undefined. */
  shortBy(): string | undefined {
    const expected = this.#export?.documents;
    if (expected === undefined || expected === this.#documents) return undefined;
    return `holds ${this.#documents} document lines, its header names ${expected}: the file was cut short or changed`;
  }
}

class NotText extends Error {}

async function* fileLines(path: string, lines: BoundedLines): AsyncGenerator<Line> {
  let first = true;
  for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) {
    // A NUL cannot appear in JSON: a file holding one early is binary, one rejection rather than one per "line".
    if (first && looksBinary(chunk)) throw new NotText('binary, not text (a NUL byte in its first 8 KB)');
    first = false;
    yield* lines.push(chunk);
  }
  yield* lines.end();
}

async function countLines(path: string, maxLine: number): Promise<number> {
  let count = 0;
  try {
    for await (const line of fileLines(path, new BoundedLines(maxLine))) {
      // An export's header is no document: as `rcp-server export` writes it, its line begins with its name.
      const header = count === 0 && 'bytes' in line && isExportHead(line.bytes);
      if (!header && (!('bytes' in line) || !isBlank(line.bytes))) count += 1;
    }
  } catch {
    count += 1;
  }
  return count;
}

/** A line's JSON object; a rejection saying why it is none; undefined for a blank line. */
function parseLine(
  line: Line,
  origin: string,
  maxLine: number,
): { value: Record<string, unknown> } | SourceRejection | undefined {
  if ('oversized' in line) {
    return { origin, reason: `a line of ${line.oversized} bytes exceeds the ${maxLine}-byte limit for one line` };
  }
  if (isBlank(line.bytes)) return undefined;
  const text = utf8(line.bytes);
  if (text === undefined) return { origin, reason: NOT_UTF8 };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { origin, reason: 'not JSON' };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    return { origin, reason: 'not a JSON object' };
  }
  return { value: parsed as Record<string, unknown> };
}

function fromBeir(line: BeirLine, origin: string, dimension: number | undefined): SourceItem {
  const id = line._id ?? line.id;
  if (typeof id !== 'string' && typeof id !== 'number') return { origin, reason: 'no "_id" or "id"' };
  if (typeof line.text !== 'string') return { origin, reason: 'no "text"' };
  const title = typeof line.title === 'string' && line.title.trim() !== '' ? line.title.trim() : undefined;
  const metadata =
    typeof line.metadata === 'object' && line.metadata !== null ? (line.metadata as Record<string, unknown>) : {};
  const vector = line.vector === undefined ? undefined : parseVector(line.vector, dimension);
  if (vector !== undefined && 'reason' in vector) return { origin, reason: vector.reason };
  return {
    id: String(id),
    text: title === undefined ? line.text : `${title}\n\n${line.text}`,
    meta: title === undefined ? metadata : { ...metadata, title },
    origin,
    ...(vector === undefined ? {} : { vector }),
  };
}
