import { ConfigSchema } from './schema.js';

/**
 * Settings from the environment (docs/configuration.md): every setting's own RCP_<PATH> variable, derived from
 * ConfigSchema, and the short aliases operators already use.
 */

export type EnvironmentSetting = { path: string; parse: (raw: string) => unknown };

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
