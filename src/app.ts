import { randomBytes } from 'node:crypto';
import type { Readable, Writable } from 'node:stream';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { Corpus } from './corpus/index.js';
import { openModels, type Models } from './models/index.js';
import { parserLimitsOf, type Config } from './config/index.js';
import { PolicyUriFetcher } from './content/index.js';
import { ContentReader } from './methods/content.js';
import { DocumentBodies } from './methods/document-bodies.js';
import { DocumentParser } from './documents/index.js';
import { embedMethod } from './methods/embed.js';
import { feedbackMethod } from './methods/feedback.js';
import { transformMethod } from './methods/transform.js';
import { embedSparseMethod } from './methods/embed-sparse.js';
import { embedMultiMethod } from './methods/embed-multi.js';
import { indexMethods } from './methods/index-write.js';
import { rerankMethod, type Reranker } from './methods/rerank.js';
import { retrieveMethod } from './methods/retrieve.js';
import type { FieldType, Snapshots, StoreSpace } from './corpus/index.js';
import { loadTables, tablesFor } from './retrieval/confidence.js';
import { OPERATORS } from './retrieval/filter.js';
import { Metrics } from './metrics.js';
import { MethodRegistry } from './protocol/registry.js';
import { Session, type SessionLimits, type SessionOptions } from './protocol/session.js';
import { lateInteractionScores } from './retrieval/late-interaction.js';
import { ApiKeys } from './transport/auth.js';
import { capConnections, serverOptions } from './transport/connections.js';
import { BodyBudget } from './transport/body.js';
import { Outbox } from './transport/outbox.js';
import { WorkerCodec } from './platform/codec/worker-codec.js';
import { Admission } from './transport/admission.js';
import { WorkGate } from './transport/work-gate.js';
import { LoadShedder } from './transport/load-shedding.js';
import { RateLimiter } from './transport/rate-limit.js';
import { RedisBucketStore } from './transport/redis-bucket-store.js';
import { HttpSessionStore, type HttpSessionConfig, type SharedSessions } from './transport/http-sessions.js';
import { Drain } from './transport/drain.js';
import { operatorRoutes, type OperatorOptions } from './transport/operator.js';
import { rcpHttp, type HttpTransportOptions } from './transport/http.js';
import { registerPreflights } from './transport/cors.js';
import type { Logger } from './protocol/logger.js';
import { serveStdio, type StdioConnection } from './transport/stdio.js';
import {
  catalogMethod,
  checkName,
  checkRoot,
  corporaAdminMethods,
  FolderShelf,
  NamedCorpora,
  StoreShelf,
  type CorpusEngine,
  type CorpusShelf,
} from './tenants/index.js';
import { DEFAULT_CORPUS } from './protocol/corpus-name.js';
import { StartupError } from './startup-error.js';

export interface AppOptions {
  /**
   * The methods a composition of its own serves beyond the models' and the corpus' (the gateway's federated methods,
   * src/gateway/): registered like the built-in ones, from what that composition reached at start.
   */
  methods?: (registry: MethodRegistry) => void;
  /** Extra registrations (tests register test-only methods here). */
  register?: (registry: MethodRegistry) => void;
  /** The logger for HTTP request logs (a pino instance); none when absent. */
  logger?: FastifyBaseLogger;
  /** Readiness of what the registered methods depend on beyond models and corpus (a gateway's engines). */
  health?: () => { ready: boolean; [detail: string]: unknown };
  /** A gateway's engines and their fail-fast state (src/gateway/fail-fast.ts), for metrics. */
  downstream?: () => readonly { engine: string; down: boolean; markedDown: number }[];
  /** Called by close(), after the servers have drained. */
  onClose?: () => Promise<void>;
  /** The configuration file the settings came from, if any: `file` content uris never serve it (§15.5). */
  configFile?: string | undefined;
  /** A named corpus served alone, as the app's one corpus (`--corpus`, docs/tenants.md; found by `findCorpus`). */
  corpus?: NamedCorpus | undefined;
}

/** A named corpus, and its identity on its shelf (docs/tenants.md). */
export interface NamedCorpus {
  readonly name: string;
  readonly id: string;
}

export interface App {
  readonly config: Config;
  readonly registry: MethodRegistry;
  readonly models: Models;
  /** The corpus (store + dense + lexical indexes); present when an encoder is configured. */
  readonly corpus: Corpus | undefined;
  /** Readiness: every configured model loaded and the corpus open (the HTTP transport serves it at GET /readyz). */
  health(): { ready: boolean; [detail: string]: unknown };
  /** A new RCP session over this app's methods (one per stdio connection or HTTP session). */
  readonly createSession: (options?: SessionOptions) => Session;
  /** Serves one stdio connection (§5.1) over the given streams, with this app's limits. */
  serveStdio(streams: { input: Readable; output: Writable; log: Logger }): StdioConnection;
  /** A ready Fastify instance serving the RCP HTTP transport; the caller listens. */
  buildHttp(): Promise<FastifyInstance>;
  /** The operator listener, when `http.operatorPort` is set (see transport/operator.ts). */
  buildOperatorHttp(): Promise<FastifyInstance>;
  close(): Promise<void>;
}

/** No per-request log lines from Fastify: the request log is the session's own (see `sessionLimits`). */
const QUIET_REQUESTS = new LogController({ disableRequestLogging: true });

/**
 * createApp failed after the models began loading. `closed` settles once they are shut down: the process must wait
 * for it before exiting (a model worker cut off mid-load aborts the process instead of exiting with its code).
 */
export class AppStartError extends Error {
  override name = 'AppStartError';

  constructor(
    override readonly cause: Error,
    readonly closed: Promise<void>,
  ) {
    super(cause.message);
  }
}

/** §15.5: `file` content uris never reach the server's own data or settings, whatever roots the operator lists. */
function contentFetcher(config: Config, configFile: string | undefined): PolicyUriFetcher {
  const protectedPaths = [{ path: config.dataDir, what: "the server's data directory" }];
  if (config.corpora.root !== '') protectedPaths.push({ path: config.corpora.root, what: "the server's corpora" });
  if (configFile !== undefined) protectedPaths.push({ path: configFile, what: "the server's configuration file" });
  return new PolicyUriFetcher(config.content.fetch, protectedPaths);
}

/**
 * Content blocks' readers: texts for every method, and index/add's document files, parsed in parser processes of
 * this process's, started when first needed (docs/documents.md).
 */
function contentReaders(settings: Config, configFile: string | undefined) {
  // The fetcher protects the whole root of the named corpora, also when the app serves one of them alone.
  const fetcher = contentFetcher(settings, configFile);
  const parser = new DocumentParser(parserLimitsOf(settings));
  return { content: new ContentReader(fetcher), bodies: new DocumentBodies(fetcher, parser) };
}

function metricsOf(
  config: Config,
  models: Models,
  corpus: Corpus | undefined,
  bodies: DocumentBodies,
  downstream: AppOptions['downstream'],
): Metrics {
  const metrics = new Metrics(config.server.version, models, corpus);
  metrics.documents(bodies.parser);
  if (downstream !== undefined) metrics.downstream(downstream);
  return metrics;
}

/**
 * The composition root (docs/architecture.md §2): builds the method registry from configuration and hands out sessions
 * and the HTTP server. It listens on nothing itself: main.ts chooses a transport, tests build this.
 */
export function createApp(settings: Config, options: AppOptions = {}): App {
  const readers = contentReaders(settings, options.configFile);
  const { config, tenancy, shelf } = servedCorpus(settings, options.corpus);
  const logger = options.logger ?? pino({ level: 'silent' });
  const models = openModels(config.models, logger);
  let corpus: Corpus | undefined;
  try {
    corpus = models.encoder === undefined ? undefined : openCorpus(config, models, logger, tenancy);
  } catch (error) {
    throw new AppStartError(error as Error, models.close());
  }
  const metrics = metricsOf(config, models, corpus, readers.bodies, options.downstream);
  const keys = new ApiKeys(config.auth.apiKeys);
  const catalog = catalogOf(config, keys, shelf);
  const served: Served = { config, models, ...readers, metrics, logger, shelf, catalog };
  const registry = corpusRegistry(served, corpus);
  const health = healthOf(models, corpus, options.health);
  options.methods?.(registry);
  options.register?.(registry);
  const shedder = new LoadShedder(config.limits.shedding);
  // Loading models and the corpus lags the loop; that is start-up, not client overload (§15.5).
  void shedder.ownWork(Promise.all([models.loaded, corpus?.ready]));
  const admission = openAdmission(config, shedder, logger, metrics);
  const limits = sessionLimits(config, logger, metrics);
  const createSession = (sessionOptions: SessionOptions = {}): Session =>
    new Session(registry, config.server, limits, sessionOptions);
  const corpora = namedCorpora(served);
  // Creating and dropping corpora through the server: the admin scope's vendor methods (docs/tenants.md).
  if (corpora !== undefined) corporaAdminMethods(shelf!, corpora, mayUseOf(keys))(registry);
  // Large frames are parsed and serialised in a worker thread (docs/architecture.md §10).
  const codec = new WorkerCodec();
  const shared = corpus?.replica?.sessions;
  const spentShare = writesSpentShare(config, models, corpus);
  const http = new HttpServers({
    config,
    logger,
    createSession,
    codec,
    admission,
    health,
    metrics,
    shared,
    spentShare,
    keys,
    corpora,
  });
  return {
    config,
    registry,
    models,
    corpus,
    health,
    createSession,
    serveStdio: (streams) =>
      serveStdio({
        ...streams,
        createSession,
        maxLineBytes: config.limits.maxBodyBytes,
        maxFrameValues: config.limits.maxFrameValues,
        maxResponseBytes: config.limits.maxResponseBytes,
        codec,
        maxInFlight: config.limits.maxInFlightPerConnection,
        admission,
      }),
    buildHttp: () => shedder.ownWork(http.build()),
    buildOperatorHttp: () => http.buildOperator(),
    async close() {
      await http.drain();
      await corpora?.close();
      await shelf?.close();
      await corpus?.close();
      await codec.close();
      readers.bodies.close();
      await models.close();
      await admission.close();
      await options.onClose?.();
    },
  };
}

/** What the methods of every corpus of the process share: models, the content reader, metrics, the log. */
interface Served {
  readonly config: Config;
  readonly models: Models;
  readonly content: ContentReader;
  /** index/add's document bodies given as files (docs/documents.md). */
  readonly bodies: DocumentBodies;
  readonly metrics: Metrics;
  readonly logger: FastifyBaseLogger;
  /** Where the named corpora are kept, when `corpora.root` is set (docs/tenants.md). */
  readonly shelf: CorpusShelf | undefined;
  /** `catalog/list` over the named corpora, when `corpora.root` is set (docs/tenants.md). */
  readonly catalog: ((registry: MethodRegistry) => void) | undefined;
}

/**
 * The methods one corpus is served by (the default one, or a named one, docs/tenants.md): the models' methods, the
 * corpus's, and the catalog of corpora. `config` is the corpus's own (its dataDir).
 */
function corpusRegistry(served: Served, corpus: Corpus | undefined, config: Config = served.config): MethodRegistry {
  const registry = new MethodRegistry();
  const rerankers = registerModelMethods(registry, config, served.models, served.content);
  if (corpus !== undefined) registerCorpusMethods(registry, config, corpus, { ...served, rerankers });
  // §17.1: notifications/log to clients that advertise `log` (stdio, and SSE answers over HTTP).
  registry.advertise('log', { levels: ['debug', 'info', 'notice', 'warning', 'error'] });
  served.catalog?.(registry);
  return registry;
}

/** The methods served from the corpus: index writes, retrieve, query/transform, feedback, embed/sparse. */
function registerCorpusMethods(
  registry: MethodRegistry,
  config: Config,
  corpus: Corpus,
  { models, rerankers, content, bodies, metrics, logger }: Served & { rerankers: Reranker[] },
): void {
  const limits = {
    writable: config.index.writable,
    maxDocuments: config.index.maxDocumentsPerAdd,
    maxChunks: config.index.maxChunksPerAdd,
  };
  const [add, remove] = indexMethods(corpus, limits, bodies);
  registry.register(...add).register(...remove);
  registerRetrieve(registry, config, models, corpus, rerankers, content);
  // §7.8 without a language model: only the methods that run here are advertised.
  registry.register(...transformMethod(corpus, config.limits.maxQueryChars));
  // §7.16: advisory signals, counted in metrics; flags go to the operator's log too.
  registry.register(
    ...feedbackMethod(corpus, {
      maxSignals: config.index.maxDocumentsPerAdd,
      maxQueryChars: config.limits.maxQueryChars,
      onSignal: metrics.feedbackSignal,
      onFlag: (flag) => {
        metrics.feedbackFlag(flag.kind);
        logger.warn(flag, 'feedback flags a hit for review');
      },
    }),
  );
  // §7.4 from the lexical index: BM25 term weights, named as such (not SPLADE).
  registry.register(
    ...embedSparseMethod(corpus, {
      batchLimit: config.models.embedBatchLimit,
      content,
      bm25: config.index.bm25,
      maxTextBytes: config.index.maxDocumentBytes,
    }),
  );
}

type Health = { ready: boolean; [detail: string]: unknown };

/** Readiness: the models, the corpus, and whatever else the caller's methods depend on (a gateway's engines). */
function healthOf(models: Models, corpus: Corpus | undefined, extra?: () => Health): () => Health {
  const own = (): Health => {
    const state = models.health();
    if (corpus === undefined) return state;
    const corpusHealth = corpus.health();
    return { ready: state.ready && corpusHealth.ready, models: { ...state.models, corpus: corpusHealth } };
  };
  return () => {
    const mine = own();
    const theirs = extra?.();
    return theirs === undefined ? mine : { ...mine, ...theirs, ready: mine.ready && theirs.ready };
  };
}

/** What every session is held to, and what it reports: batch and answer limits, deadlines, metrics and logs. */
function sessionLimits(config: Config, logger: FastifyBaseLogger, metrics: Metrics): SessionLimits {
  return {
    maxBatchSize: config.limits.maxBatchSize,
    maxResponseBytes: config.limits.maxResponseBytes,
    requestTimeoutMs: config.limits.requestTimeoutMs,
    onInternalError: (error: unknown, method: string) => logger.error({ err: error, method }, 'method failed'),
    onAnswered: (method: string, code: number, ms: number, params: Record<string, unknown>) => {
      metrics.observe(method, code, ms);
      // §15.6: the request log names the method and outcome; bodies only when the operator turned them on. Its
      // object is built only when the line is written (not at the default level: a ping costs little more than it).
      if (logger.level !== 'debug' && logger.level !== 'trace') return;
      logger.debug(
        { method, code, ms: Math.round(ms * 10) / 10, ...(config.log.bodies ? { params } : {}) },
        'answered',
      );
    },
    onStage: metrics.observeStage,
  };
}

/** What the HTTP listeners are built from. */
interface HttpParts {
  readonly config: Config;
  readonly logger: FastifyBaseLogger;
  readonly createSession: (options?: SessionOptions) => Session;
  readonly codec: WorkerCodec;
  readonly admission: Admission;
  readonly health: () => Health;
  readonly metrics: Metrics;
  /** Replicas over one store of record share their HTTP sessions there (§5.2): no load balancer stickiness needed. */
  readonly shared: SharedSessions | undefined;
  /** A write refused from its path while its caller's share of the model queue is spent (transport/http.ts). */
  readonly spentShare: HttpTransportOptions['spentShare'];
  readonly keys: ApiKeys;
  /** The named corpora served beside the default one (docs/tenants.md). */
  readonly corpora: NamedCorpora | undefined;
}

/** A listener, and how to close it gracefully. */
interface TrackedServer {
  readonly server: FastifyInstance;
  readonly drain: Drain;
}

/** The HTTP listeners this app has built, and how to drain them all on close. */
class HttpServers {
  readonly #servers: TrackedServer[] = [];

  constructor(private readonly parts: HttpParts) {}

  /** The RCP transport (§5.2), with `/healthz`, `/readyz` and the metrics unless the operator listener has them. */
  async build(): Promise<FastifyInstance> {
    const { config, logger, createSession, codec, admission } = this.parts;
    // Bodies being received, all connections together: those of requests still waiting their turn included.
    const bodies = new BodyBudget(config.limits.maxBufferedBodyBytes);
    const outbox = new Outbox(config.limits.maxUnsentBytes);
    this.parts.metrics.transfers(bodies, outbox);
    const sessions = new HttpSessionStore(createSession, httpSessions(config), this.parts.shared);
    const auth = this.parts.keys;
    const rcp = rcpHttp({
      corpora: this.parts.corpora,
      base: config.http.base,
      sessions,
      bodyLimit: config.limits.maxBodyBytes,
      maxFrameValues: config.limits.maxFrameValues,
      bodies,
      maxResponseBytes: config.limits.maxResponseBytes,
      codec,
      outbox,
      corsOrigins: config.http.corsOrigins,
      trustProxy: config.http.trustProxy,
      auth,
      admission,
      spentShare: this.parts.spentShare,
      log: logger,
    });
    // The RCP routes are served beside Fastify (transport/http.ts); Fastify serves the rest of the listener.
    const app: FastifyInstance = Fastify({
      loggerInstance: logger,
      // The request log is the session's `answered` line (debug, §15.6): Fastify's own two lines per request, written
      // synchronously at info, cost more than a ping and stalled the loop under a burst of them.
      logController: QUIET_REQUESTS,
      ...serverOptions(
        config.http,
        config.limits.requestTimeoutMs,
        { budget: bodies, maxBodyBytes: config.limits.maxBodyBytes },
        rcp,
      ),
    });
    capConnections(app.server, config.http);
    outbox.track(app.server);
    // With an operator listener, readiness and metrics are served there only.
    operatorRoutes(app, config.http.operatorPort === 0 ? this.#operatorOptions(auth) : { metricsPath: '' });
    await registerPreflights(app, config.http.corsOrigins);
    await app.ready();
    this.#track(app);
    return app;
  }

  /** The operator listener: `/healthz`, `/readyz` and the metrics, without keys (see transport/operator.ts). */
  async buildOperator(): Promise<FastifyInstance> {
    const { config, logger } = this.parts;
    const app: FastifyInstance = Fastify({
      loggerInstance: logger,
      // The request log is the session's `answered` line (debug, §15.6): Fastify's own two lines per request, written
      // synchronously at info, cost more than a ping and stalled the loop under a burst of them.
      logController: QUIET_REQUESTS,
      ...serverOptions(config.http, config.limits.requestTimeoutMs),
    });
    operatorRoutes(app, this.#operatorOptions());
    await app.ready();
    this.#track(app);
    return app;
  }

  /** Closes every listener built, each after its answers in progress have gone out (see transport/drain.ts). */
  async drain(): Promise<void> {
    const deadlineMs = this.parts.config.limits.requestTimeoutMs;
    await Promise.all(
      this.#servers.splice(0).map(({ server, drain }) => drain.close(() => server.close(), deadlineMs)),
    );
  }

  #operatorOptions(auth?: ApiKeys): OperatorOptions {
    const { config, health, metrics } = this.parts;
    if (config.metrics.path !== '') metrics.enableProcessMetrics();
    return { health, metrics: metrics.registry, metricsPath: config.metrics.path, auth };
  }

  /** Follows the listener's connections and answers from before it listens, for its graceful close. */
  #track(app: FastifyInstance): void {
    this.#servers.push({ server: app, drain: new Drain(app.server, this.parts.config.http.headersTimeoutMs) });
  }
}

/** How many HTTP sessions a corpus keeps, and for how long (§5.2). */
function httpSessions(config: Config): HttpSessionConfig {
  return {
    idleMs: config.http.sessionIdleMs,
    maxSessions: config.http.maxSessions,
    maxSessionsPerCaller: config.http.maxSessionsPerCaller,
  };
}

/**
 * `catalog/list` over the corpora (docs/tenants.md), registered in each corpus's methods when `corpora.root` is set:
 * a key's caller is shown the corpora its key names (§15.6); a caller of no key (stdio, HTTP without keys), all.
 */
function catalogOf(
  config: Config,
  keys: ApiKeys,
  shelf: CorpusShelf | undefined,
): ((registry: MethodRegistry) => void) | undefined {
  if (shelf === undefined) return undefined;
  return (registry) => {
    const method = catalogMethod({
      shelf,
      base: config.http.base,
      server: { name: config.server.name, version: config.server.version },
      capabilities: () => {
        const capabilities = registry.capabilities();
        delete capabilities.catalog;
        delete capabilities['x-rcp-server'];
        return capabilities;
      },
      mayUse: mayUseOf(keys),
    });
    // §15.6: no count of the corpora here; a caller learns only of those it may use, from catalog/list.
    registry.register(method, {});
  };
}

/** Which corpora the caller `callerId` may use: its key's (§15.6); a caller of no key (stdio, HTTP without keys), all. */
function mayUseOf(keys: ApiKeys): (callerId: string) => (name: string) => boolean {
  return (callerId) => {
    const caller = keys.callerOf(callerId);
    return caller === undefined ? () => true : (name) => caller.mayUse(name);
  };
}

/**
 * The settings of named corpus `named` where its shelf places it (docs/tenants.md): the process's, with the corpus's
 * place as its data dir and its cursors signed under `secret` for it alone (a cursor of one corpus never verifies in
 * another).
 */
function namedCorpusConfig(config: Config, named: NamedCorpus, dataDir: string, secret: string): Config {
  // The corpus's identity, not only its name: one dropped and made again is another corpus.
  const cursorSecret = secret === '' ? '' : `${secret}\0corpus:${named.name}:${named.id}`;
  return { ...config, dataDir, retrieve: { ...config.retrieve, cursorSecret } };
}

/** What a named corpus's store adds to its settings: its quota of documents, and its space in a store of record. */
interface Tenancy {
  readonly maxDocuments: number;
  readonly maxBytes?: number;
  readonly space?: StoreSpace | undefined;
}

/** A named corpus's quotas (docs/tenants.md): documents, and bytes of text. */
const quotasOf = (config: Config) => ({ maxDocuments: config.corpora.maxDocuments, maxBytes: config.corpora.maxBytes });

/** Where the named corpora of `config` are kept: a store's catalog when it has one, else the folders of the root. */
function shelfOf(config: Config): CorpusShelf | undefined {
  const { root } = config.corpora;
  if (root === '') return undefined;
  checkRoot(root);
  return config.store.url === '' ? new FolderShelf(root) : new StoreShelf(config.store.url, root);
}

/**
 * The settings the app serves, its corpus's tenancy and the shelf of the named corpora it serves: the process's, or
 * those of the one named corpus it serves alone (`--corpus`, over stdio or MCP: then no other named corpus is served,
 * and the corpus keeps its quota).
 */
function servedCorpus(
  settings: Config,
  corpus: NamedCorpus | undefined,
): { config: Config; tenancy: Tenancy; shelf: CorpusShelf | undefined } {
  const shelf = shelfOf(settings);
  if (corpus === undefined) return { config: settings, tenancy: { maxDocuments: 0 }, shelf };
  const alone = (config: Config): Config => ({ ...config, corpora: { ...config.corpora, root: '' } });
  if (corpus.name === DEFAULT_CORPUS)
    return { config: alone(settings), tenancy: { maxDocuments: 0 }, shelf: undefined };
  // The shelf only places it (a store's shelf opens no connection for that).
  const place = shelf!.placeOf(corpus.name, corpus.id);
  return {
    config: alone(namedCorpusConfig(settings, corpus, place.dataDir, settings.retrieve.cursorSecret)),
    tenancy: { ...quotasOf(settings), space: place.space },
    shelf: undefined,
  };
}

/**
 * `--corpus NAME` (docs/tenants.md): named corpus NAME on the shelf of `corpora.root` (or of the store of record),
 * found before the app is made; `default` is the process's own (`dataDir`).
 */
export async function findCorpus(config: Config, name: string): Promise<NamedCorpus> {
  if (config.corpora.root === '') {
    throw new StartupError('--corpus NAME needs the root of the named corpora: --corpora ROOT');
  }
  if (name === DEFAULT_CORPUS) return { name, id: '' };
  checkName(name); // a malformed name is refused as such, before it is looked for
  const shelf = shelfOf(config)!;
  try {
    const id = await shelf.find(name);
    if (id === undefined) throw new StartupError(`no corpus '${name}' (rcp-server corpus create)`);
    return { name, id };
  } finally {
    await shelf.close();
  }
}

/**
 * The named corpora of the shelf (docs/tenants.md), each opened on demand as an engine of its own: its corpus where
 * its shelf places it, its methods over the shared models, its HTTP sessions (shared by the replicas of a store of
 * record). Cursors are signed for one corpus alone.
 */
function namedCorpora(served: Served): NamedCorpora | undefined {
  const { config, logger, shelf } = served;
  if (shelf === undefined || served.models.encoder === undefined) return undefined;
  // One key for the process unless the operator set one: a corpus closed while idle keeps its cursors when reopened.
  const secret = config.retrieve.cursorSecret === '' ? randomBytes(32).toString('hex') : config.retrieve.cursorSecret;
  const open = (name: string, id: string): CorpusEngine => {
    const place = shelf.placeOf(name, id);
    const own = namedCorpusConfig(config, { name, id }, place.dataDir, secret);
    const log = logger.child({ corpus: name });
    const tenancy = { ...quotasOf(config), space: place.space };
    const corpus = openCorpus(own, served.models, log, tenancy) as Corpus;
    const registry = corpusRegistry({ ...served, logger: log }, corpus, own);
    // The process's limits, its log lines under the corpus's name, and each answer counted for the corpus.
    const limits = sessionLimits(config, log, served.metrics);
    const counting: SessionLimits = { ...limits, onAnswered: countedIn(limits, name) };
    const create = (options: SessionOptions = {}) => new Session(registry, config.server, counting, options);
    return {
      sessions: new HttpSessionStore(create, httpSessions(config), corpus.replica?.sessions),
      opened: corpus.ready.then(() => corpus.health().reason),
      damaged: corpus.damaged,
      close: () => corpus.close(),
    };
  };
  shelf.watch();
  // What this process kept of corpora dropped while it was away (a store's: its replicas of them); none is open yet.
  shelf.sweep().then(
    (stale) => stale.length > 0 && logger.info({ removed: stale }, 'replicas of dropped corpora removed'),
    (error: unknown) => logger.warn({ err: error }, 'replicas of dropped corpora not looked for'),
  );
  const { maxOpen, idleSeconds } = config.corpora;
  const openWaitMs = config.limits.requestTimeoutMs;
  const corpora = new NamedCorpora({ shelf, maxOpen, idleMs: idleSeconds * 1000, openWaitMs, open, log: logger });
  const counted = served.metrics.corpora(() => corpora.openCount);
  const countedIn =
    (limits: SessionLimits, name: string): NonNullable<SessionLimits['onAnswered']> =>
    (method, code, ms, params) => {
      limits.onAnswered?.(method, code, ms, params);
      counted(name);
    };
  return corpora;
}

/**
 * §15.5: `index/add` asks the model queue before it chunks (corpus/prepare.ts); over HTTP it asks before its body is
 * read as well, so a caller flooding writes past its share is refused without a parse and a validation per body.
 */
function writesSpentShare(
  config: Config,
  models: Models,
  corpus: Corpus | undefined,
): HttpTransportOptions['spentShare'] {
  const encoder = models.encoder;
  if (corpus === undefined || !config.index.writable || encoder?.queueRefusal === undefined) return undefined;
  return (caller, method) => (method === 'index/add' ? encoder.queueRefusal?.(caller) : undefined);
}

/** Load shedding and per-caller rate limits, with buckets in Redis when `redis.url` is set (shared by replicas). */
function openAdmission(config: Config, shedder: LoadShedder, logger: Logger, metrics: Metrics): Admission {
  const { rateLimit } = config.limits;
  const store =
    config.redis.url === ''
      ? undefined
      : new RedisBucketStore({
          url: config.redis.url,
          prefix: config.redis.prefix,
          timeoutMs: config.redis.timeoutMs,
          log: logger,
          onFallback: metrics.rateLimitStoreFallback,
          onLocal: metrics.rateLimitStoreLocal,
        });
  const limiter = new RateLimiter(rateLimit, store);
  return new Admission(shedder, limiter, metrics.refused, new WorkGate(config.limits.maxWorkInFlight));
}

/**
 * `embed` when an encoder is configured, `embed/multi` when it exposes token vectors; `rerank` when something can
 * really rerank (§7.6: methods name what runs).
 */
function registerModelMethods(
  registry: MethodRegistry,
  config: Config,
  models: Models,
  content: ContentReader,
): Reranker[] {
  const { encoder, crossEncoder } = models;
  if (encoder !== undefined)
    registry.register(...embedMethod(encoder, { batchLimit: config.models.embedBatchLimit, content }));
  const embedTokens = encoder?.embedTokens?.bind(encoder);
  if (encoder !== undefined && embedTokens !== undefined) {
    // §7.5 advertised where the encoder exposes its token vectors (docs/architecture.md §4.4).
    const limits = {
      batchLimit: config.models.embedBatchLimit,
      maxResponseBytes: config.limits.maxResponseBytes,
      content,
    };
    const tokenCounter = () => encoder.tokenCounter();
    registry.register(...embedMultiMethod({ info: encoder.info, embedTokens, tokenCounter }, limits));
  }
  const rerankers: Reranker[] = [];
  if (crossEncoder !== undefined) {
    rerankers.push({
      method: 'cross-encoder',
      model: crossEncoder.info.identity,
      score: (query, passages, signal, caller, progress) =>
        crossEncoder.score(query, passages, signal, caller, progress),
    });
  }
  const tokens = encoder?.embedTokens?.bind(encoder);
  const kernel = models.lateInteraction;
  if (kernel !== undefined && tokens !== undefined && encoder !== undefined) {
    rerankers.push({
      method: 'colbert',
      model: encoder.info.identity,
      score: (query, passages, signal, caller, progress) =>
        lateInteractionScores(tokens, kernel, query, passages, signal, caller, progress),
    });
  }
  if (rerankers.length > 0) {
    registry.register(
      ...rerankMethod(rerankers, {
        maxCandidates: config.models.rerankMaxCandidates,
        maxQueryChars: config.limits.maxQueryChars,
        content,
      }),
    );
  }
  return rerankers;
}

/**
 * Bounds of the §7.7.3 sessions replicas share (the in-process ones bound the same counts, and bytes): ids per
 * session, and per caller both sessions and ids (about 190 bytes a stored id: 200,000 ids are some 40 MB of the
 * store's disk per caller; one caller's 12,000 sessions of 200 hits once grew it 372 MB in a minute).
 */
const SHARED_SEEN = { maxHits: 10_000, maxSessionsPerCaller: 10_000, maxHitsPerCaller: 200_000 };

/** `retrieve` over the corpus, with the feature capabilities it honours (§6, §8, §9, §10, §7.7.3). */
function registerRetrieve(
  registry: MethodRegistry,
  config: Config,
  models: Models,
  corpus: Corpus,
  rerankers: Reranker[],
  content: ContentReader,
): void {
  if (models.encoder === undefined) return;
  const fields = config.index.fields as Record<string, FieldType>;
  const { maxQueryChars, maxFilterDepth, maxFilterNodes } = config.limits;
  registry.register(
    ...retrieveMethod(corpus, models.encoder, rerankers, {
      ...config.retrieve,
      rerankMaxCandidates: config.models.rerankMaxCandidates,
      fields,
      maxQueryChars,
      space: config.index.space,
      filterLimits: { maxDepth: maxFilterDepth, maxNodes: maxFilterNodes },
      maxResponseBytes: config.limits.maxResponseBytes,
      maxAnswerBytesInFlight: config.limits.maxUnsentBytes,
      content,
      // §7.7.3 replicas over one store of record remember retrieve sessions there, for every replica to read.
      seen: corpus.replica?.seen({ ttlSeconds: config.retrieve.sessionTtlSeconds, ...SHARED_SEEN }),
      // §6.1: cosine ≥ -1 bounds every score this pipeline makes (BM25 ≥ 0, fusions ≥ 0, colbert MaxSim ≥ -1,
      // recency only shrinks); inner products and cross-encoder logits have no floor, so then none is claimed.
      scoreFloor:
        config.index.space === 'cosine' && !rerankers.some((r) => r.method === 'cross-encoder') ? -1 : undefined,
      snapshots: config.index.snapshots.versions > 0,
      // §7.7.2 `confidence` from the tables fitted on this server's encoder and scoring, one per pipeline.
      calibrations: tablesFor(loadTables(config.retrieve.confidenceTable), {
        encoder: models.encoder.info.identity,
        space: config.index.space,
        bm25: config.index.bm25,
      }),
    }),
  );
  registry
    .advertise('filter', { fields: { ...fields }, operators: [...OPERATORS] })
    .advertise('citations', {})
    .advertise('pagination', {})
    .advertise('streaming', {})
    .advertise('session', { dedup: true, ttlSeconds: config.retrieve.sessionTtlSeconds });
}

/** §7.7.1 the window of versions kept (`index.snapshots`); absent when off. */
function snapshotsOf(config: Config): Snapshots | undefined {
  const { versions, maxAgeSeconds, maxChunks, maxBytes } = config.index.snapshots;
  return versions === 0 ? undefined : { versions, maxAgeMs: maxAgeSeconds * 1000, maxChunks, maxBytes };
}

/** The corpus `config` names; `tenancy`, a named corpus's quota and space in a store of record (docs/tenants.md). */
function openCorpus(
  config: Config,
  models: Models,
  logger: FastifyBaseLogger,
  tenancy: Tenancy = { maxDocuments: 0 },
): Corpus | undefined {
  const encoder = models.encoder;
  if (encoder === undefined) return undefined;
  const { space, m, efConstruction, efSearch, saveIntervalMs, followMs, maxDocumentBytes, fields, bm25 } = config.index;
  const settings = {
    dir: config.dataDir,
    space,
    m,
    efConstruction,
    efSearch,
    saveIntervalMs,
    followMs,
    maxDocumentBytes,
    metadata: { maxBytes: config.index.maxMetadataBytes, maxDepth: config.index.maxMetadataDepth },
    fields,
    bm25,
    writable: config.index.writable,
    store: config.store.url === '' ? undefined : { ...config.store, space: tenancy.space },
    chunkCacheBytes: config.index.chunkCacheBytes,
    snapshots: snapshotsOf(config),
    maxDocuments: tenancy.maxDocuments,
    maxBytes: tenancy.maxBytes,
  };
  return new Corpus(settings, encoder, logger);
}
