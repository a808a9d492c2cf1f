import { randomBytes } from 'node:crypto';
import { existsSync, lstatSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isFile, removeFile, syncPath } from '../../platform/files.js';
import { WorkerChannel } from '../../platform/worker-thread.js';
import type { DenseIndexOptions, DenseReply, DenseRequest } from './worker-protocol.js';
import { labelsDigest, type LabelsDigest } from '../labels-digest.js';
import {
  companionOf,
  SAVE_CUT_SHORT,
  SAVED_COMPANION,
  SAVED_INDEX,
  SAVED_SUM,
  sumOf,
  type SavedIndexSum,
} from './saved-file.js';

/**
 * How long a file another process may still be opening is left alone: a superseded pair (a process that listed it
 * opens it within milliseconds), a pair half renamed, a temporary file of a save under way.
 */
const GRACE_MS = 60_000;

export type { DenseIndexOptions } from './worker-protocol.js';

export interface Neighbour {
  readonly label: number;
  /** hnswlib distance: 1 - cosine for `cosine`, 1 - dot for `ip`. */
  readonly distance: number;
}

/**
 * The HNSW dense index, run in a worker thread so that building, adding and searching never block the event loop
 * that answers `ping`. Requests are answered in order. Saved files are named by the corpus sequence number they
 * hold (saved-file.ts), each with its sum beside it (size, SHA-256, settings); both are written under temporary
 * names, flushed, renamed (the sum first: a reader that sees the index file sees its sum) and the dir flushed before
 * older files go, so a crash or a power loss mid-save leaves the previous pair. A file is loaded only if it matches
 * its sum. Every process serving the dir reads and writes these files (docs/architecture.md §5): none removes a file
 * another may be opening or writing.
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
    if (!keep) removeStale(dir);
    for (const { seq, file } of savedIndexFiles(dir)) {
      // A file ahead of this process's view of the store is another's newer save: not loaded, not removed.
      if (seq > store.seq) continue;
      const reason = await this.#tryOpen(file, seq, store.id, options);
      if (reason === undefined) return { seq, count: await this.count(), discarded };
      discarded.push(`${file}: ${reason.reason}`);
      if (!keep && (reason.damaged || settled(file))) removePair(file);
    }
    await this.reset(options);
    return { seq: 0, count: 0, discarded };
  }

  /** Every label the index holds, ascending. */
  async labels(): Promise<Float64Array> {
    return (await this.#call({ op: 'labels' })).labels ?? new Float64Array(0);
  }

  /** What the labels the index holds come to (labels-digest.ts): compared with the store's at start. */
  async labelsDigest(): Promise<LabelsDigest> {
    return (await this.#call({ op: 'labelsDigest' })).labelsDigest ?? labelsDigest([]);
  }

  /** An empty index with these settings, in place of whatever was open. */
  async reset(options: DenseIndexOptions): Promise<void> {
    await this.#call({ op: 'open', options, file: undefined });
  }

  /** Opens `file` if it matches its sum, this store and these settings; else why not (and whether it is damaged). */
  async #tryOpen(file: string, seq: number, store: string, options: DenseIndexOptions): Promise<Discard | undefined> {
    const sum = readSum(file);
    if (sum === undefined) return discard('no readable sum beside it', false);
    if (sum.store !== store) return discard(`built from another store (${String(sum.store)})`, true);
    if (sum.seq !== seq || sum.space !== options.space || sum.dimension !== options.dimension)
      return discard(`its sum says seq ${sum.seq}, ${sum.space}, ${sum.dimension} dimensions`, true);
    try {
      const expected = { bytes: sum.bytes, sha256: sum.sha256 };
      await this.#call({ op: 'open', options, file, expected, deleted: deletedOf(sum) });
    } catch (error) {
      // Gone since it was listed (another process collected it) is no damage; anything else the worker says is.
      return discard((error as Error).message, existsSync(file));
    }
    const count = await this.count();
    return count === sum.count ? undefined : discard(`${count} vectors loaded, ${sum.count} saved`, true);
  }

  /**
   * Adds the points in messages of at most ADD_POINTS: searches are served between them (the worker takes one
   * message at a time), so a write of thousands of chunks holds a search for one message, not for all of it.
   */
  async add(
    labels: readonly number[],
    vectors: readonly Float32Array[],
    dimension: number,
    seq?: number,
  ): Promise<number> {
    let count = 0;
    for (let from = 0; from < labels.length || from === 0; from += ADD_POINTS) {
      const part = labels.slice(from, from + ADD_POINTS);
      const packed = new Float32Array(part.length * dimension);
      part.forEach((_, i) => packed.set(vectors[from + i]!, i * dimension));
      const message = { op: 'add' as const, labels: Float64Array.from(part), vectors: packed, seq };
      count = (await this.#call(message, [packed.buffer])).count ?? 0;
    }
    return count;
  }

  async remove(labels: readonly number[]): Promise<number> {
    return (await this.#call({ op: 'remove', labels: Float64Array.from(labels) })).count ?? 0;
  }

  /** §7.7.1: write `seq` removes `labels`; their vectors are kept for the versions before it when they leave. */
  async removing(labels: readonly number[], seq: number): Promise<void> {
    await this.#call({ op: 'removing', labels: Float64Array.from(labels), seq });
  }

  /** §7.7.1 at a start: the seqs of the chunks written after the floor, and the removed chunks kept. */
  async keep(
    written: readonly { label: number; seq: number }[],
    removed: readonly { label: number; removedSeq: number; vector: Float32Array }[],
    dimension: number,
  ): Promise<void> {
    const vectors = new Float32Array(removed.length * dimension);
    removed.forEach((chunk, i) => vectors.set(chunk.vector.subarray(0, dimension), i * dimension));
    const message = {
      op: 'keep' as const,
      labels: Float64Array.from(written, (chunk) => chunk.label),
      seqs: Float64Array.from(written, (chunk) => chunk.seq),
      removed: Float64Array.from(removed, (chunk) => chunk.label),
      removedSeqs: Float64Array.from(removed, (chunk) => chunk.removedSeq),
      vectors,
    };
    await this.#call(message, [vectors.buffer]);
  }

  /** §7.7.1: forgets what no version from `floor` on needs. */
  async forget(floor: number): Promise<void> {
    await this.#call({ op: 'forget', floor });
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
    exact = false,
    version?: number,
  ): Promise<Neighbour[]> {
    const allowed = allow === undefined ? undefined : Float64Array.from(allow);
    const reply = await this.#call({ op: 'search', vector, k, ef, allow: allowed, exact, version }, [], signal, lane);
    const labels = reply.labels ?? new Float64Array(0);
    return Array.from(labels, (label, i) => ({ label, distance: reply.distances?.[i] ?? 0 }));
  }

  async count(): Promise<number> {
    return (await this.#call({ op: 'count' })).count ?? 0;
  }

  /**
   * Saves atomically and durably as `dense-<seq>-<token>.hnsw` with its sum, and `companion` (the lexical index at
   * the same seq) written to the file it is given, then removes older files no process may still be opening. Nothing
   * is written when a file at `seq` is there already (another process saved it).
   */
  async save(
    dir: string,
    seq: number,
    options: Pick<DenseIndexOptions, 'space' | 'dimension'> & { store: string },
    companion?: (file: string) => Promise<void>,
  ): Promise<void> {
    // Only this very seq: a file ahead of the store (left by a restore, dropped in) must not stop every save.
    if (savedIndexFiles(dir).some((saved) => saved.seq === seq)) return;
    const file = join(dir, `dense-${seq}-${randomBytes(4).toString('hex')}.hnsw`);
    try {
      const reply = await this.#call({ op: 'save', file: `${file}.tmp` }); // flushed by the worker
      const sum: SavedIndexSum = {
        seq,
        bytes: reply.digest?.bytes ?? -1,
        sha256: reply.digest?.sha256 ?? '',
        count: reply.count ?? 0,
        ...options,
        deleted: Array.from(reply.deleted ?? []),
      };
      writeFileSync(`${sumOf(file)}.tmp`, JSON.stringify(sum));
      syncPath(`${sumOf(file)}.tmp`);
      await companion?.(`${companionOf(file)}.tmp`); // flushed by the writer
      renameSync(`${sumOf(file)}.tmp`, sumOf(file));
      // Before the index file: a reader that sees the index sees what was saved with it.
      if (companion !== undefined) renameSync(`${companionOf(file)}.tmp`, companionOf(file));
      renameSync(`${file}.tmp`, file);
      syncPath(dir);
    } finally {
      // A save that failed (a full disk) leaves nothing behind to keep the disk full.
      for (const part of [file, sumOf(file), companionOf(file)]) removeFile(`${part}.tmp`);
    }
    for (const older of savedIndexFiles(dir)) if (older.seq < seq && settled(older.file)) removePair(older.file);
  }

  async close(): Promise<void> {
    await this.#worker.terminate();
  }
}

interface Discard {
  readonly reason: string;
  /** Damaged, or of another store or settings: never loadable, removed at once (else only once settled). */
  readonly damaged: boolean;
}

const discard = (reason: string, damaged: boolean): Discard => ({ reason, damaged });

/** Whether `file` was last changed longer than GRACE_MS ago (no process can still be writing or opening it). */
function settled(file: string): boolean {
  const changed = lstatSync(file, { throwIfNoEntry: false })?.mtimeMs;
  return changed === undefined || Date.now() - changed > GRACE_MS;
}

/** Temporary files of saves cut short (a crash), and sums and companions whose index file is gone, once settled. */
function removeStale(dir: string): void {
  for (const name of existsSync(dir) ? readdirSync(dir) : []) {
    const file = join(dir, name);
    const cutShort = SAVE_CUT_SHORT.test(name);
    const orphan = (SAVED_SUM.test(name) || SAVED_COMPANION.test(name)) && !existsSync(file.replace(/\.\w+$/, '.hnsw'));
    if ((cutShort || orphan) && settled(file)) removeFile(file);
  }
}

/**
 * Points per add message: about 15-25 ms of HNSW inserts on this class of machine at 512 dimensions, what a search
 * may wait behind (a write of 1,532 chunks in one message held every dense search for seconds; at 64 points a
 * message, a victim's hybrid retrieve beside one caller's flood of chunked writes had p99 480-600 ms, at 16 355-390).
 */
const ADD_POINTS = 16;

/** Removes a saved index with its sum and companion. */
function removePair(file: string): void {
  removeFile(file);
  removeFile(sumOf(file));
  removeFile(companionOf(file));
}

/** The deleted labels a sum names, if it names them as a list of labels (anything else: found point by point). */
function deletedOf(sum: SavedIndexSum): Float64Array | undefined {
  const { deleted } = sum;
  if (!Array.isArray(deleted) || !deleted.every((label) => Number.isSafeInteger(label))) return undefined;
  return Float64Array.from(deleted);
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
export function savedIndexFiles(dir: string): { seq: number; file: string }[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .map((name) => SAVED_INDEX.exec(name))
    .filter((match) => match !== null)
    .map((match) => ({ seq: Number(match[1]), file: join(dir, match[0]) }))
    .filter(({ file }) => isFile(file)) // anything else under the name is the operator's, and ignored
    .sort((a, b) => b.seq - a.seq);
}
