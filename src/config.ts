import { isIP } from 'node:net';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Type, type Static } from '@sinclair/typebox';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { parse as parseYaml } from 'yaml';
import { StartupError } from './startup-error.js';

/**
 * Typed configuration, validated at start-up (DESIGN §1). Precedence: defaults < config file < RCP_* environment
 * variables < command-line flags. Unknown keys in a file are errors: a typo must not silently keep a default.
 */
const Section = <T extends Parameters<typeof Type.Object>[0]>(properties: T) =>
  Type.Object(properties, { additionalProperties: false });

export const ConfigSchema = Section({
  server: Section({
    name: Type.String({ minLength: 1 }),
    version: Type.String({ minLength: 1 }),
  }),
  dataDir: Type.String({ minLength: 1 }),
  http: Section({
    host: Type.String({ minLength: 1 }),
    port: Type.Integer({ minimum: 0, maximum: 65535 }),
    base: Type.String({ pattern: '^/' }),
    /** §5.2 sessions (see transport/http-sessions.ts): idle expiry, and how many are kept, in all and per caller. */
    sessionIdleMs: Type.Integer({ minimum: 1000 }),
    maxSessions: Type.Integer({ minimum: 1 }),
    maxSessionsPerCaller: Type.Integer({ minimum: 1 }),
    corsOrigins: Type.Array(Type.String({ minLength: 1 })),
    /** A listener of its own for `/healthz`, `/readyz` and the metrics, without keys; 0: they share the RCP port. */
    operatorPort: Type.Integer({ minimum: 0, maximum: 65535 }),
    operatorHost: Type.String({ minLength: 1 }),
    /**
     * The proxies whose `X-Forwarded-For` is believed: addresses, CIDR networks, or `loopback`, `linklocal`,
     * `uniquelocal`. Empty: none, and a client is its socket's address (a header any client can send names nobody).
     */
    trustProxy: Type.Array(Type.String({ pattern: '^(loopback|linklocal|uniquelocal|[0-9A-Fa-f:.]+(/[0-9]{1,3})?)$' })),
    /** Time to receive a request's headers, and its whole body; a slower client is cut (§15.5). */
    headersTimeoutMs: Type.Integer({ minimum: 100 }),
    bodyTimeoutMs: Type.Integer({ minimum: 100 }),
    /** An idle keep-alive connection is closed after this long. */
    keepAliveTimeoutMs: Type.Integer({ minimum: 100 }),
    /** A connection on which nothing moves this long (a client that stops reading its answer) is cut. */
    idleTimeoutMs: Type.Integer({ minimum: 1000 }),
    /** Open connections at most (and never more than the process's descriptor limit allows); more are refused. */
    maxConnections: Type.Integer({ minimum: 1 }),
    /** Open connections from one client address at most (behind a proxy, the proxy is that address). */
    maxConnectionsPerAddress: Type.Integer({ minimum: 1 }),
  }),
  limits: Section({
    maxBodyBytes: Type.Integer({ minimum: 1024 }),
    /** Largest answer, in bytes: a larger one is -32013 saying how to shrink it (per batch member, §15.5). */
    maxResponseBytes: Type.Integer({ minimum: 4096 }),
    /**
     * Bytes of answers not yet sent, all together: hits being assembled (retrieve), and HTTP answers written but not
     * read by their clients; past it a request needing more is -32011 (§15.5).
     */
    maxUnsentBytes: Type.Integer({ minimum: 65536 }),
    maxBatchSize: Type.Integer({ minimum: 1 }),
    /** JSON values (keys, elements) per frame at most: parsing more would hold the event loop (§15.5). */
    maxFrameValues: Type.Integer({ minimum: 1024 }),
    /** HTTP bodies being received, all connections together, in bytes; past it a body is refused -32011. */
    maxBufferedBodyBytes: Type.Integer({ minimum: 1024 * 1024 }),
    /** Requests handled at once per stdio connection; past it the server stops reading stdin until one finishes. */
    maxInFlightPerConnection: Type.Integer({ minimum: 1 }),
    requestTimeoutMs: Type.Integer({ minimum: 1 }),
    /** Longest query text (retrieve, rerank), in characters; longer is -32602 (§15.5). */
    maxQueryChars: Type.Integer({ minimum: 1 }),
    /** Deepest filter nesting and most filter nodes (leaves, combinators and `in`/`nin` members) (§8, §15.5). */
    maxFilterDepth: Type.Integer({ minimum: 1, maximum: 64 }),
    maxFilterNodes: Type.Integer({ minimum: 1 }),
    /** Requests per second per caller (API key, else address; stdio is one caller), by method class; 0 = no limit. */
    rateLimit: Section({
      reads: Type.Number({ minimum: 0 }),
      writes: Type.Number({ minimum: 0 }),
      models: Type.Number({ minimum: 0 }),
    }),
    /** Refuse new work with -32011 while the process is overloaded; 0 turns a check off. */
    shedding: Section({
      maxEventLoopDelayMs: Type.Number({ minimum: 0 }),
      maxHeapUsedRatio: Type.Number({ minimum: 0, maximum: 1 }),
      /** 0: 90% of the container's memory limit when there is one, else half the machine's memory. */
      maxRssBytes: Type.Integer({ minimum: 0 }),
      sampleIntervalMs: Type.Integer({ minimum: 10, maximum: 60_000 }),
    }),
  }),
  /** §15.5: whether and where Content `uri`s are dereferenced (an SSRF surface: off unless schemes are listed). */
  content: Section({
    fetch: Section({
      /** e.g. ["https"]; `file` only when listed by name. Empty: no uri is ever dereferenced (-32602). */
      schemes: Type.Array(Type.String({ pattern: '^[a-z][a-z0-9+.-]*$' })),
      /** Allowed hosts (`docs.example.com`, `*.example.com`); empty: any host the schemes reach. */
      hosts: Type.Array(Type.String({ minLength: 1 })),
      /**
       * Directories `file` uris may read from (relative ones against the working directory); required when `file`
       * is among the schemes. /proc, /sys, /dev, `dataDir` and the config file are never served, even under a root.
       */
      fileRoots: Type.Array(Type.String({ minLength: 1 })),
      /** Allow hosts that resolve to private, loopback or link-local addresses. */
      allowPrivate: Type.Boolean(),
      maxBytes: Type.Integer({ minimum: 1 }),
      timeoutMs: Type.Integer({ minimum: 1 }),
    }),
  }),
  /** `rcp-server gateway` (§16): this gateway's identity on federation paths, hop budget, fusion and deadlines. */
  federation: Section({
    id: Type.String({ minLength: 1 }),
    depth: Type.Integer({ minimum: 0, maximum: 16 }),
    fusion: Section({
      /** §16.3 rrf | weighted | convex, or `shards` for engines that are shards of one corpus (same encoder). */
      method: Type.Union([
        Type.Literal('rrf'),
        Type.Literal('weighted'),
        Type.Literal('convex'),
        Type.Literal('shards'),
      ]),
      rrfK: Type.Integer({ minimum: 1 }),
    }),
    fusionReserveMs: Type.Integer({ minimum: 0 }),
    attempts: Type.Integer({ minimum: 1, maximum: 10 }),
    /** How long start-up waits for each engine's initialize before serving without it. */
    connectTimeoutMs: Type.Integer({ minimum: 1 }),
    /** Selector mode: how often each engine's liveness is probed with ping (§7.15). */
    probeIntervalMs: Type.Integer({ minimum: 50 }),
  }),
  /** Shared rate-limit buckets for replicas behind one load balancer; an empty url keeps them in memory. */
  redis: Section({
    url: Type.String({ pattern: '^(rediss?://.*)?$' }),
    prefix: Type.String(),
    timeoutMs: Type.Integer({ minimum: 1 }),
  }),
  models: Section({
    /** Where model directories live; a relative encoder/reranker name is looked up here. */
    dir: Type.String({ minLength: 1 }),
    /** The dense encoder: a model directory name under `dir`, or a path; `none` serves no embed. */
    encoder: Type.String({ minLength: 1 }),
    /** The cross-encoder for rerank: a directory name or path; `none` (the default) advertises no cross-encoder. */
    reranker: Type.String({ minLength: 1 }),
    /** Offer rerank method `colbert` (MaxSim over the encoder's token vectors). */
    colbert: Type.Boolean(),
    /** ONNX Runtime intra-op threads per model; 0 lets the runtime choose. */
    intraOpThreads: Type.Integer({ minimum: 0, maximum: 256 }),
    embedBatchLimit: Type.Integer({ minimum: 1 }),
    rerankMaxCandidates: Type.Integer({ minimum: 1 }),
    batching: Section({
      /** How long to collect requests before running a batch; 0 runs at once. */
      maxWaitMs: Type.Integer({ minimum: 0, maximum: 1000 }),
      maxBatchTokens: Type.Integer({ minimum: 1 }),
      maxBatchItems: Type.Integer({ minimum: 1 }),
      /** Texts waiting per model before new work is refused with -32011. */
      maxQueuedItems: Type.Integer({ minimum: 1 }),
      /** Estimated milliseconds of queued work beyond which new work is refused with -32011; 0: no time bound. */
      maxQueueWaitMs: Type.Integer({ minimum: 0 }),
    }),
  }),
  index: Section({
    /** false makes the corpus read-only: index/add and index/delete are refused (§15.3). */
    writable: Type.Boolean(),
    space: Type.Union([Type.Literal('cosine'), Type.Literal('ip')]),
    m: Type.Integer({ minimum: 2, maximum: 128 }),
    efConstruction: Type.Integer({ minimum: 8 }),
    efSearch: Type.Integer({ minimum: 1 }),
    /** How often a changed dense index is saved (also on shutdown). */
    saveIntervalMs: Type.Integer({ minimum: 1000 }),
    maxDocumentBytes: Type.Integer({ minimum: 1 }),
    /** A document's metadata: bytes as JSON, and levels of nesting (§15.5); more is -32602 on its `meta`. */
    maxMetadataBytes: Type.Integer({ minimum: 2 }),
    maxMetadataDepth: Type.Integer({ minimum: 1, maximum: 64 }),
    maxDocumentsPerAdd: Type.Integer({ minimum: 1 }),
    /** Typed metadata fields, validated on write; undeclared fields are stored untyped. */
    fields: Type.Record(
      Type.String(),
      Type.Union((['keyword', 'text', 'int', 'float', 'bool', 'date'] as const).map((type) => Type.Literal(type))),
    ),
    bm25: Section({
      k1: Type.Number({ minimum: 0 }),
      b: Type.Number({ minimum: 0, maximum: 1 }),
      stem: Type.Boolean(),
    }),
  }),
  retrieve: Section({
    maxK: Type.Integer({ minimum: 1 }),
    /** Most recall candidates per list (candidateK is clamped to it). */
    maxCandidates: Type.Integer({ minimum: 1 }),
    candidateK: Type.Integer({ minimum: 1 }),
    defaultMode: Type.Union([Type.Literal('dense'), Type.Literal('sparse'), Type.Literal('hybrid')]),
    fusion: Section({
      method: Type.Union([Type.Literal('rrf'), Type.Literal('weighted'), Type.Literal('convex')]),
      alpha: Type.Number({ minimum: 0, maximum: 1 }),
      rrfK: Type.Integer({ minimum: 1 }),
    }),
    rerankTopN: Type.Integer({ minimum: 1 }),
    sessionTtlSeconds: Type.Integer({ minimum: 1 }),
    /** Trust level per `meta.source` (§15.2); anything unlisted is untrusted. */
    trust: Type.Record(
      Type.String(),
      Type.Union([Type.Literal('trusted'), Type.Literal('community'), Type.Literal('untrusted')]),
    ),
  }),
  auth: Section({
    /** API keys for HTTP (`Authorization: Bearer`): a plain `key` or its `sha256`, with scopes. Empty: no auth. */
    apiKeys: Type.Array(
      Type.Object(
        {
          key: Type.Optional(Type.String({ minLength: 16 })),
          sha256: Type.Optional(Type.String({ pattern: '^[0-9a-fA-F]{64}$' })),
          scopes: Type.Array(
            Type.Union([Type.Literal('read'), Type.Literal('write'), Type.Literal('monitor'), Type.Literal('admin')]),
            {
              minItems: 1,
            },
          ),
        },
        { additionalProperties: false },
      ),
    ),
    /** Serve HTTP on a non-loopback address without API keys. Off by default: such a start is refused. */
    allowUnauthenticated: Type.Boolean(),
  }),
  /** Where Prometheus metrics are served on the HTTP port (`GET <path>`); empty turns them off. */
  metrics: Section({ path: Type.String({ pattern: '^(/.*)?$' }) }),
  log: Section({
    level: Type.Union(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l))),
    /** One debug line per answered request carries its params only when this is on (§15.6: off by default). */
    bodies: Type.Boolean(),
    /** Paths censored in every log line (pino redact syntax), e.g. `params.query`. */
    redact: Type.Array(Type.String({ minLength: 1 })),
  }),
});

export type Config = Static<typeof ConfigSchema>;

const PACKAGE = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

export function defaultConfig(): Config {
  return {
    server: { name: 'rcp-server', version: PACKAGE.version },
    dataDir: './indexes/default',
    http: {
      host: '127.0.0.1',
      port: 8080,
      base: '/rcp',
      sessionIdleMs: 30 * 60_000,
      maxSessions: 10_000,
      maxSessionsPerCaller: 64,
      corsOrigins: [],
      trustProxy: [],
      operatorPort: 0,
      operatorHost: '127.0.0.1',
      headersTimeoutMs: 10_000,
      bodyTimeoutMs: 30_000,
      keepAliveTimeoutMs: 5_000,
      idleTimeoutMs: 60_000,
      maxConnections: 1024,
      maxConnectionsPerAddress: 256,
    },
    limits: {
      maxBodyBytes: 16 * 1024 * 1024,
      maxFrameValues: 131_072,
      maxBufferedBodyBytes: 256 * 1024 * 1024,
      maxResponseBytes: 16 * 1024 * 1024,
      maxUnsentBytes: 64 * 1024 * 1024,
      maxBatchSize: 128,
      maxInFlightPerConnection: 16,
      requestTimeoutMs: 30_000,
      maxQueryChars: 16_384,
      maxFilterDepth: 16,
      maxFilterNodes: 1024,
      rateLimit: { reads: 0, writes: 0, models: 0 },
      shedding: { maxEventLoopDelayMs: 1000, maxHeapUsedRatio: 0.9, maxRssBytes: 0, sampleIntervalMs: 500 },
    },
    content: {
      fetch: { schemes: [], hosts: [], fileRoots: [], allowPrivate: false, maxBytes: 1024 * 1024, timeoutMs: 5000 },
    },
    federation: {
      id: 'rcp-gateway',
      depth: 3,
      fusion: { method: 'rrf', rrfK: 60 },
      fusionReserveMs: 50,
      attempts: 2,
      connectTimeoutMs: 30_000,
      probeIntervalMs: 2000,
    },
    redis: { url: '', prefix: 'rcp:rate:', timeoutMs: 250 },
    models: {
      dir: fileURLToPath(new URL('../models', import.meta.url)),
      encoder: 'use-lite',
      reranker: 'none',
      colbert: true,
      intraOpThreads: 0,
      embedBatchLimit: 256,
      rerankMaxCandidates: 256,
      batching: {
        maxWaitMs: 2,
        maxBatchTokens: 16_384,
        maxBatchItems: 64,
        maxQueuedItems: 4096,
        maxQueueWaitMs: 2000,
      },
    },
    index: {
      writable: true,
      space: 'cosine',
      m: 16,
      efConstruction: 200,
      efSearch: 100,
      saveIntervalMs: 60_000,
      maxDocumentBytes: 1024 * 1024,
      maxMetadataBytes: 64 * 1024,
      maxMetadataDepth: 8,
      maxDocumentsPerAdd: 1000,
      fields: {},
      bm25: { k1: 1.2, b: 0.75, stem: true },
    },
    retrieve: {
      maxK: 200,
      maxCandidates: 1000,
      candidateK: 100,
      defaultMode: 'hybrid',
      fusion: { method: 'convex', alpha: 0.5, rrfK: 60 },
      rerankTopN: 50,
      sessionTtlSeconds: 1800,
      trust: {},
    },
    auth: { apiKeys: [], allowUnauthenticated: false },
    metrics: { path: '/metrics' },
    log: {
      level: 'info',
      bodies: false,
      redact: ['req.headers.authorization', 'params._meta.authorization', '*.apiKey', '*.password', '*.token'],
    },
  };
}

type EnvironmentSetting = { path: string; parse: (raw: string) => unknown };

/**
 * Every setting's own variable: RCP_ + its path in upper snake case (`retrieve.fusion.rrfK` -> RCP_RETRIEVE_FUSION_RRF_K,
 * `limits.shedding.maxEventLoopDelayMs` -> RCP_LIMITS_SHEDDING_MAX_EVENT_LOOP_DELAY_MS), parsed by the setting's type:
 * numbers, `true`/`1`/`false`/`0`, strings, and JSON for objects (arrays of strings may also be comma-separated).
 * Where an alias (ENVIRONMENT, below) is also set, the alias wins.
 */
export const DERIVED_ENVIRONMENT: Record<string, EnvironmentSetting> = deriveEnvironment(ConfigSchema, []);

function deriveEnvironment(schema: unknown, path: string[]): Record<string, EnvironmentSetting> {
  const node = schema as { type?: string; properties?: Record<string, unknown>; items?: { type?: string } };
  if (node.type === 'object' && node.properties !== undefined && path.length < 8) {
    return Object.assign(
      {},
      ...Object.entries(node.properties).map(([key, child]) => deriveEnvironment(child, [...path, key])),
    ) as Record<string, EnvironmentSetting>;
  }
  const name = `RCP_${path.map(upperSnake).join('_')}`;
  return { [name]: { path: path.join('.'), parse: parserFor(node) } };
}

function upperSnake(key: string): string {
  return key.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase();
}

function parserFor(node: { type?: string; items?: { type?: string } }): (raw: string) => unknown {
  switch (node.type) {
    case 'integer':
    case 'number':
      return Number;
    case 'boolean':
      // Any case of true/false/1/0; anything else is left for validation to refuse (never silently false).
      return (raw) => (isTrue(raw) ? true : ['false', '0'].includes(raw.trim().toLowerCase()) ? false : raw);
    case 'string':
      return String;
    case 'array':
      return (raw) =>
        raw.trimStart().startsWith('[') || node.items?.type !== 'string' ? parseJson(raw) : splitList(raw);
    case 'object':
      return parseJson;
    default:
      return String; // unions of string literals
  }
}

const isTrue = (raw: string) => ['true', '1'].includes(raw.trim().toLowerCase());

/** A comma-separated list, items trimmed, empty ones dropped. */
const splitList = (raw: string) =>
  raw
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);

export type ConfigOverrides = Record<string, unknown>;

/** Object-valued settings from the environment are JSON; a parse failure is left to validation to report. */
function parseJson(raw: string): unknown {
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return raw;
  }
}

/**
 * Short names operators already use, for settings whose own variable (RCP_<PATH>, below) is longer. Each is parsed
 * as its setting's own variable is — one parser per type — unless it says otherwise. Where both are set, the alias
 * wins.
 */
const ALIASES: Record<string, { path: string; parse?: (raw: string) => unknown }> = {
  RCP_CORS_ORIGINS: { path: 'http.corsOrigins' },
  RCP_TRUST_PROXY: {
    path: 'http.trustProxy',
    // `true` (trust every client's header) is no longer a setting: it is left for validation to refuse.
    parse: (raw) => (isTrue(raw) ? true : splitList(raw)),
  },
  RCP_MAX_BODY_BYTES: { path: 'limits.maxBodyBytes' },
  RCP_MAX_BATCH_SIZE: { path: 'limits.maxBatchSize' },
  RCP_REQUEST_TIMEOUT_MS: { path: 'limits.requestTimeoutMs' },
  RCP_ENCODER: { path: 'models.encoder' },
  RCP_RERANKER: { path: 'models.reranker' },
  RCP_COLBERT: { path: 'models.colbert' },
  RCP_INTRA_OP_THREADS: { path: 'models.intraOpThreads' },
  RCP_EMBED_BATCH_LIMIT: { path: 'models.embedBatchLimit' },
  RCP_RERANK_MAX_CANDIDATES: { path: 'models.rerankMaxCandidates' },
  RCP_BATCH_WAIT_MS: { path: 'models.batching.maxWaitMs' },
  RCP_BATCH_MAX_TOKENS: { path: 'models.batching.maxBatchTokens' },
  RCP_BATCH_MAX_ITEMS: { path: 'models.batching.maxBatchItems' },
  RCP_QUEUE_MAX_ITEMS: { path: 'models.batching.maxQueuedItems' },
  RCP_HNSW_M: { path: 'index.m' },
  RCP_HNSW_EF_CONSTRUCTION: { path: 'index.efConstruction' },
  RCP_HNSW_EF_SEARCH: { path: 'index.efSearch' },
  RCP_MAX_DOCUMENT_BYTES: { path: 'index.maxDocumentBytes' },
  RCP_MAX_DOCUMENTS_PER_ADD: { path: 'index.maxDocumentsPerAdd' },
  RCP_RETRIEVE_MODE: { path: 'retrieve.defaultMode' },
  RCP_FUSION: { path: 'retrieve.fusion.method' },
  RCP_FUSION_ALPHA: { path: 'retrieve.fusion.alpha' },
  RCP_API_KEYS: { path: 'auth.apiKeys' },
  RCP_ALLOW_UNAUTHENTICATED: { path: 'auth.allowUnauthenticated' },
  RCP_METRICS: { path: 'metrics.path', parse: (raw) => (raw === 'off' ? '' : raw) },
  RCP_RATE_LIMIT: {
    path: 'limits.rateLimit',
    parse: (raw) => ({ reads: Number(raw), writes: Number(raw), models: Number(raw) }),
  },
};

/** The aliases, each with its parser. */
export const ENVIRONMENT: Record<string, EnvironmentSetting> = Object.fromEntries(
  Object.entries(ALIASES).map(([name, { path, parse }]) => [name, { path, parse: parse ?? parserOfPath(path) }]),
);

function parserOfPath(path: string): (raw: string) => unknown {
  const own = Object.values(DERIVED_ENVIRONMENT).find((setting) => setting.path === path);
  if (own === undefined) throw new Error(`an alias names ${path}, which is not a setting`);
  return own.parse;
}

export interface LoadOptions {
  file?: string | undefined;
  env?: NodeJS.ProcessEnv;
  /** Dotted paths to values, from command-line flags. */
  overrides?: ConfigOverrides;
}

export class ConfigError extends StartupError {
  override name = 'ConfigError';
}

export function loadConfig(options: LoadOptions = {}): Config {
  const config: Record<string, unknown> = defaultConfig();
  if (options.file !== undefined) deepMerge(config, readConfigFile(options.file));
  for (const [name, { path, parse }] of [...Object.entries(DERIVED_ENVIRONMENT), ...Object.entries(ENVIRONMENT)]) {
    const raw = (options.env ?? {})[name];
    if (raw !== undefined && raw !== '') setPath(config, path, parse(raw), name);
  }
  for (const [path, value] of Object.entries(options.overrides ?? {})) setPath(config, path, value, `--${path}`);
  return validateConfig(config);
}

const validate = new Ajv2020({
  allErrors: true,
  allowUnionTypes: true,
}).compile(ConfigSchema);

export function validateConfig(candidate: unknown): Config {
  if (validate(candidate)) return checkTrustedProxies(checkFileRoots(checkQueueAdmitsLargestRequest(candidate)));
  const problems = (validate.errors ?? []).map((e) => {
    const where = e.instancePath.split('/').slice(1).join('.') || '(root)';
    const extra = (e.params as { additionalProperty?: string }).additionalProperty;
    return extra === undefined ? `${where}: ${e.message ?? 'invalid'}` : `${where}: unknown setting '${extra}'`;
  });
  throw new ConfigError(`invalid configuration:\n  ${problems.join('\n  ')}`);
}

/** Every trusted proxy is a name the proxy matcher knows, an address, or a network of a prefix in range (1..32/128). */
function checkTrustedProxies(config: Config): Config {
  for (const proxy of config.http.trustProxy) {
    if (['loopback', 'linklocal', 'uniquelocal'].includes(proxy)) continue;
    const [address = '', prefix] = proxy.split('/');
    const family = isIP(address);
    const bits = prefix === undefined ? undefined : Number(prefix);
    if (family !== 0 && (bits === undefined || (bits >= 1 && bits <= (family === 4 ? 32 : 128)))) continue;
    throw new ConfigError(`invalid configuration:\n  http.trustProxy: '${proxy}' is not an address or a network`);
  }
  return config;
}

/**
 * The variables in `env` that look like a setting (`RCP_` and a section's name: `RCP_LIMITS_...`, `RCP_HTTP_...`)
 * but name none: ignored, so an operator should hear of them. Other `RCP_*` names (tools' own) are not settings.
 */
export function unknownEnvironment(env: NodeJS.ProcessEnv): string[] {
  const sections = Object.keys(ConfigSchema.properties).map((key) => `RCP_${upperSnake(key)}`);
  return Object.keys(env).filter(
    (name) =>
      sections.some((section) => name === section || name.startsWith(`${section}_`)) &&
      !(name in DERIVED_ENVIRONMENT) &&
      !(name in ENVIRONMENT),
  );
}

/** A queue smaller than the largest request it must accept would refuse that request forever. */
function checkQueueAdmitsLargestRequest(config: Config): Config {
  const { embedBatchLimit, rerankMaxCandidates, batching } = config.models;
  const largest = Math.max(embedBatchLimit, rerankMaxCandidates + 1);
  if (batching.maxQueuedItems < largest) {
    throw new ConfigError(
      `invalid configuration:\n  models.batching.maxQueuedItems (${batching.maxQueuedItems}) must admit the largest ` +
        `single request (embedBatchLimit or rerankMaxCandidates + 1 = ${largest})`,
    );
  }
  return config;
}

/**
 * §15.5: `file` among the fetch schemes with no roots would serve nothing, or (as once) everything the process can
 * read: refuse to start and say which setting is missing.
 */
function checkFileRoots(config: Config): Config {
  const { schemes, fileRoots } = config.content.fetch;
  if (schemes.includes('file') && fileRoots.length === 0) {
    throw new ConfigError(
      "invalid configuration:\n  content.fetch.schemes lists 'file' but content.fetch.fileRoots is empty: " +
        'list the directories file uris may read from',
    );
  }
  return config;
}

function readConfigFile(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError(`cannot read config file ${file}: ${(error as Error).message}`);
  }
  const yaml = /\.ya?ml$/i.test(file);
  try {
    const parsed = (yaml ? parseYaml(text) : JSON.parse(text)) as unknown;
    if (!isPlainObject(parsed)) throw new Error(`not a ${yaml ? 'YAML mapping' : 'JSON object'}`);
    return parsed;
  } catch (error) {
    throw new ConfigError(`config file ${file} is not valid ${yaml ? 'YAML' : 'JSON'}: ${(error as Error).message}`);
  }
}

function deepMerge(target: Record<string, unknown>, source: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(source)) {
    const existing = target[key];
    if (isPlainObject(existing) && isPlainObject(value)) deepMerge(existing, value);
    else target[key] = value;
  }
}

function setPath(target: Record<string, unknown>, path: string, value: unknown, source: string): void {
  const keys = path.split('.');
  const last = keys.pop();
  let node = target;
  for (const key of keys) {
    const next = node[key];
    if (!isPlainObject(next)) throw new ConfigError(`${source}: no such setting '${path}'`);
    node = next;
  }
  if (last === undefined) throw new ConfigError(`${source}: empty setting path`);
  node[last] = value;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
