/**
 * The HNSW worker thread: owns one hnswlib-node index. Every request is answered in order with a DenseReply.
 * Conversions from typed arrays use a plain loop (hnswlib-node accepts arrays only; Array.from is ~14x slower).
 */
import { parentPort } from 'node:worker_threads';
import hnswlib from 'hnswlib-node';
import type { DenseIndexOptions, DenseReply, DenseRequest } from './worker-protocol.js';
import { cosineSimilarity, dotProduct } from '../../protocol/vectors.js';
import { syncPath } from '../../platform/files.js';
import { damageOf, digestFile } from './saved-file.js';
import { labelsDigest } from '../labels-digest.js';
import { WorkerVersions } from './worker-versions.js';

let index: hnswlib.HierarchicalNSW | undefined;
let options: DenseIndexOptions | undefined;
/** Live labels: hnswlib's own count includes deleted ones. */
const live = new Set<number>();
/** §7.7.1 recent versions: when labels came and went, and the vectors of those that went. */
const versions = new WorkerVersions();

function toArray(data: Float32Array, start: number, length: number): number[] {
  const out = new Array<number>(length);
  for (let i = 0; i < length; i++) out[i] = data[start + i] ?? 0;
  return out;
}

/** Allowed sets up to this size are searched exhaustively (cheaper and exact); larger ones use the graph filter. */
const EXACT_BELOW = 4096;

/** A label's vector as the index holds it: live in the graph, or kept since its removal (§7.7.1). */
function pointOf(label: number): ArrayLike<number> | undefined {
  return live.has(label) ? index?.getPoint(label) : versions.vectorOf(label);
}

function exact(query: Float32Array, allow: ReadonlySet<number>, k: number): DenseReply {
  if (index === undefined || options === undefined) throw new Error('index not open');
  const similarity = options.space === 'cosine' ? cosineSimilarity : dotProduct;
  const within = query.subarray(0, options.dimension); // as the graph search reads it
  const scored: { label: number; distance: number }[] = [];
  for (const label of allow) {
    const point = pointOf(label);
    if (point === undefined) continue;
    scored.push({ label, distance: 1 - similarity(point, within) });
  }
  scored.sort((a, b) => a.distance - b.distance || a.label - b.label);
  const top = scored.slice(0, k);
  return {
    ok: true,
    labels: Float64Array.from(top, (s) => s.label),
    distances: Float32Array.from(top, (s) => s.distance),
  };
}

/** Graph candidates scored again exactly beyond the k asked for: float32 distances may order near-ties otherwise. */
const RESCORED_MARGIN = 16;

/**
 * §7.7.1 the exact top k over every live point (or every allowed one), whatever the graph's shape: the graph is
 * searched with a beam as wide as the index, so that it visits every point it can reach (in C++, fast), any point it
 * cannot reach is added, and the best 2k + RESCORED_MARGIN are scored again here in float64, as on every machine.
 * With `version` (snapshots), over the vectors that version held: the live ones through the graph, and the removed
 * ones kept, each scored.
 */
function exhaustive(
  query: Float32Array,
  allow: ReadonlySet<number> | undefined,
  k: number,
  version?: number,
): DenseReply {
  if (index === undefined || options === undefined) throw new Error('index not open');
  const held = (label: number) =>
    (allow === undefined || allow.has(label)) && (version === undefined || versions.holds(label, version, true));
  const kept = version === undefined ? [] : [...versions.retainedIn(version)].filter((label) => held(label));
  if (allow !== undefined && allow.size <= EXACT_BELOW) {
    return exact(query, new Set([...allow].filter((label) => live.has(label) && held(label)).concat(kept)), k);
  }
  const candidates = new Set(kept);
  if (live.size > 0) {
    index.setEf(Math.max(live.size, k));
    const filter = allow === undefined && version === undefined ? undefined : held;
    const found = index.searchKnn(toArray(query, 0, options.dimension), live.size, filter).neighbors;
    const reached = new Set(found);
    for (const label of found.slice(0, 2 * k + RESCORED_MARGIN)) candidates.add(label);
    for (const label of allow ?? live) if (live.has(label) && !reached.has(label) && held(label)) candidates.add(label);
  }
  return exact(query, candidates, k);
}

/**
 * Removed chunks read back from the store (a start, §7.7.1): each vector goes through a scratch index of the same
 * space, so that it is held exactly as the graph held it (hnswlib normalises cosine vectors in float32).
 */
function keep(request: Extract<DenseRequest, { op: 'keep' }>): void {
  if (options === undefined) throw new Error('index not open');
  const { dimension, space } = options;
  const scratch = new hnswlib.HierarchicalNSW(space, dimension);
  scratch.initIndex({ maxElements: Math.max(1, request.removed.length) });
  request.removed.forEach((label, i) => {
    scratch.addPoint(toArray(request.vectors, i * dimension, dimension), i);
    versions.retain(label, scratch.getPoint(i));
  });
  request.labels.forEach((label, i) => versions.added([label], request.seqs[i]!));
  request.removed.forEach((label, i) => versions.removing([label], request.removedSeqs[i]!));
}

function ensureCapacity(extra: number): void {
  if (index === undefined) return;
  const needed = index.getCurrentCount() + extra;
  if (needed <= index.getMaxElements()) return;
  index.resizeIndex(Math.max(needed, index.getMaxElements() * 2));
}

/** Opens a new index, empty or read from a saved file checked against its recorded size and digest. */
function open(request: Extract<DenseRequest, { op: 'open' }>): DenseReply {
  options = request.options;
  live.clear();
  versions.clear();
  index = new hnswlib.HierarchicalNSW(options.space, options.dimension);
  if (request.file === undefined) {
    index.initIndex({
      maxElements: options.initialCapacity,
      m: options.m,
      efConstruction: options.efConstruction,
      allowReplaceDeleted: true,
    });
    index.setEf(options.efSearch);
    return { ok: true, loaded: false, count: 0 };
  }
  const damage = damageOf(digestFile(request.file), request.expected);
  if (damage !== undefined) throw new Error(`${request.file}: ${damage}`);
  // allowReplaceDeleted: fresh labels may reuse the slots of deleted ones.
  index.readIndexSync(request.file, true);
  findLive(index, request.deleted);
  index.setEf(options.efSearch);
  return { ok: true, loaded: true, count: live.size };
}

/**
 * The labels of a loaded file that are not marked deleted. getIdsList includes those marked deleted; its sum names
 * them. A file saved before sums named them is read point by point (getPoint throws for exactly those): that copies
 * every vector out, most of the time a load took (a second at 30,000 points).
 */
function findLive(loaded: hnswlib.HierarchicalNSW, deleted: Float64Array | undefined): void {
  if (deleted !== undefined) {
    const gone = new Set(deleted);
    for (const label of loaded.getIdsList()) if (!gone.has(label)) live.add(label);
    return;
  }
  for (const label of loaded.getIdsList()) {
    try {
      loaded.getPoint(label);
      live.add(label);
    } catch {
      // deleted before the save
    }
  }
}

const NO_HITS: DenseReply = { ok: true, labels: new Float64Array(0), distances: new Float32Array(0) };

function search(request: Extract<DenseRequest, { op: 'search' }>): DenseReply {
  if (index === undefined || options === undefined) throw new Error('index not open');
  if (request.version !== undefined) {
    const k = Math.min(request.k, live.size + versions.retainedCount);
    const allow = request.allow === undefined ? undefined : new Set(request.allow);
    return k === 0 || allow?.size === 0 ? NO_HITS : exhaustive(request.vector, allow, k, request.version);
  }
  const k = Math.min(request.k, live.size);
  if (k === 0) return NO_HITS;
  index.setEf(Math.max(options.efSearch, request.ef, k));
  const allow = request.allow === undefined ? undefined : new Set(request.allow);
  if (allow?.size === 0) return NO_HITS;
  // §7.7.1: a seeded search scores every vector, so its answer depends on the vectors alone, not on the graph's shape.
  if (request.exact === true) return exhaustive(request.vector, allow, k);
  // A selective filter: score the allowed points exactly, so k hits come back whenever k exist.
  if (allow !== undefined && allow.size <= EXACT_BELOW) return exact(request.vector, allow, k);
  const result = index.searchKnn(
    toArray(request.vector, 0, options.dimension),
    allow === undefined ? k : Math.min(k, allow.size),
    allow === undefined ? undefined : (label: number) => allow.has(label),
  );
  return { ok: true, labels: Float64Array.from(result.neighbors), distances: Float32Array.from(result.distances) };
}

function handle(request: DenseRequest): DenseReply {
  switch (request.op) {
    case 'open':
      return open(request);
    case 'add': {
      if (index === undefined || options === undefined) throw new Error('index not open');
      const { dimension } = options;
      ensureCapacity(request.labels.length);
      request.labels.forEach((label, i) => {
        if (live.has(label)) index?.markDelete(label);
        index?.addPoint(toArray(request.vectors, i * dimension, dimension), label, true);
        live.add(label);
      });
      if (request.seq !== undefined) versions.added(request.labels, request.seq);
      return { ok: true, count: live.size };
    }
    case 'remove': {
      for (const label of request.labels) {
        if (!live.has(label)) continue; // never added, or already removed: replay and retries are idempotent
        if (versions.wanted(label)) versions.retain(label, index!.getPoint(label));
        index?.markDelete(label);
        live.delete(label);
      }
      return { ok: true, count: live.size };
    }
    case 'removing':
      versions.removing(request.labels, request.seq);
      return { ok: true };
    case 'keep':
      keep(request);
      return { ok: true };
    case 'forget':
      versions.forget(request.floor);
      return { ok: true, count: versions.retainedCount };
    case 'search':
      return search(request);
    case 'save': {
      index?.writeIndexSync(request.file);
      syncPath(request.file);
      const deleted = Float64Array.from((index?.getIdsList() ?? []).filter((label) => !live.has(label))).sort();
      return { ok: true, count: live.size, digest: digestFile(request.file), deleted };
    }
    case 'count':
      return { ok: true, count: live.size };
    case 'labels':
      return { ok: true, labels: Float64Array.from([...live].sort((a, b) => a - b)) };
    case 'labelsDigest':
      return { ok: true, labelsDigest: labelsDigest(live) };
  }
}

parentPort?.on('message', (request: DenseRequest) => {
  let reply: DenseReply;
  try {
    reply = handle(request);
  } catch (error) {
    reply = { ok: false, error: (error as Error).message };
  }
  parentPort?.postMessage(reply);
});
