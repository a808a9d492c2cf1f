import type { Corpus } from '../backend/corpus/corpus.js';
import { contentHash } from '../backend/corpus/corpus.js';
import { RpcError } from '../protocol/errors.js';
import { countSources, readSources, type SourceDocument } from './sources.js';

export interface IngestOptions {
  readonly chunk: boolean;
  readonly contextual: boolean;
  /** Documents per write (one durable transaction each). */
  readonly batchSize: number;
}

export interface IngestSummary {
  readonly total: number;
  readonly added: number;
  readonly unchanged: number;
  readonly rejected: { origin: string; reason: string }[];
  readonly chunks: number;
  readonly seconds: number;
}

/** Progress on a terminal: one redrawn bar; elsewhere (CI logs, pipes): a plain line every few seconds. */
class Progress {
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
 * stored under its id with the same content hash is skipped. A document the corpus rejects (-32602) is reported and
 * left out; the rest of its batch is written.
 */
export async function ingest(
  corpus: Corpus,
  paths: readonly string[],
  options: IngestOptions,
  out: NodeJS.WritableStream & { isTTY?: boolean },
): Promise<IngestSummary> {
  const started = performance.now();
  const total = await countSources(paths);
  const progress = new Progress(total, out);
  const rejected: { origin: string; reason: string }[] = [];
  let done = 0;
  let added = 0;
  let unchanged = 0;
  let chunks = 0;
  let batch: SourceDocument[] = [];

  const flush = async () => {
    while (batch.length > 0) {
      try {
        const result = await corpus.add(batch, {
          chunk: options.chunk,
          contextual: options.contextual,
          origin: 'operator',
        });
        added += batch.length;
        chunks += result.chunks;
        break;
      } catch (error) {
        const field = error instanceof RpcError && error.code === -32602 ? error.data.field : undefined;
        const index = Number(/^documents\.(\d+)/.exec(field ?? '')?.[1]);
        if (!Number.isInteger(index) || batch[index] === undefined) throw error;
        rejected.push({ origin: batch[index].origin, reason: error instanceof Error ? error.message : String(error) });
        batch = batch.filter((_, i) => i !== index);
      }
    }
    done += batch.length;
    batch = [];
    progress.update(done + unchanged + rejected.length);
  };

  for await (const document of readSources(paths)) {
    const hash = contentHash(document.text, document.meta ?? {}, options);
    if (corpus.store.hashOf(document.id) === hash) {
      unchanged += 1;
      continue;
    }
    batch.push(document);
    if (batch.length >= options.batchSize) await flush();
  }
  await flush();
  progress.update(total, true);
  return { total, added, unchanged, rejected, chunks, seconds: (performance.now() - started) / 1000 };
}
