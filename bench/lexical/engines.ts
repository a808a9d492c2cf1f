/**
 * Top-k lexical search on BEIR SciFact, in-process, every engine in the same run on the same queries: our Bm25Index
 * (MaxScore pruning), the same index scoring exhaustively, the Map-postings index it replaced, LanceDB's full-text
 * search (@lancedb/lancedb 0.31.0, a devDependency of the benchmark only) and MiniSearch. q/s and nDCG@10, each as a
 * ratio to LanceDB's (else to the first row) measured in the same run; rounds are interleaved, medians reported.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as LanceDb from '@lancedb/lancedb';
import type MiniSearchClass from 'minisearch';
import { Bm25Index } from '../../src/lexical/bm25.js';
import { corpus, ndcg, trainQueries, type Doc } from '../scifact.js';
import { Bm25IndexBefore } from './bm25-before.js';

const ROUNDS = Number(process.env.RCP_BENCH_LEXICAL_ROUNDS ?? 3);
const K = Number(process.env.RCP_BENCH_LEXICAL_K ?? 10);
/** The analyzer and parameters the server ships with (config index.bm25 defaults). */
const BM25 = { k1: 1.2, b: 0.75, stem: true };

interface Engine {
  readonly name: string;
  /** Document ids, best first. */
  readonly search: (query: string) => Promise<string[]>;
  readonly close?: () => Promise<void>;
}

function ours(docs: readonly Doc[]): Engine[] {
  const index = new Bm25Index(BM25);
  const before = new Bm25IndexBefore(BM25);
  docs.forEach((doc, label) => {
    index.add(label, doc.text);
    before.add(label, doc.text);
  });
  const ids = (hits: { label: number }[]) => hits.map((hit) => docs[hit.label]!.id);
  return [
    { name: 'Bm25Index (MaxScore)', search: async (query) => ids(await index.search(query, K)) },
    { name: 'Bm25Index exhaustive', search: async (query) => ids(await index.searchExhaustive(query, K)) },
    { name: 'Bm25Index before (Map)', search: async (query) => ids(await before.search(query, K)) },
  ];
}

/** LanceDB's full-text index with the analyzer closest to ours: simple tokenizer, lower case, ASCII folding, stemming. */
export const LANCE_FTS = {
  baseTokenizer: 'simple',
  lowercase: true,
  asciiFolding: true,
  stem: true,
  language: 'English',
  removeStopWords: false,
  withPosition: false,
} as const;

/** LanceDB's FTS (LANCE_FTS). */
async function lance(docs: readonly Doc[]): Promise<Engine | string> {
  let lancedb: typeof LanceDb;
  try {
    lancedb = await import('@lancedb/lancedb');
  } catch (error) {
    return `LanceDB not installed (${(error as Error).message.split('\n')[0]})`;
  }
  const dir = mkdtempSync(join(tmpdir(), 'rcp-bench-lance-'));
  const db = await lancedb.connect(dir);
  const table = await db.createTable(
    'scifact',
    docs.map((doc) => ({ id: doc.id, text: doc.text })),
  );
  await table.createIndex('text', {
    config: lancedb.Index.fts(LANCE_FTS),
  });
  return {
    name: 'LanceDB 0.31.0 FTS',
    search: async (query: string) => {
      const rows = await table.query().fullTextSearch(query).select(['id', '_score']).limit(K).toArray();
      return rows.map((row: { id: string }) => row.id);
    },
    close: () => {
      table.close();
      db.close();
      rmSync(dir, { recursive: true, force: true });
      return Promise.resolve();
    },
  };
}

async function miniSearch(docs: readonly Doc[]): Promise<Engine | string> {
  let MiniSearch: typeof MiniSearchClass;
  try {
    MiniSearch = (await import('minisearch')).default;
  } catch (error) {
    return `MiniSearch not installed (${(error as Error).message.split('\n')[0]})`;
  }
  const index = new MiniSearch<Doc>({ fields: ['text'], idField: 'id' });
  index.addAll(docs);
  return {
    name: 'MiniSearch',
    search: (query: string) =>
      Promise.resolve(
        index
          .search(query)
          .slice(0, K)
          .map((hit) => String(hit.id)),
      ),
  };
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

export async function benchLexicalEngines(): Promise<void> {
  const docs = corpus();
  const queries = trainQueries();
  const engines: Engine[] = ours(docs);
  for (const peer of [await lance(docs), await miniSearch(docs)]) {
    if (typeof peer === 'string') console.log(`  (${peer}: left out)`);
    else engines.push(peer);
  }
  const quality = new Map<string, number>();
  for (const engine of engines) {
    let total = 0;
    for (const query of queries) total += ndcg(await engine.search(query.text), query.relevant);
    quality.set(engine.name, total / queries.length); // also the warm-up pass
  }
  const rates = new Map<string, number[]>(engines.map((engine) => [engine.name, []]));
  const cpu = new Map<string, number[]>(engines.map((engine) => [engine.name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    // Interleaved: each round runs every engine once, so drift on a shared machine hits them alike.
    for (const engine of engines) {
      const started = performance.now();
      const cpuStarted = process.cpuUsage();
      for (const query of queries) await engine.search(query.text);
      const used = process.cpuUsage(cpuStarted);
      rates.get(engine.name)!.push(queries.length / ((performance.now() - started) / 1000));
      cpu.get(engine.name)!.push((used.user + used.system) / queries.length);
    }
  }
  const peer = engines.find((engine) => engine.name.startsWith('LanceDB')) ?? engines[0]!;
  const peerRate = median(rates.get(peer.name)!);
  const peerQuality = quality.get(peer.name)!;
  const peerCpu = median(cpu.get(peer.name)!);
  console.log(
    `lexical top-${K} on SciFact, in-process (${docs.length} docs, ${queries.length} queries, median of ${ROUNDS} ` +
      `interleaved rounds; ratios to ${peer.name} in the same run, higher is better; CPU is the process's, all ` +
      'threads, per query: steadier than wall time on a shared machine)',
  );
  for (const engine of engines) {
    const rate = median(rates.get(engine.name)!);
    const score = quality.get(engine.name)!;
    const micros = median(cpu.get(engine.name)!);
    console.log(
      `  ${engine.name.padEnd(24)} ${rate.toFixed(0).padStart(7)} q/s  ratio ${(rate / peerRate).toFixed(2).padStart(6)}` +
        `   CPU ${micros.toFixed(0).padStart(6)} µs/q  ratio ${(peerCpu / micros).toFixed(2).padStart(6)}` +
        `   nDCG@10 ${score.toFixed(4)}  ratio ${(score / peerQuality).toFixed(3)}`,
    );
  }
  const pruned = median(rates.get(engines[0]!.name)!);
  const exhaustive = median(rates.get(engines[1]!.name)!);
  const before = median(rates.get(engines[2]!.name)!);
  console.log(
    `  MaxScore / exhaustive ${(pruned / exhaustive).toFixed(2)}; MaxScore / before ${(pruned / before).toFixed(2)}; ` +
      `exhaustive / before ${(exhaustive / before).toFixed(2)}`,
  );
  for (const engine of engines) await engine.close?.();
}
