import { existsSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { WorkerChannel } from '../worker-thread.js';
import type { DenseIndexOptions, DenseReply, DenseRequest } from './protocol.js';

export type { DenseIndexOptions } from './protocol.js';

export interface Neighbour {
  readonly label: number;
  /** hnswlib distance: 1 - cosine for `cosine`, 1 - dot for `ip`. */
  readonly distance: number;
}

/**
 * The HNSW dense index, run in a worker thread so that building, adding and searching never block the event loop
 * that answers `ping`. Requests are answered in order. Saved files are named by the corpus sequence number they
 * hold (`dense-<seq>.hnsw`), written to a temporary name and renamed, so a crash mid-save leaves the previous file.
 */
export class DenseIndex {
  readonly #worker = new WorkerChannel<DenseRequest, DenseReply>(import.meta.url, './worker');

  #call(request: DenseRequest, transfer: ArrayBuffer[] = []): Promise<DenseReply & { ok: true }> {
    return this.#worker.call(request, transfer);
  }

  /**
   * Opens the newest saved file in `dir` that is not ahead of the store (`maxSeq`), returning its seq; or an empty
   * index (seq 0). Files that fail to load or claim a future seq are removed: the store rebuilds what they held.
   */
  async open(dir: string, options: DenseIndexOptions, maxSeq: number): Promise<{ seq: number; count: number }> {
    for (const { seq, file } of savedFiles(dir)) {
      if (seq > maxSeq) {
        rmSync(file, { force: true });
        continue;
      }
      try {
        const reply = await this.#call({ op: 'open', options, file });
        return { seq, count: reply.count ?? 0 };
      } catch {
        rmSync(file, { force: true }); // corrupt: fall back to an older file, or to a rebuild
      }
    }
    const reply = await this.#call({ op: 'open', options, file: undefined });
    return { seq: 0, count: reply.count ?? 0 };
  }

  async add(labels: readonly number[], vectors: readonly Float32Array[], dimension: number): Promise<number> {
    const packed = new Float32Array(labels.length * dimension);
    vectors.forEach((vector, i) => packed.set(vector, i * dimension));
    const reply = await this.#call({ op: 'add', labels: Float64Array.from(labels), vectors: packed }, [packed.buffer]);
    return reply.count ?? 0;
  }

  async remove(labels: readonly number[]): Promise<number> {
    return (await this.#call({ op: 'remove', labels: Float64Array.from(labels) })).count ?? 0;
  }

  async search(vector: Float32Array, k: number, ef: number, allow?: readonly number[]): Promise<Neighbour[]> {
    const reply = await this.#call({
      op: 'search',
      vector,
      k,
      ef,
      allow: allow === undefined ? undefined : Float64Array.from(allow),
    });
    const labels = reply.labels ?? new Float64Array(0);
    return Array.from(labels, (label, i) => ({ label, distance: reply.distances?.[i] ?? 0 }));
  }

  async count(): Promise<number> {
    return (await this.#call({ op: 'count' })).count ?? 0;
  }

  /** Saves atomically as `dense-<seq>.hnsw` and removes older files. */
  async save(dir: string, seq: number): Promise<void> {
    const file = join(dir, `dense-${seq}.hnsw`);
    const temporary = `${file}.tmp`;
    await this.#call({ op: 'save', file: temporary });
    renameSync(temporary, file);
    for (const older of savedFiles(dir)) if (older.seq < seq) rmSync(older.file, { force: true });
  }

  async close(): Promise<void> {
    await this.#worker.terminate();
  }
}

/** Saved index files in `dir`, newest first. */
function savedFiles(dir: string): { seq: number; file: string }[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .map((name) => /^dense-(\d+)\.hnsw$/.exec(name))
    .filter((match) => match !== null)
    .map((match) => ({ seq: Number(match[1]), file: join(dir, match[0]) }))
    .sort((a, b) => b.seq - a.seq);
}
