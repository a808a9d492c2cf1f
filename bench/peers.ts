/**
 * `npm run bench -- peers`: `retrieve` over HTTP against LanceDB (@lancedb/lancedb 0.31.0, in-process, a
 * devDependency of the benchmark only) on the same work: BEIR SciFact's whole corpus, its training queries, one client,
 * top 10, ids and scores (the text of hits is not asked for on either side); our client is bench/client.ts. Sparse
 * against LanceDB's full-text search, hybrid against LanceDB's hybrid (full-text + flat vector search, RRF). LanceDB
 * is handed the server's own USE-lite vectors for documents and queries, embedded before the clock starts, while the
 * server embeds each query inside its `retrieve`. q/s and nDCG@10 as ratios to the peer measured in
 * the same run; rounds interleaved, medians reported (RCP_BENCH_PEERS_ROUNDS, default 3).
 *
 * The server is the real one (`bin/rcp-server.js serve` from dist/, default configuration and log level) over a data
 * folder filled by `rcp-server ingest` (RCP_BENCH_PEERS_DATA names a folder to reuse between runs).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as LanceDb from '@lancedb/lancedb';
import { decodeF32Base64 } from '../src/protocol/vectors.js';
import { call } from './client.js';
import { ingest, startServer } from './http.js';
import { LANCE_FTS, median } from './lexical/engines.js';
import { corpus, ndcg, trainQueries, type Doc } from './scifact.js';

const ROUNDS = Number(process.env.RCP_BENCH_PEERS_ROUNDS ?? 3);
const K = 10;
const EMBED_BATCH = 64;

interface Query {
  readonly text: string;
  readonly vector: Float32Array;
  readonly relevant: ReadonlySet<string>;
}

interface Engine {
  readonly name: string;
  /** Document ids, best first. */
  readonly search: (query: Query) => Promise<string[]>;
}

/** The server's own vectors for `texts` (`embed`, f32-base64), as documents or queries. */
async function embedAll(origin: string, texts: readonly string[], kind: 'document' | 'query'): Promise<Float32Array[]> {
  const vectors: Float32Array[] = [];
  for (let at = 0; at < texts.length; at += EMBED_BATCH) {
    const inputs = texts.slice(at, at + EMBED_BATCH);
    const result = (await call(origin, 'embed', { inputs, kind, encoding: 'f32-base64' })) as {
      vectors: string[];
      dimension: number;
    };
    for (const blob of result.vectors) vectors.push(decodeF32Base64(blob, result.dimension, 'vectors'));
  }
  return vectors;
}

function served(origin: string, mode: 'sparse' | 'hybrid'): Engine {
  return {
    name: `rcp-server ${mode} over HTTP`,
    search: async (query) => {
      // The peer's rows carry ids and scores only (select): so do ours (hits keep meta and citation, not the text).
      const params = { query: query.text, k: K, mode, includeText: false };
      const { hits } = (await call(origin, 'retrieve', params)) as {
        hits: { id: string; chunk?: { docId: string } }[];
      };
      return hits.map((hit) => hit.chunk?.docId ?? hit.id);
    },
  };
}

/** LanceDB with the analyzer closest to ours (LANCE_FTS), the vectors in a flat column. */
async function lance(docs: readonly Doc[], vectors: readonly Float32Array[], dir: string): Promise<Engine[]> {
  // Its scanner warns on stderr at every hybrid query that selects no score column: silenced, not paid for per query.
  process.env.LANCEDB_LOG ??= 'error';
  const lancedb: typeof LanceDb = await import('@lancedb/lancedb');
  const db = await lancedb.connect(dir);
  const rows = docs.map((doc, i) => ({ id: doc.id, text: doc.text, vector: Array.from(vectors[i]!) }));
  const table = await db.createTable('scifact', rows);
  await table.createIndex('text', {
    config: lancedb.Index.fts(LANCE_FTS),
  });
  const rrf = await lancedb.rerankers.RRFReranker.create();
  const ids = (found: unknown[]) => (found as { id: string }[]).map((row) => row.id);
  return [
    {
      name: 'LanceDB full-text search',
      search: async (query) =>
        ids(await table.query().fullTextSearch(query.text).select(['id', '_score']).limit(K).toArray()),
    },
    {
      name: 'LanceDB hybrid (RRF)',
      search: async (query) =>
        ids(
          await table
            .query()
            .fullTextSearch(query.text)
            .nearestTo(query.vector)
            .distanceType('cosine')
            .rerank(rrf)
            .select(['id'])
            .limit(K)
            .toArray(),
        ),
    },
  ];
}

async function measure(engines: readonly Engine[], queries: readonly Query[]) {
  const quality = new Map<string, number>();
  for (const engine of engines) {
    let total = 0; // also the warm-up pass
    for (const query of queries) total += ndcg(await engine.search(query), query.relevant);
    quality.set(engine.name, total / queries.length);
  }
  const rates = new Map<string, number[]>(engines.map((engine) => [engine.name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    // Interleaved: each round runs every engine once, so drift on a shared machine hits them alike.
    for (const engine of engines) {
      const started = performance.now();
      for (const query of queries) await engine.search(query);
      rates.get(engine.name)!.push(queries.length / ((performance.now() - started) / 1000));
    }
  }
  return { quality, rate: (name: string) => median(rates.get(name)!) };
}

export async function benchPeers(): Promise<void> {
  const reuse = process.env.RCP_BENCH_PEERS_DATA;
  const data = reuse ?? mkdtempSync(join(tmpdir(), 'rcp-bench-peers-'));
  const lanceDir = mkdtempSync(join(tmpdir(), 'rcp-bench-peers-lance-'));
  const docs = corpus();
  console.log(`\npeers: retrieve over HTTP vs LanceDB 0.31.0 in-process, SciFact ${docs.length} docs, one client`);
  ingest(data, docs.length);
  const server = await startServer(data);
  try {
    const judged = trainQueries();
    const queryVectors = await embedAll(
      server.origin,
      judged.map((query) => query.text),
      'query',
    );
    const queries = judged.map((query, i) => ({ ...query, vector: queryVectors[i]! }));
    const peers = await lance(
      docs,
      await embedAll(
        server.origin,
        docs.map((doc) => doc.text),
        'document',
      ),
      lanceDir,
    );
    const pairs: [Engine, Engine][] = [
      [served(server.origin, 'sparse'), peers[0]!],
      [served(server.origin, 'hybrid'), peers[1]!],
    ];
    const { quality, rate } = await measure(pairs.flat(), queries);
    console.log(`  ${queries.length} training queries, k ${K}, medians of ${ROUNDS} interleaved rounds`);
    for (const [ours, peer] of pairs) {
      for (const engine of [peer, ours]) {
        const ratio = `${(rate(engine.name) / rate(peer.name)).toFixed(2)}× q/s`;
        console.log(
          `  ${engine.name.padEnd(30)} ${rate(engine.name).toFixed(1).padStart(7)} q/s  ` +
            `nDCG@10 ${quality.get(engine.name)!.toFixed(4)}   ${ratio} of ${peer.name}`,
        );
      }
    }
  } finally {
    await server.stop();
    rmSync(lanceDir, { recursive: true, force: true });
    if (reuse === undefined) rmSync(data, { recursive: true, force: true });
  }
}
