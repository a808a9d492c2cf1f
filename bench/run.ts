/**
 * `npm run bench [-- SUITE...]`: every benchmark in bench/, each printing ratios against a baseline measured in the
 * same run (these machines are noisy, so absolute figures mean little on their own). Suites: protocol, embed
 * (default: both), colbert (the SciFact late-interaction measurement, slow: minutes) lexical (BM25 analyzer
 * choices on SciFact) and corpus (100k-chunk restart vs rebuild, ingest rate; minutes) and retrieve
 * (latency, throughput vs ping, HNSW recall vs exact; RCP_BENCH_SYNTHETIC=100000 adds the synthetic corpus) and soak
 * (a minute of mixed traffic above capacity: goodput held, -32011 share, p99, RSS over time; RCP_SOAK_SECONDS) and
 * federation (SciFact in 3 shards behind the gateway: nDCG@10 per fusion, gateway overhead, throughput by engines)
 * and isolation (what one heavy caller costs others: ping latency during each heavy request kind, and a polite
 * client's success beside an attacker) and connections (a new client's connect+ping from another address while 5
 * addresses hold every connection with slow bodies or idle keep-alive ones, against idle) and fairness (a polite
 * client's dense retrieves beside 32 concurrent heavy ones, the attacker under its own key and under the polite one)
 * and replicas (read throughput with 1-3 replicas over a PostgreSQL store of record against one SQLite server,
 * write-to-visible lag, replica cold start from the store vs its snapshot; needs Debian's postgresql) and http (autocannon at 8 and 64 connections: ping against a bare Fastify
 * route, sparse retrieve p99 at 64 against 8, -32011 refusals and client timeouts) and peers (sparse and hybrid
 * retrieve over HTTP against LanceDB's full-text and hybrid search in-process, SciFact, one client) and ingest
 * (SciFact through the index/add path with the default encoder, its int8 build and the op-by-op conversion it
 * replaced, at the thread settings each ran with by default; RCP_BENCH_DOCS, default 512) and ingest-vectors
 * (JSON Lines with their own vectors at 20,000 and 100,000 against the encoder at 1,000: chunks/s and where the
 * time goes, HNSW insert, store, BM25, parsing; minutes), shared-state (Redis
 * frozen vs healthy under rate limits, a session shut down through another replica, a replica whose store is down
 * at start; needs redis-server and postgresql) and burst (RSS after 30 concurrent 15 MB bodies: peak, and every 5 s
 * after, against idle; where the resident bytes are) and processes (many processes over one data dir: a new
 * process ready beside one serving 100k chunks against one started alone, write-to-visible lag between them) and
 * scale (RCP_BENCH_CHUNKS, default 1,000,000: time to ready from saved files, after kill -9 and with the lexical
 * index analysed again; RSS per chunk; sparse, dense and hybrid latency against 5,000 chunks) and
 * request-path (an HTTP request's way in, from the request
 * listener to the session: functions entered, files, returns to a file left, callbacks up) and backup
 * (`rcp-server backup` of a serving dir beside a reader and a writer, restore, ready on the restored dir against a
 * restart; RCP_BENCH_CHUNKS, default 30,000) and snapshots (§7.7.1: index/add keeping the window against keeping none,
 * retrieve pinned to the current and to an earlier version against unpinned; RCP_BENCH_CHUNKS, default 20,000) and tenants
 * (named corpora, docs/tenants.md: RSS per open and per closed corpus against none open, retrieve to a closed corpus
 * against an open one; RCP_BENCH_CORPORA, default 200) and documents (docs/documents.md: documents per second per
 * format, read alone and through ingest, against plain text of the same words; files made by pandoc and LibreOffice;
 * RCP_BENCH_DOCUMENTS, default 40) and injection (docs/trust.md: the injection screen's precision and recall on the
 * labelled set, its false-positive rate on SciFact) and units (docs/retrieve.md: retrieve latency per §7.7.2 unit and
 * with quotes, against chunks without; RCP_BENCH_DATA) and tracing (OpenTelemetry off, on and sampled out over HTTP:
 * ping at 8 connections, hybrid retrieve p50/p99 and req/s at 4, spans received per request, RSS; RCP_BENCH_DATA).
 * The suites that read SciFact take its folder from
 * `--scifact DIR` or RCP_SCIFACT, else ../shared/data/scifact.
 */
import { benchEmbed } from './embed.js';
import { benchProtocol } from './protocol.js';

const SUITES: Record<string, () => Promise<void>> = {
  protocol: benchProtocol,
  embed: benchEmbed,
  colbert: async () => (await import('./colbert-scifact.js')).benchColbert(),
  lexical: async () => (await import('./lexical-scifact.js')).benchLexical(),
  corpus: async () => (await import('./corpus.js')).benchCorpus(),
  retrieve: async () => (await import('./retrieve.js')).benchRetrieve(),
  soak: async () => (await import('./soak.js')).benchSoak(),
  federation: async () => (await import('./federation.js')).benchFederation(),
  isolation: async () => (await import('./isolation.js')).benchIsolation(),
  connections: async () => (await import('./connections.js')).benchConnections(),
  fairness: async () => (await import('./fairness.js')).benchFairness(),
  replicas: async () => (await import('./replicas.js')).benchReplicas(),
  processes: async () => (await import('./processes.js')).benchProcesses(),
  scale: async () => (await import('./scale.js')).benchScale(),
  http: async () => (await import('./http.js')).benchHttp(),
  peers: async () => (await import('./peers.js')).benchPeers(),
  ingest: async () => (await import('./encoder-ingest.js')).benchIngest(),
  'ingest-vectors': async () => (await import('./ingest-vectors.js')).benchIngestVectors(),
  'shared-state': async () => (await import('./shared-state.js')).benchSharedState(),
  burst: async () => (await import('./burst.js')).benchBurst(),
  'request-path': async () => (await import('./request-path.js')).benchRequestPath(),
  backup: async () => (await import('./backup.js')).benchBackup(),
  snapshots: async () => (await import('./snapshots.js')).benchSnapshots(),
  tenants: async () => (await import('./tenants.js')).benchTenants(),
  documents: async () => (await import('./documents.js')).benchDocuments(),
  injection: async () => (await import('./injection.js')).benchInjection(),
  units: async () => (await import('./units.js')).benchUnits(),
  tracing: async () => (await import('./tracing.js')).benchTracing(),
};
const chosen = process.argv.slice(2);
// `--scifact DIR` is read where SciFact is (bench/scifact.ts), not a suite.
const scifact = chosen.indexOf('--scifact');
if (scifact >= 0) chosen.splice(scifact, 2);
for (const name of chosen.length > 0 ? chosen : ['protocol', 'embed']) {
  const suite = SUITES[name];
  if (suite === undefined) throw new Error(`unknown suite '${name}'; known: ${Object.keys(SUITES).join(', ')}`);
  await suite();
}
