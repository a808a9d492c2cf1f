import { existsSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isFile, removeFile, syncPath } from '../../platform/files.js';
import { WorkerChannel } from '../../platform/worker-thread.js';
import type { DenseIndexOptions, DenseReply, DenseRequest } from './worker-protocol.js';
import type { SavedIndexSum } from './saved-file.js';

export type { DenseIndexOptions } from './worker-protocol.js';

export interface Neighbour {
  readonly label: number;
  /** hnswlib distance: 1 - cosine for `cosine`, 1 - dot for `ip`. */
  readonly distance: number;
}

/**
 * The HNSW dense index, run in a worker thread so that building, adding and searching never block the event loop
 * that answers `ping`. Requests are answered in order. Saved files are named by the corpus sequence number they
 * hold (`dense-<seq>.hnsw`), each with its sum beside it (`dense-<seq>.sum`: size, SHA-256, settings); both are
 * written under temporary names, flushed, renamed and the dir flushed before older files go, so a crash or a power
 * loss mid-save leaves the previous pair. A file is loaded only if it matches its sum.
 */
export class DenseIndex {
  readonly #worker = new WorkerChannel<DenseRequest, DenseReply>(import.meta.url, './worker');

  #call(
    request: DenseRequest,
    transfer: ArrayBuffer[] = [],
    signal?: AbortSignal,
    lane?: string,
  ): Promise<DenseReply & { ok: true }> {
    return this.#worker.call(request, transfer, signal, lane);
  }

  /**
   * Opens the newest saved file in `dir` that matches its sum and is not ahead of the store (`maxSeq`), returning
   * its seq; or an empty index (seq 0). Other files are removed (unless `keep`: a read-only dir), each with the
   * reason in `discarded`: the store rebuilds what they held.
   */
  async open(
    dir: string,
    options: DenseIndexOptions,
    store: { id: string; seq: number },
    { keep = false }: { keep?: boolean } = {},
  ): Promise<{ seq: number; count: number; discarded: string[] }> {
    const discarded: string[] = [];
    for (const name of existsSync(dir) && !keep ? readdirSync(dir) : []) {
      if (/^dense-\d+\.(hnsw|sum)\.tmp$/.test(name)) removeFile(join(dir, name)); // a save cut short
    }
    for (const { seq, file } of savedFiles(dir)) {
      const reason =
        seq > store.seq ? `ahead of the store (seq ${store.seq})` : await this.#tryOpen(file, seq, store.id, options);
      if (reason === undefined) return { seq, count: await this.count(), discarded };
      discarded.push(`${file}: ${reason}`);
      if (!keep) removePair(file);
    }
    await this.reset(options);
    return { seq: 0, count: 0, discarded };
  }

  /** Every label the index holds, ascending. */
  async labels(): Promise<Float64Array> {
    return (await this.#call({ op: 'labels' })).labels ?? new Float64Array(0);
  }

  /** An empty index with these settings, in place of whatever was open. */
  async reset(options: DenseIndexOptions): Promise<void> {
    await this.#call({ op: 'open', options, file: undefined });
  }

  /** Opens `file` if it matches its sum, this store and these settings; else why not. */
  async #tryOpen(file: string, seq: number, store: string, options: DenseIndexOptions): Promise<string | undefined> {
    const sum = readSum(file);
    if (sum === undefined) return 'no readable sum beside it';
    if (sum.store !== store) return `built from another store (${String(sum.store)})`;
    if (sum.seq !== seq || sum.space !== options.space || sum.dimension !== options.dimension)
      return `its sum says seq ${sum.seq}, ${sum.space}, ${sum.dimension} dimensions`;
    try {
      await this.#call({ op: 'open', options, file, expected: { bytes: sum.bytes, sha256: sum.sha256 } });
    } catch (error) {
      return (error as Error).message;
    }
    const count = await this.count();
    return count === sum.count ? undefined : `${count} vectors loaded, ${sum.count} saved`;
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

  /**
   * The k nearest; a search whose caller gives up before its turn (`signal`) is never run. Searches wait in their
   * caller's lane (`lane`), and lanes take turns (see WorkerChannel).
   */
  async search(
    vector: Float32Array,
    k: number,
    ef: number,
    allow?: readonly number[],
    signal?: AbortSignal,
    lane?: string,
  ): Promise<Neighbour[]> {
    const allowed = allow === undefined ? undefined : Float64Array.from(allow);
    const reply = await this.#call({ op: 'search', vector, k, ef, allow: allowed }, [], signal, lane);
    const labels = reply.labels ?? new Float64Array(0);
    return Array.from(labels, (label, i) => ({ label, distance: reply.distances?.[i] ?? 0 }));
  }

  async count(): Promise<number> {
    return (await this.#call({ op: 'count' })).count ?? 0;
  }

  /** Saves atomically and durably as `dense-<seq>.hnsw` with its sum, then removes older files. */
  async save(
    dir: string,
    seq: number,
    options: Pick<DenseIndexOptions, 'space' | 'dimension'> & { store: string },
  ): Promise<void> {
    const file = join(dir, `dense-${seq}.hnsw`);
    const reply = await this.#call({ op: 'save', file: `${file}.tmp` }); // flushed by the worker
    const sum: SavedIndexSum = {
      seq,
      bytes: reply.digest?.bytes ?? -1,
      sha256: reply.digest?.sha256 ?? '',
      count: reply.count ?? 0,
      ...options,
    };
    writeFileSync(`${sumOf(file)}.tmp`, JSON.stringify(sum));
    syncPath(`${sumOf(file)}.tmp`);
    renameSync(`${file}.tmp`, file);
    renameSync(`${sumOf(file)}.tmp`, sumOf(file));
    syncPath(dir);
    for (const older of savedFiles(dir)) if (older.seq < seq) removePair(older.file);
  }

  async close(): Promise<void> {
    await this.#worker.terminate();
  }
}

const sumOf = (file: string) => file.replace(/\.hnsw$/, '.sum');

function removePair(file: string): void {
  removeFile(file);
  removeFile(sumOf(file));
}

function readSum(file: string): SavedIndexSum | undefined {
  try {
    const sum = JSON.parse(readFileSync(sumOf(file), 'utf8')) as unknown;
    return typeof sum === 'object' && sum !== null && !Array.isArray(sum) ? (sum as SavedIndexSum) : undefined;
  } catch {
    return undefined;
  }
}

/** Saved index files in `dir`, newest first. */
function savedFiles(dir: string): { seq: number; file: string }[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .map((name) => /^dense-(\d+)\.hnsw$/.exec(name))
    .filter((match) => match !== null)
    .map((match) => ({ seq: Number(match[1]), file: join(dir, match[0]) }))
    .filter(({ file }) => isFile(file)) // anything else under the name is the operator's, and ignored
    .sort((a, b) => b.seq - a.seq);
}
