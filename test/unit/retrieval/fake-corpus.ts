import { outlineOf, screenText, type ChunkBody, type CorpusReader } from '../../../src/corpus/index.js';
import type { LogLevel, ProgressUpdate } from '../../../src/protocol/context.js';
import type { JsonObject } from '../../../src/protocol/messages.js';
import type { Scored } from '../../../src/retrieval/ranking.js';

/** A chunk of the fake corpus: its label is its index in the list given to `fakeCorpus`. */
export interface FakeChunk {
  readonly docId: string;
  readonly ordinal: number;
  readonly text: string;
  readonly vector?: number[];
}

export interface FakeDocument {
  readonly text?: string;
  readonly meta?: Record<string, unknown>;
  readonly origin?: 'client' | 'operator';
}

/** Dot product of two plain vectors (the fake's dense score). */
const dot = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let sum = 0;
  for (let i = 0; i < Math.min(a.length, b.length); i++) sum += a[i]! * b[i]!;
  return sum;
};

/** How many of the query's words the text holds (the fake's lexical score). */
const overlap = (query: string, text: string) => {
  const words = new Set(text.toLowerCase().split(/\s+/));
  return query
    .toLowerCase()
    .split(/\s+/)
    .filter((word) => words.has(word)).length;
};

/**
 * An in-memory CorpusReader over a few chunks: dense scores are dot products with `vector`, lexical scores count
 * shared words; `deleted` labels are gone (no place, no chunk) as if deleted since recall.
 */
export function fakeCorpus(
  chunks: readonly FakeChunk[],
  documents: Readonly<Record<string, FakeDocument>> = {},
  deleted: ReadonlySet<number> = new Set(),
): CorpusReader & { calls: string[] } {
  const calls: string[] = [];
  const live = (label: number) => (deleted.has(label) ? undefined : chunks[label]);
  const body = (label: number): ChunkBody | undefined => {
    const chunk = live(label);
    if (chunk === undefined) return undefined;
    const start = chunk.ordinal * 100;
    return {
      label,
      docId: chunk.docId,
      ordinal: chunk.ordinal,
      text: chunk.text,
      context: '',
      start,
      end: start + chunk.text.length,
    };
  };
  const vector = (label: number) => {
    const chunk = live(label);
    return chunk?.vector === undefined ? undefined : Float32Array.from(chunk.vector);
  };
  const top = (scores: { label: number; score: number }[], k: number) =>
    scores.sort((a, b) => b.score - a.score || a.label - b.label).slice(0, k);
  const searchDense = (query: Float32Array, k: number, allow?: readonly number[]) => {
    calls.push(`searchDense k=${k}`);
    const labels = chunks.map((_, label) => label).filter((label) => allow === undefined || allow.includes(label));
    return top(
      labels.map((label) => ({ label, score: dot(query, chunks[label]!.vector ?? []) })),
      k,
    );
  };
  const searchLexical = (query: string, k: number, allow?: ReadonlySet<number>) => {
    calls.push(`searchLexical ${JSON.stringify(query)} k=${k}`);
    const labels = chunks.map((_, label) => label).filter((label) => allow === undefined || allow.has(label));
    const scored = labels.map((label) => ({ label, score: overlap(query, chunks[label]!.text) }));
    return top(
      scored.filter((hit) => hit.score > 0),
      k,
    );
  };
  const transformQuery = (query: string, method: 'rewrite' | 'multi-query', n: number) => {
    calls.push(`transformQuery ${method} ${n}`);
    if (method === 'rewrite') return [`${query} rewritten`];
    return [query, `${query} alpha`, `${query} beta gamma`].slice(0, n);
  };
  return {
    calls,
    searchDense: (query, k, allow) => Promise.resolve(searchDense(query, k, allow)),
    searchLexical: (query, k, allow) => Promise.resolve(searchLexical(query, k, allow)),
    denseScores: (query, labels) => {
      calls.push(`denseScores ${labels.join(',')}`);
      return Promise.resolve(labels.map((label) => dot(query, chunks[label]?.vector ?? [])));
    },
    lexicalScores: (query, labels) => {
      calls.push(`lexicalScores ${labels.join(',')}`);
      return Promise.resolve(labels.map((label) => overlap(query, chunks[label]?.text ?? '')));
    },
    transformQuery: (query, method, n) => Promise.resolve(transformQuery(query, method, n)),
    termWeights: () => Promise.resolve(new Map()),
    labelsWhere: () => Promise.resolve([]),
    getChunk: body,
    screenOf: (chunk: ChunkBody, document?: string) => screenText(document ?? chunk.text),
    screenBody: (_chunk: ChunkBody, document: string) => Promise.resolve(screenText(document)),
    vectorOf: vector,
    vectorsOf: (labels) =>
      Promise.resolve(
        new Map(labels.flatMap((label) => (vector(label) === undefined ? [] : [[label, vector(label)!] as const]))),
      ),
    placeOf: (label) => {
      const chunk = live(label);
      return chunk === undefined ? undefined : { docId: chunk.docId, ordinal: chunk.ordinal };
    },
    metaOf: (id) => documents[id]?.meta ?? {},
    originOf: (id) => documents[id]?.origin ?? 'client',
    getDocument: (id) => {
      const text = documents[id]?.text;
      return text === undefined ? undefined : { text };
    },
    outlineOf: (id) => {
      const text = documents[id]?.text;
      return text === undefined ? undefined : outlineOf(text);
    },
    at(): Promise<CorpusReader> {
      return Promise.resolve(this);
    },
    verify: () => {},
    indexVersion: 'v1',
  };
}

/** A request context that records what a stage reports. */
export function fakeContext(signal: AbortSignal = new AbortController().signal) {
  const progress: { stage: string; fraction: number; update: ProgressUpdate | undefined }[] = [];
  const logs: { level: LogLevel; message: string; data: JsonObject | undefined }[] = [];
  return {
    signal,
    caller: 'caller-1',
    progress: (stage: string, fraction: number, update?: ProgressUpdate) => progress.push({ stage, fraction, update }),
    log: (level: LogLevel, message: string, data?: JsonObject) => logs.push({ level, message, data }),
    reported: { progress, logs },
  };
}

/** A ranking from [label, score] pairs. */
export const scored = (...pairs: [number, number][]): Scored[] =>
  pairs.map(([label, score]) => ({ label, score, scores: { dense: score } }));

/** The labels of a ranking, in order. */
export const labels = (ranked: readonly Scored[]) => ranked.map((hit) => hit.label);
