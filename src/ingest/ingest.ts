import { contentHash, type Corpus } from '../corpus/index.js';
import { defaultConfig, parserLimitsOf } from '../config/index.js';
import { RpcError } from '../protocol/errors.js';
import { shardOf } from '../protocol/placement.js';
import { DocumentParser } from '../documents/index.js';
import {
  countSources,
  isRejection,
  isSkip,
  readSources,
  type SourceDocument,
  type SourceItem,
  type SourceLimits,
  type SourceRejection,
} from './sources.js';

export interface IngestOptions {
  readonly chunk: boolean;
  readonly contextual: boolean;
  /** Documents per write (one durable transaction each). */
  readonly batchSize: number;
  /**
   * Only the documents partition `index` (from 0) of `count` owns, as the gateway places them (protocol/placement.ts):
   * the others are counted as elsewhere and left.
   */
  readonly partition?: { readonly index: number; readonly count: number } | undefined;
  /**
   * The corpus's limits (`index.maxDocumentBytes`, `index.maxMetadataBytes`): a file or line beyond them is rejected
   * without being read into memory. Without them, the default configuration's.
   */
  readonly limits?: SourceLimits | undefined;
  /**
   * Reads the files of folders and document files named (docs/documents.md); the caller closes it. Without one, a
   * parser of the default configuration's bounds, closed at the end.
   */
  readonly parser?: DocumentParser | undefined;
}

/** Rejections listed in the summary; the rest are only counted. */
export const LISTED_REJECTIONS = 1000;

function defaultLimits(): SourceLimits {
  const { maxDocumentBytes, maxMetadataBytes } = defaultConfig().index;
  return { maxDocumentBytes, maxMetadataBytes };
}

export interface IngestSummary {
  readonly total: number;
  readonly added: number;
  readonly unchanged: number;
  /** Every rejection counted; the first `LISTED_REJECTIONS` of them listed (a file of bad lines stays bounded). */
  readonly rejectedCount: number;
  readonly rejected: { origin: string; reason: string }[];
  /** Documents another partition owns (`partition`), left out. */
  readonly elsewhere: number;
  /** Files of folders left alone, by extension: their names declare no format read here. */
  readonly skipped: Readonly<Record<string, number>>;
  readonly chunks: number;
  readonly seconds: number;
}

/** Progress on a terminal: one redrawn bar; elsewhere (CI logs, pipes): a plain line every few seconds. */
export class Progress {
  readonly #started = performance.now();
  #lastLine = 0;
  #lastDone = -1;

  constructor(
    private readonly total: number,
    private readonly out: NodeJS.WritableStream & { isTTY?: boolean },
  ) {}

  update(done: number, final = false): void {
    if (final && done === this.#lastDone && this.out.isTTY !== true) return;
    const seconds = (performance.now() - this.#started) / 1000;
    const rate = done / Math.max(seconds, 1e-3);
    const eta = rate > 0 ? (this.total - done) / rate : 0;
    const text = `${done}/${this.total} documents  ${rate.toFixed(1)} docs/s  ETA ${formatDuration(eta)}`;
    if (this.out.isTTY === true) {
      const width = 30;
      const filled = Math.round((width * done) / Math.max(this.total, 1));
      this.out.write(`\r[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${text}  `);
      if (final) this.out.write('\n');
    } else if (final || seconds - this.#lastLine >= 5) {
      this.#lastLine = seconds;
      this.#lastDone = done;
      this.out.write(`ingest: ${text}\n`);
    }
  }
}

function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds)) return '?';
  const s = Math.round(seconds);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}

/**
 * `rcp-server ingest`: the same write path as `index/add` (Corpus.add), in batches. Resumable: a document already
 * stored under its id with the same content hash is skipped. A document the corpus rejects (-32602), and a file or
 * line that is no document (unreadable, binary, too large, not JSON), is reported and left out; the rest is written.
 */
export async function ingest(
  corpus: Corpus,
  paths: readonly string[],
  options: IngestOptions,
  out: NodeJS.WritableStream & { isTTY?: boolean },
): Promise<IngestSummary> {
  const started = performance.now();
  const limits = options.limits ?? defaultLimits();
  const total = await countSources(paths, limits);
  const progress = new Progress(total, out);
  const run = new IngestRun(corpus, options, progress);
  const parser =
    options.parser ??
    new DocumentParser({
      ...parserLimitsOf(defaultConfig()),
      maxTextBytes: limits.maxDocumentBytes,
      maxMetadataBytes: limits.maxMetadataBytes,
    });
  try {
    for await (const item of readSources(paths, limits, parser)) await run.take(item);
  } finally {
    if (options.parser === undefined) parser.close();
  }
  await run.finish();
  progress.update(total, true);
  return run.summary(total, (performance.now() - started) / 1000);
}

/**
 * One run's counts, its pending batch and the write in flight: while a batch is written (store, HNSW and BM25), the
 * next is read and parsed. One write in flight and one batch pending at most.
 */
export class IngestRun {
  added = 0;
  unchanged = 0;
  elsewhere = 0;
  chunks = 0;
  readonly rejected: SourceRejection[] = [];
  rejectedCount = 0;
  readonly skipped: Record<string, number> = {};
  #batch: SourceDocument[] = [];
  #writing: Promise<void> = Promise.resolve();
  /** The files written this run, by id: two folders named may hold a file at the same path under them. */
  readonly #files = new Map<string, string>();
  /** The ids of the write in flight: one of them read again waits for it, so that its stored hash is compared. */
  #writingIds = new Set<string>();

  constructor(
    private readonly corpus: Corpus,
    private readonly options: IngestOptions,
    private readonly progress: Progress,
  ) {}

  async take(item: SourceItem): Promise<void> {
    const { partition } = this.options;
    if (isRejection(item)) {
      this.#reject(item);
    } else if (isSkip(item)) {
      this.skipped[item.skipped] = (this.skipped[item.skipped] ?? 0) + 1;
    } else if (partition !== undefined && shardOf(item.id, partition.count) !== partition.index) {
      this.elsewhere += 1;
    } else if (item.file !== undefined && (this.#files.get(item.id) ?? item.file) !== item.file) {
      const first = this.#files.get(item.id)!;
      this.#reject({ origin: item.file, reason: `has the id of ${first} (${item.id}): it is not written over it` });
    } else if (item.vector !== undefined && this.options.chunk) {
      // One vector is one chunk (docs/corpus.md): chunking would leave the other chunks without one.
      this.#reject({ origin: item.origin, reason: 'a record with "vector" is one chunk; ingest it without --chunk' });
    } else {
      if (item.file !== undefined) this.#files.set(item.id, item.file);
      if (this.#writingIds.has(item.id)) await this.#writing;
      const hash = item.prepared?.hash ?? contentHash(item.text, item.meta ?? {}, this.options, item.vector);
      if (this.corpus.store.hashOf(item.id) === hash) {
        this.unchanged += 1;
        return;
      }
      this.#batch.push(item);
      if (this.#batch.length >= this.options.batchSize) await this.#flush();
    }
  }

  summary(total: number, seconds: number): IngestSummary {
    const { added, unchanged, rejected, rejectedCount, elsewhere, skipped, chunks } = this;
    return { total, added, unchanged, rejected, rejectedCount, elsewhere, skipped, chunks, seconds };
  }

  /** The last batch written, and every write done. */
  async finish(): Promise<void> {
    await this.#flush();
    await this.#writing;
  }

  /** Starts writing the pending batch once the write before it is done (whose error, if any, ends the run here). */
  async #flush(): Promise<void> {
    const batch = this.#batch;
    this.#batch = [];
    await this.#writing;
    this.#writingIds = new Set(batch.map((document) => document.id));
    this.#writing = this.#write(batch);
    // Handled here, awaited at the next flush: an error is the run's, not an unhandled rejection meanwhile.
    this.#writing.catch(() => undefined);
  }

  /** Writes a batch; a document the corpus refuses (-32602 naming it) is rejected and the rest written. */
  async #write(batch: SourceDocument[]): Promise<void> {
    while (batch.length > 0) {
      try {
        const result = await this.corpus.add(batch, {
          chunk: this.options.chunk,
          contextual: this.options.contextual,
          origin: 'operator',
          vectors: batch.some((document) => document.vector !== undefined)
            ? batch.map((document) => document.vector)
            : undefined,
          prepared: batch.some((document) => document.prepared !== undefined)
            ? batch.map((document) => document.prepared)
            : undefined,
          origins: batch.some((document) => document.writtenBy !== undefined)
            ? batch.map((document) => document.writtenBy)
            : undefined,
        });
        this.added += batch.length;
        this.chunks += result.chunks;
        break;
      } catch (error) {
        const index = refusedIndex(error, batch);
        if (index === undefined) throw error;
        this.#reject({ origin: batch[index]!.origin, reason: (error as Error).message });
        batch = batch.filter((_, i) => i !== index);
      }
    }
    this.progress.update(this.added + this.unchanged + this.rejectedCount + this.elsewhere);
  }

  #reject(rejection: SourceRejection): void {
    this.rejectedCount += 1;
    if (this.rejected.length < LISTED_REJECTIONS) this.rejected.push(rejection);
  }
}

/** Which document of the batch a write refused (-32602 with `data.field` `documents.N...`), if that is the error. */
function refusedIndex(error: unknown, batch: readonly SourceDocument[]): number | undefined {
  const field = error instanceof RpcError && error.code === -32602 ? error.data.field : undefined;
  const index = Number(/^documents\.(\d+)/.exec(field ?? '')?.[1]);
  return Number.isInteger(index) && batch[index] !== undefined ? index : undefined;
}
