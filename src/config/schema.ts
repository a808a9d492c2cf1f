import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Type, type Static, type TProperties } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { CORPUS_GRANT } from '../protocol/corpus-name.js';

const PACKAGE = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

/** Defaults computed at run time: they depend on where the package is installed and which version it is. */
const RUNTIME_DEFAULTS = {
  version: PACKAGE.version,
  modelsDir: fileURLToPath(new URL('../../models', import.meta.url)),
};

/**
 * A group of settings; unknown keys in it are errors. Its `default: {}` lets Value.Default build the group from nothing
 * before filling in each setting's own default.
 */
const Section = <T extends TProperties>(properties: T, options: { description?: string } = {}) =>
  Type.Object(properties, { additionalProperties: false, default: {}, ...options });

/**
 * Typed configuration, validated at start-up (docs/architecture.md §7). Precedence: defaults < config file < RCP_*
 * environment variables < command-line flags. Unknown keys in a file are errors: a typo must not silently keep a
 * default.
 *
 * Each setting is declared once, here: type, constraints, `default` and `description`. defaultConfig() and
 * docs/configuration.md (`npm run docs:config`, checked by test/unit/config-docs.test.ts) are derived from it.
 */
export const ConfigSchema = Section({
  server: Section(
    {
      name: Type.String({
        minLength: 1,
        default: 'rcp-server',
        description: 'The name this server gives in initialize.',
      }),
      version: Type.String({
        minLength: 1,
        default: RUNTIME_DEFAULTS.version,
        description: "The version this server gives in initialize and its metrics; by default the package's own.",
      }),
    },
    { description: 'How the server names itself to clients.' },
  ),
  dataDir: Type.String({
    minLength: 1,
    default: './indexes/default',
    description: 'Where the corpus (documents and their indexes) is stored.',
  }),
  http: Section(
    {
      host: Type.String({ minLength: 1, default: '127.0.0.1', description: 'Address the HTTP transport listens on.' }),
      port: Type.Integer({
        minimum: 0,
        maximum: 65535,
        default: 8080,
        description: 'Port the HTTP transport listens on.',
      }),
      base: Type.String({
        pattern: '^/',
        default: '/rcp',
        description: 'Path prefix of the RCP endpoints: `POST <base>/<method>`.',
      }),
      /** §5.2 sessions (see transport/http-sessions.ts): idle expiry, and how many are kept, in all and per caller. */
      sessionIdleMs: Type.Integer({
        minimum: 1000,
        default: 30 * 60_000,
        description: 'An HTTP session unused this long expires (§5.2).',
      }),
      maxSessions: Type.Integer({ minimum: 1, default: 10_000, description: 'HTTP sessions kept at once, in all.' }),
      maxSessionsPerCaller: Type.Integer({
        minimum: 1,
        default: 64,
        description: 'HTTP sessions kept at once for one caller.',
      }),
      corsOrigins: Type.Array(Type.String({ minLength: 1 }), {
        default: [],
        description: 'Origins allowed to call from a browser (CORS); empty: none.',
      }),
      operatorPort: Type.Integer({
        minimum: 0,
        maximum: 65535,
        default: 0,
        description:
          'A listener of its own for `/healthz`, `/readyz` and the metrics, without keys; 0: they share the RCP port.',
      }),
      operatorHost: Type.String({
        minLength: 1,
        default: '127.0.0.1',
        description: 'Address the operator listener (`operatorPort`) binds.',
      }),
      trustProxy: Type.Array(
        Type.String({ pattern: '^(loopback|linklocal|uniquelocal|[0-9A-Fa-f:.]+(/[0-9]{1,3})?)$' }),
        {
          default: [],
          description:
            'The proxies whose `X-Forwarded-For` is believed: addresses, CIDR networks, or `loopback`, `linklocal`, ' +
            "`uniquelocal`. Empty: none, and a client is its socket's address (a header any client can send names nobody).",
        },
      ),
      /** Time to receive a request's headers, and its whole body; a slower client is cut (§15.5). */
      headersTimeoutMs: Type.Integer({
        minimum: 100,
        default: 10_000,
        description: "Time to receive a request's headers; a slower client is cut (§15.5).",
      }),
      bodyTimeoutMs: Type.Integer({
        minimum: 100,
        default: 30_000,
        description: "Time to receive a request's whole body; a slower client is cut (§15.5).",
      }),
      keepAliveTimeoutMs: Type.Integer({
        minimum: 100,
        default: 5_000,
        description: 'An idle keep-alive connection is closed after this long.',
      }),
      idleTimeoutMs: Type.Integer({
        minimum: 1000,
        default: 60_000,
        description: 'A connection on which nothing moves this long (a client that stops reading its answer) is cut.',
      }),
      maxConnections: Type.Integer({
        minimum: 1,
        default: 1024,
        description:
          "Open connections at most (and never more than the process's descriptor limit allows). Past it a newcomer " +
          'takes the place of one its client is not using, of the address holding the most, or is refused.',
      }),
      maxConnectionsPerAddress: Type.Integer({
        minimum: 1,
        default: 256,
        description: 'Open connections from one client address at most (behind a proxy, the proxy is that address).',
      }),
    },
    { description: 'The HTTP transport (§5.2): where it listens, its sessions, the proxies it believes, its bounds.' },
  ),
  limits: Section(
    {
      maxBodyBytes: Type.Integer({
        minimum: 1024,
        default: 16 * 1024 * 1024,
        description: 'Largest HTTP request body, in bytes.',
      }),
      maxResponseBytes: Type.Integer({
        minimum: 4096,
        default: 16 * 1024 * 1024,
        description:
          'Largest answer, in bytes: a larger one is -32013 saying how to shrink it (per batch member, §15.5).',
      }),
      maxUnsentBytes: Type.Integer({
        minimum: 65536,
        default: 64 * 1024 * 1024,
        description:
          'Bytes of answers not yet sent, all together: hits being assembled (retrieve), and HTTP answers written but ' +
          'not read by their clients; past it a request needing more is -32011 (§15.5).',
      }),
      maxBatchSize: Type.Integer({ minimum: 1, default: 128, description: 'Requests in one JSON-RPC batch at most.' }),
      maxFrameValues: Type.Integer({
        minimum: 1024,
        default: 131_072,
        description: 'JSON values (keys, elements) per frame at most: parsing more would hold the event loop (§15.5).',
      }),
      maxBufferedBodyBytes: Type.Integer({
        minimum: 1024 * 1024,
        default: 256 * 1024 * 1024,
        description:
          'HTTP bodies being received, all connections together, in bytes; past it a body is refused -32011.',
      }),
      maxWorkInFlight: Type.Integer({
        minimum: 1,
        default: 8,
        description:
          'HTTP requests carrying work (anything but the lifecycle methods) run at once, and started in one turn of ' +
          'the event loop, all callers together; past it a request is answered -32011 with retryAfterMs at once ' +
          'instead of queueing (§15.5). A caller within its fair share is still admitted, up to twice this.',
      }),
      maxInFlightPerConnection: Type.Integer({
        minimum: 1,
        default: 16,
        description:
          'Requests handled at once per stdio connection; past it the server stops reading stdin until one finishes.',
      }),
      requestTimeoutMs: Type.Integer({
        minimum: 1,
        default: 30_000,
        description: "A request's deadline, unless its own `deadlineMs` is shorter.",
      }),
      maxQueryChars: Type.Integer({
        minimum: 1,
        default: 16_384,
        description: 'Longest query text (retrieve, rerank), in characters; longer is -32602 (§15.5).',
      }),
      /** Deepest filter nesting and most filter nodes (leaves, combinators and `in`/`nin` members) (§8, §15.5). */
      maxFilterDepth: Type.Integer({
        minimum: 1,
        maximum: 64,
        default: 16,
        description: 'Deepest filter nesting (§8, §15.5).',
      }),
      maxFilterNodes: Type.Integer({
        minimum: 1,
        default: 1024,
        description: 'Most filter nodes: leaves, combinators and `in`/`nin` members (§8, §15.5).',
      }),
      rateLimit: Section(
        {
          reads: Type.Number({ minimum: 0, default: 0, description: 'Reads (retrieve and the rest) per second.' }),
          writes: Type.Number({ minimum: 0, default: 0, description: 'Writes (index/add, index/delete) per second.' }),
          models: Type.Number({ minimum: 0, default: 0, description: 'Model calls (embed, rerank) per second.' }),
        },
        {
          description:
            'Requests per second per caller (API key, else address; stdio is one caller), by method class; 0 = no limit.',
        },
      ),
      shedding: Section(
        {
          maxEventLoopDelayMs: Type.Number({
            minimum: 0,
            default: 1000,
            description: 'Event loop delay beyond which new work is refused.',
          }),
          maxHeapUsedRatio: Type.Number({
            minimum: 0,
            maximum: 1,
            default: 0.9,
            description: "Heap used, as a share of V8's heap limit, beyond which new work is refused.",
          }),
          maxRssBytes: Type.Integer({
            minimum: 0,
            default: 0,
            description:
              "Resident memory beyond which new work is refused; 0: 90% of the container's memory limit when there " +
              "is one, else half the machine's memory.",
          }),
          sampleIntervalMs: Type.Integer({
            minimum: 10,
            maximum: 60_000,
            default: 500,
            description: 'How often the load is sampled.',
          }),
        },
        { description: 'Refuse new work with -32011 while the process is overloaded; 0 turns a check off.' },
      ),
    },
    { description: 'Bounds on requests, answers and the work in progress (§15.5).' },
  ),
  content: Section(
    {
      fetch: Section(
        {
          schemes: Type.Array(Type.String({ pattern: '^[a-z][a-z0-9+.-]*$' }), {
            default: [],
            description:
              'The schemes fetched, e.g. ["https"]; `file` only when listed by name. Empty: no uri is ever ' +
              'dereferenced (-32602).',
          }),
          hosts: Type.Array(Type.String({ minLength: 1 }), {
            default: [],
            description: 'Allowed hosts (`docs.example.com`, `*.example.com`); empty: any host the schemes reach.',
          }),
          fileRoots: Type.Array(Type.String({ minLength: 1 }), {
            default: [],
            description:
              'Directories `file` uris may read from (relative ones against the working directory); required when ' +
              '`file` is among the schemes. /proc, /sys, /dev, `dataDir` and the config file are never served, even ' +
              'under a root.',
          }),
          allowPrivate: Type.Boolean({
            default: false,
            description: 'Allow hosts that resolve to private, loopback or link-local addresses.',
          }),
          maxBytes: Type.Integer({
            minimum: 1,
            default: 1024 * 1024,
            description: 'Largest content fetched, in bytes.',
          }),
          timeoutMs: Type.Integer({ minimum: 1, default: 5000, description: 'Time one fetch may take.' }),
        },
        { description: 'Dereferencing Content `uri`s.' },
      ),
      documents: Section(
        {
          maxFileBytes: Type.Integer({
            minimum: 1,
            default: 64 * 1024 * 1024,
            description:
              'Largest file read as a document (PDF, Word, HTML, Markdown, text), in bytes; larger is refused unread.',
          }),
          maxUnpackedBytes: Type.Integer({
            minimum: 1,
            default: 256 * 1024 * 1024,
            description: 'Bytes a compressed format (a .docx) may unpack to; past it the file is refused (a zip bomb).',
          }),
          timeoutMs: Type.Integer({
            minimum: 1,
            default: 60_000,
            description: 'Time one file may take to read; past it its parser process is killed and the file refused.',
          }),
          maxMemoryMb: Type.Integer({
            minimum: 128,
            default: 512,
            description:
              'Resident memory a parser process may reach, in MiB; past it the process is killed and the file refused.',
          }),
          processes: Type.Integer({
            minimum: 1,
            maximum: 64,
            default: 1,
            description: 'Parser processes at once (each file is read in one); more files wait their turn.',
          }),
        },
        { description: 'Reading files of the formats people keep into documents (docs/documents.md).' },
      ),
    },
    {
      description:
        '§15.5: whether and where Content `uri`s are dereferenced (an SSRF surface: off unless schemes are listed).',
    },
  ),
  federation: Section(
    {
      id: Type.String({
        minLength: 1,
        default: 'rcp-gateway',
        description: "This gateway's identity on `_meta.federation.path` (§16.2).",
      }),
      depth: Type.Integer({
        minimum: 0,
        maximum: 16,
        default: 3,
        description: 'Hop budget of a request that does not give one (§16.2).',
      }),
      fusion: Section(
        {
          method: Type.Union(
            [Type.Literal('rrf'), Type.Literal('weighted'), Type.Literal('convex'), Type.Literal('shards')],
            {
              default: 'rrf',
              description:
                '§16.3 rrf | weighted | convex, or `shards` for engines that are shards of one corpus (same encoder).',
            },
          ),
          rrfK: Type.Integer({ minimum: 1, default: 60, description: 'The k of RRF: 1 / (rrfK + rank).' }),
        },
        { description: "How the engines' answers are fused (§16.3)." },
      ),
      fusionReserveMs: Type.Integer({
        minimum: 0,
        default: 50,
        description: "Time kept back from the engines' deadline for fusing their answers (at least 10% of it).",
      }),
      attempts: Type.Integer({
        minimum: 1,
        maximum: 10,
        default: 2,
        description: 'Tries per engine call when a failure is retryable.',
      }),
      connectTimeoutMs: Type.Integer({
        minimum: 1,
        default: 30_000,
        description: "How long start-up waits for each engine's initialize before serving without it.",
      }),
      probeIntervalMs: Type.Integer({
        minimum: 50,
        default: 2000,
        description: "Selector mode: how often each engine's liveness is probed with ping (§7.15).",
      }),
      downAfter: Type.Integer({
        minimum: 1,
        default: 3,
        description: 'Calls in a row to an engine that got no answer (timed out, link down) before it is marked down.',
      }),
      downForMs: Type.Integer({
        minimum: 50,
        default: 5000,
        description: 'How long an engine marked down is failed fast before one call probes it (doubling to 60 s).',
      }),
    },
    {
      description:
        "`rcp-server gateway` (§16): this gateway's identity on federation paths, hop budget, fusion and deadlines.",
    },
  ),
  redis: Section(
    {
      url: Type.String({
        pattern: '^(rediss?://.*)?$',
        default: '',
        description: 'A `redis://` or `rediss://` URL; empty: the buckets stay in memory.',
      }),
      prefix: Type.String({ default: 'rcp:rate:', description: 'Prefix of the bucket keys.' }),
      timeoutMs: Type.Integer({
        minimum: 1,
        default: 100,
        description:
          'Time a Redis call may take; past it this replica limits with its own buckets until Redis answers again.',
      }),
    },
    {
      description:
        'Shared rate-limit buckets for replicas behind one load balancer; an empty url keeps them in memory.',
    },
  ),
  corpora: Section(
    {
      root: Type.String({
        default: '',
        description:
          'A folder of named corpora, one per folder (`<root>/<name>/`), served beside the default one at ' +
          '`<base>/corpora/<name>` over HTTP (docs/tenants.md). With store.url the corpora are in the store ' +
          "(one schema each) and the folder holds this process's replicas of them. Empty: the default corpus alone.",
      }),
      maxOpen: Type.Integer({
        minimum: 1,
        default: 32,
        description: 'Named corpora open at once; past it the one unused longest is closed (reopened on demand).',
      }),
      idleSeconds: Type.Integer({
        minimum: 1,
        default: 300,
        description: 'A named corpus no request has used this long is closed, its memory given back.',
      }),
      maxDocuments: Type.Integer({
        minimum: 0,
        default: 0,
        description: 'Documents each named corpus may hold; a write past it is refused whole (-32013). 0: no quota.',
      }),
      maxBytes: Type.Integer({
        minimum: 0,
        default: 0,
        description:
          'Bytes of document text (UTF-8) each named corpus may hold; a write past it is refused whole (-32013), and ' +
          'deleting or replacing documents gives bytes back. 0: no quota.',
      }),
    },
    { description: 'Many corpora in one process, each an engine of its own (§7.13), each tenant confined (§15.6).' },
  ),
  store: Section(
    {
      url: Type.String({
        pattern: '^(postgres(ql)?://.*)?$',
        default: '',
        description:
          'A `postgres://` URL: the corpus of record is that database, shared by every replica, and `dataDir` holds ' +
          "this replica's snapshot of it. Empty: the corpus lives in `dataDir` alone (SQLite).",
      }),
      pollMs: Type.Integer({
        minimum: 50,
        default: 1000,
        description: "How often a replica polls the store's head beside LISTEN/NOTIFY (a notification can be lost).",
      }),
    },
    { description: 'The corpus of record: embedded SQLite (the default) or PostgreSQL shared by replicas.' },
  ),
  models: Section(
    {
      dir: Type.String({
        minLength: 1,
        default: RUNTIME_DEFAULTS.modelsDir,
        description: 'Where model directories live; a relative encoder/reranker name is looked up here.',
      }),
      encoder: Type.String({
        minLength: 1,
        default: 'use-lite',
        description: 'The dense encoder: a model directory name under `dir`, or a path; `none` serves no embed.',
      }),
      reranker: Type.String({
        minLength: 1,
        default: 'none',
        description:
          'The cross-encoder for rerank: a directory name or path; `none` (the default) advertises no cross-encoder.',
      }),
      colbert: Type.Boolean({
        default: true,
        description: "Offer rerank method `colbert` (MaxSim over the encoder's token vectors).",
      }),
      intraOpThreads: Type.Integer({
        minimum: 0,
        maximum: 256,
        default: 0,
        description: 'ONNX Runtime intra-op threads per model; 0: one per core the process may use.',
      }),
      backgroundNice: Type.Integer({
        minimum: 0,
        maximum: 19,
        default: 10,
        description:
          'The encoder runs bulk work (the texts of index writes, embed without kind "query") in a second session ' +
          'of its own, opened on the first such call, whose threads run at this OS nice value (Linux): a query ' +
          "never waits for a bulk batch, and takes the cores first. 0: one session for everything (the model's " +
          'memory once, not twice).',
      }),
      embedBatchLimit: Type.Integer({ minimum: 1, default: 256, description: 'Inputs in one embed request at most.' }),
      rerankMaxCandidates: Type.Integer({
        minimum: 1,
        default: 256,
        description: 'Candidates in one rerank request at most.',
      }),
      batching: Section(
        {
          maxWaitMs: Type.Integer({
            minimum: 0,
            maximum: 1000,
            default: 2,
            description:
              'How long a batch collects requests that arrive while the model is busy; a request that finds the ' +
              'queue idle runs at once, and 0 never waits.',
          }),
          maxBatchTokens: Type.Integer({
            minimum: 1,
            default: 16_384,
            description: 'Tokens in one batch at most; a full batch runs at once.',
          }),
          maxBatchItems: Type.Integer({
            minimum: 1,
            default: 16,
            description:
              'Texts in one batch at most. A batch runs to its end once begun, so this bounds how long a text that ' +
              'arrives meanwhile waits: 16 embeds as fast as 64 on two cores (230 vs 215 texts/s), and a query beside a ' +
              'one-caller flood of chunked index/add waits about 0.3 s instead of 1 s.',
          }),
          maxBulkItems: Type.Integer({
            minimum: 1,
            default: 4,
            description:
              'Bulk texts (documents, embed without kind "query") in one batch at most while queries are being ' +
              'served (one came within the last second); otherwise maxBatchItems. A query waits for the batch ' +
              'running when it came: beside a one-caller flood of chunked index/add, 4 texts of 128 tokens hold ' +
              'the model a quarter as long as 16.',
          }),
          maxQueuedItems: Type.Integer({
            minimum: 1,
            default: 4096,
            description: 'Texts waiting per model before new work is refused with -32011.',
          }),
          maxQueueWaitMs: Type.Integer({
            minimum: 0,
            default: 2000,
            description:
              'Estimated milliseconds of queued work beyond which new work is refused with -32011; 0: no time bound.',
          }),
        },
        {
          description: 'The inference queue of each model (docs/architecture.md §10): batches, and how much may wait.',
        },
      ),
    },
    { description: 'The models behind embed and rerank.' },
  ),
  index: Section(
    {
      writable: Type.Boolean({
        default: true,
        description: 'false makes the corpus read-only: index/add and index/delete are refused (§15.3).',
      }),
      space: Type.Union([Type.Literal('cosine'), Type.Literal('ip')], {
        default: 'cosine',
        description: "The dense index's similarity: cosine, or inner product.",
      }),
      m: Type.Integer({ minimum: 2, maximum: 128, default: 16, description: 'HNSW links per node.' }),
      efConstruction: Type.Integer({
        minimum: 8,
        default: 200,
        description: 'HNSW candidate list size while inserting.',
      }),
      efSearch: Type.Integer({ minimum: 1, default: 100, description: 'HNSW candidate list size while searching.' }),
      saveIntervalMs: Type.Integer({
        minimum: 1000,
        default: 60_000,
        description: 'How often a changed dense index is saved (also on shutdown).',
      }),
      followMs: Type.Integer({
        minimum: 10,
        maximum: 60_000,
        default: 50,
        description:
          'How often this process looks for writes other processes serving the same data dir committed (a check of ' +
          'microseconds); they are served here within about this long of their acknowledgement.',
      }),
      snapshots: Section(
        {
          versions: Type.Integer({
            minimum: 0,
            maximum: 1_000_000,
            default: 100,
            description:
              'The last this many versions (writes) stay queryable with a pinned indexVersion, exactly as they ' +
              'answered (§7.7.1); 0: only the current one, and retrieve.snapshots is not advertised.',
          }),
          maxAgeSeconds: Type.Integer({
            minimum: 1,
            default: 86_400,
            description: 'Versions whose removals are older than this leave the window.',
          }),
          maxChunks: Type.Integer({
            minimum: 0,
            default: 10_000,
            description:
              'Removed chunks kept for the window (their vectors and terms in memory, their rows in the store); ' +
              'past it the oldest versions leave first.',
          }),
          maxBytes: Type.Integer({
            minimum: 0,
            default: 64 * 1024 * 1024,
            description:
              'Bytes of removed chunks kept for the window, in the store (texts and vectors) and in memory (vectors ' +
              'and terms) each; past it the oldest versions leave first.',
          }),
        },
        { description: 'Snapshots (§7.7.1): recent versions a retrieve may pin.' },
      ),
      maxDocumentBytes: Type.Integer({ minimum: 1, default: 1024 * 1024, description: 'Largest document, in bytes.' }),
      /** A document's metadata: bytes as JSON, and levels of nesting (§15.5); more is -32602 on its `meta`. */
      maxMetadataBytes: Type.Integer({
        minimum: 2,
        default: 64 * 1024,
        description: "A document's metadata, in bytes as JSON, at most; more is -32602 on its `meta` (§15.5).",
      }),
      maxMetadataDepth: Type.Integer({
        minimum: 1,
        maximum: 64,
        default: 8,
        description: "A document's metadata, in levels of nesting, at most; more is -32602 on its `meta` (§15.5).",
      }),
      chunkCacheBytes: Type.Integer({
        minimum: 0,
        default: 64 * 1024 * 1024,
        description:
          'Chunk texts kept in memory for building hits, least recently used out first, in bytes; 0 reads every ' +
          "hit's text from the store.",
      }),
      maxDocumentsPerAdd: Type.Integer({
        minimum: 1,
        default: 1000,
        description: 'Documents in one index/add at most.',
      }),
      maxChunksPerAdd: Type.Integer({
        minimum: 1,
        default: 2048,
        description:
          'Chunks one index/add may make at most; a call that would make more is -32013 before it is embedded. ' +
          "Every writer of the data dir waits while a write's chunks are indexed (about 3 ms each at 100,000 chunks " +
          'on two cores), so this bounds how long one call holds the others (a 1 MiB document of one-letter words ' +
          'makes about 4,000). rcp-server ingest is not bound by it.',
      }),
      fields: Type.Record(
        Type.String(),
        Type.Union((['keyword', 'text', 'int', 'float', 'bool', 'date'] as const).map((type) => Type.Literal(type))),
        {
          default: {},
          description: 'Typed metadata fields, validated on write; undeclared fields are stored untyped.',
        },
      ),
      bm25: Section(
        {
          k1: Type.Number({ minimum: 0, default: 1.2, description: 'Term frequency saturation.' }),
          b: Type.Number({
            minimum: 0,
            maximum: 1,
            default: 0.75,
            description: 'Document length normalisation: 0 none, 1 full.',
          }),
          stem: Type.Boolean({ default: true, description: 'Stem English words, in documents and queries.' }),
          fields: Type.Record(Type.String(), Type.Number({ minimum: 0, maximum: 100 }), {
            // SciFact train, paired bootstrap: title 1.5 lifts sparse nDCG@10 +0.006, hybrid +0.0065 (docs/corpus.md).
            default: { title: 1.5 },
            description:
              "Metadata text fields weighed into BM25 beside a chunk's text (BM25F): field name → weight, each of " +
              'its terms counted that many times (0: not indexed). A string value, or an array of strings; read for ' +
              'every chunk of the document. Takes effect at start (the lexical index is rebuilt from the store).',
          }),
        },
        { description: 'Lexical (BM25) scoring.' },
      ),
    },
    { description: 'The corpus: its dense (HNSW) index, documents, metadata and lexical index.' },
  ),
  retrieve: Section(
    {
      maxK: Type.Integer({ minimum: 1, default: 200, description: 'Largest k served; a larger k is clamped (§7.7).' }),
      maxCandidates: Type.Integer({
        minimum: 1,
        default: 1000,
        description: 'Most recall candidates per list (candidateK is clamped to it).',
      }),
      candidateK: Type.Integer({
        minimum: 1,
        default: 100,
        description: 'Recall candidates per list when a request does not say.',
      }),
      defaultMode: Type.Union([Type.Literal('dense'), Type.Literal('sparse'), Type.Literal('hybrid')], {
        default: 'hybrid',
        description: 'Recall mode when a request does not say.',
      }),
      fusion: Section(
        {
          method: Type.Union([Type.Literal('rrf'), Type.Literal('weighted'), Type.Literal('convex')], {
            default: 'convex',
            description: 'Fusion method when a request does not say.',
          }),
          alpha: Type.Number({
            minimum: 0,
            maximum: 1,
            default: 0.5,
            description: "The dense list's weight in convex fusion (the sparse list's is 1 - alpha).",
          }),
          rrfK: Type.Integer({ minimum: 1, default: 60, description: 'The k of RRF: 1 / (rrfK + rank).' }),
        },
        { description: 'How hybrid retrieval fuses its dense and sparse lists.' },
      ),
      quotes: Type.Boolean({
        default: true,
        description:
          'Whether each hit quotes the sentence that best answers the query (`citation["x-rcp-server-quote"]`, docs/retrieve.md); `unit: "passage"` finds its window the same way either way.',
      }),
      confidenceTable: Type.String({
        default: '',
        description:
          "Hits' `confidence` tables (§7.7.2): empty, the shipped ones (dense, sparse, hybrid convex, rrf and weighted, over the default encoder); a path, one made by bench/calibrate.ts; `none`, off.",
      }),
      rerankTopN: Type.Integer({
        minimum: 1,
        default: 50,
        description: 'Candidates reranked when a request does not say (at least k, at most candidateK).',
      }),
      sessionTtlSeconds: Type.Integer({
        minimum: 1,
        default: 1800,
        description: 'How long a retrieve session (what it has already been shown, §7.7.3) is remembered.',
      }),
      cursorSecret: Type.String({
        default: '',
        description:
          'The key that signs pagination cursors (§10). Replicas behind one load balancer share it, so a cursor ' +
          'from one verifies on another; empty: a key of this process (its cursors end with it).',
      }),
      trust: Type.Record(
        Type.String(),
        Type.Union([Type.Literal('trusted'), Type.Literal('community'), Type.Literal('untrusted')]),
        {
          default: {},
          description: 'Trust level per `meta.source` (§15.2); anything unlisted is untrusted.',
        },
      ),
      injection: Section(
        {
          threshold: Type.Number({
            minimum: 0,
            maximum: 1,
            default: 0.5,
            description:
              "A hit is `trust.injectionSuspected` when its text's injection screen scores at or below this " +
              '(docs/trust.md; 1: no sign found, 0: every sign).',
          }),
          sanitize: Type.Boolean({
            default: false,
            description:
              "Remove hidden characters (zero-width, Unicode tags, bidi overrides) from hits' `text`, and mark such " +
              'hits `trust.sanitized` (citation offsets still index the document as stored).',
          }),
        },
        { description: 'The injection screen of retrieved text (§15.2, docs/trust.md): advisory signals only.' },
      ),
    },
    { description: 'retrieve (§7.7): its bounds, and what a request gets when it does not say.' },
  ),
  auth: Section(
    {
      apiKeys: Type.Array(
        Type.Object(
          {
            key: Type.Optional(Type.String({ minLength: 16 })),
            sha256: Type.Optional(Type.String({ pattern: '^[0-9a-fA-F]{64}$' })),
            scopes: Type.Array(
              Type.Union([Type.Literal('read'), Type.Literal('write'), Type.Literal('monitor'), Type.Literal('admin')]),
              { minItems: 1 },
            ),
            corpora: Type.Optional(
              Type.Array(Type.String({ pattern: CORPUS_GRANT }), {
                minItems: 1,
                description: 'The corpora the key may use: names, prefixes ending in `*`, `*` for all.',
              }),
            ),
          },
          { additionalProperties: false },
        ),
        {
          default: [],
          description:
            'API keys for HTTP (`Authorization: Bearer`): a plain `key` or its `sha256`, with scopes, and the ' +
            'corpora it may use (docs/tenants.md; without `corpora`, the default one). Empty: no auth.',
        },
      ),
      allowUnauthenticated: Type.Boolean({
        default: false,
        description: 'Serve HTTP on a non-loopback address without API keys. Off by default: such a start is refused.',
      }),
    },
    { description: 'Who may call over HTTP.' },
  ),
  metrics: Section(
    {
      path: Type.String({
        pattern: '^(/.*)?$',
        default: '/metrics',
        description: 'Where Prometheus metrics are served on the HTTP port (`GET <path>`); empty turns them off.',
      }),
    },
    { description: 'Prometheus metrics.' },
  ),
  log: Section(
    {
      level: Type.Union(
        ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
        { default: 'info', description: 'The least severe level logged; `silent` logs nothing.' },
      ),
      bodies: Type.Boolean({
        default: false,
        description:
          'One debug line per answered request carries its params only when this is on (§15.6: off by default).',
      }),
      redact: Type.Array(Type.String({ minLength: 1 }), {
        default: ['req.headers.authorization', 'params._meta.authorization', '*.apiKey', '*.password', '*.token'],
        description: 'Paths censored in every log line (pino redact syntax), e.g. `params.query`.',
      }),
    },
    { description: 'Logging (to stderr; on stdio, stdout carries protocol frames only, §5.1).' },
  ),
  tracing: Section(
    {
      enabled: Type.Boolean({
        default: false,
        description:
          'Export OpenTelemetry traces of requests and their stages over OTLP/HTTP (JSON), to ' +
          'OTEL_EXPORTER_OTLP_ENDPOINT (default http://localhost:4318). Also on when OTEL_TRACES_EXPORTER=otlp; ' +
          'sampling by OTEL_TRACES_SAMPLER (default parentbased_always_on). Off, no exporter is loaded.',
      }),
      includeText: Type.Boolean({
        default: false,
        description: "Spans carry the query's text, not only its length (§15.6: off by default).",
      }),
    },
    { description: 'Traces (OpenTelemetry; docs/operations.md "Tracing").' },
  ),
});

export type Config = Static<typeof ConfigSchema>;

/** Every setting at its default, each call a fresh copy (callers merge into it): derived from ConfigSchema. */
export function defaultConfig(): Config {
  return Value.Default(ConfigSchema, undefined) as Config;
}
