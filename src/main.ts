import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino, type Logger } from 'pino';
import type { FastifyInstance } from 'fastify';
import { AppStartError, createApp, type App } from './app.js';
import type { EngineSpec } from './gateway/engine.js';
import { readRegistry } from './gateway/engine-registry.js';
import { createGateway } from './gateway/gateway.js';
import { serveMcp } from './transport/mcp.js';
import { fetchModel, readCatalog } from './backend/model-fetch.js';
import { DEFAULT_ENCODER, modelDir, prepareDefaultModel } from './backend/models.js';
import { buildDefaultModel } from './backend/onnx/default-model.js';
import {
  parseCommandLine,
  type EvalCommand,
  type GatewayCommand,
  type McpCommand,
  type IngestCommand,
  type ModelsCommand,
  type ServeCommand,
} from './cli.js';
import { evaluate, writeReport } from './eval.js';
import { StartupError } from './startup-error.js';
import { loadConfig, unknownEnvironment, type Config, type ConfigOverrides } from './config.js';
import { ingest } from './ingest/ingest.js';

/**
 * Process entry: CLI, logger to stderr, signals, transport choice. On stdio, stdout carries protocol frames
 * only (§5.1), so every log line goes to stderr.
 */
export async function main(argv: readonly string[]): Promise<number> {
  try {
    return await dispatch(parseCommandLine(argv));
  } catch (error) {
    return reported(error);
  }
}

/** A StartupError's line on stderr and its exit code; anything else is a defect, thrown on (a stack, exit 1). */
function reported(error: unknown): number {
  if (!(error instanceof StartupError)) throw error;
  process.stderr.write(`rcp-server: ${error.message}\n`);
  return error.exitCode;
}

async function dispatch(command: ReturnType<typeof parseCommandLine>): Promise<number> {
  if (command.command === 'help') {
    process.stderr.write(command.text);
    return 0;
  }
  if (command.command === 'models') return models(command);
  if (command.command === 'ingest') return ingestCommand(command);
  if (command.command === 'eval') return evalCommand(command);
  if (command.command === 'config') {
    const config = loadOrReport(command.configFile, {});
    if (config === undefined) return 2;
    process.stdout.write(`${JSON.stringify(redact(config), null, 2)}\n`);
    return 0;
  }
  if (command.command === 'gateway') return gatewayCommand(command);
  if (command.command === 'mcp') return mcpCommand(command);
  return serve(command);
}

/** `rcp-server ingest`: the app's own corpus and encoder, so documents take exactly the index/add path. */
async function ingestCommand(command: IngestCommand): Promise<number> {
  const opened = await openQuietApp(command.configFile, command.overrides);
  if (opened === undefined) return 2;
  const { config, app } = opened;
  if (app.corpus === undefined) {
    process.stderr.write('rcp-server: ingest needs an encoder (models.encoder is none)\n');
    return 2;
  }
  await app.corpus.ready;
  if (app.corpus.fatal !== undefined) {
    await app.close();
    return reportDamage(app.corpus.fatal);
  }
  try {
    const summary = await ingest(
      app.corpus,
      command.paths,
      {
        chunk: command.chunk,
        contextual: command.contextual,
        batchSize: 64,
        limits: { maxDocumentBytes: config.index.maxDocumentBytes, maxMetadataBytes: config.index.maxMetadataBytes },
      },
      process.stderr,
    );
    const rate = summary.added / Math.max(summary.seconds, 1e-3);
    process.stdout.write(
      `ingested ${summary.added} documents (${summary.chunks} chunks) into ${config.dataDir} in ${summary.seconds.toFixed(1)} s ` +
        `(${rate.toFixed(1)} docs/s); ${summary.unchanged} unchanged, ${summary.rejectedCount} rejected\n`,
    );
    for (const { origin, reason } of summary.rejected) process.stdout.write(`  rejected ${origin}: ${reason}\n`);
    const unlisted = summary.rejectedCount - summary.rejected.length;
    if (unlisted > 0)
      process.stdout.write(`  … and ${unlisted} more rejected (only the first ${summary.rejected.length} listed)\n`);
    return summary.rejectedCount === 0 ? 0 : 1;
  } catch (error) {
    return reported(error);
  } finally {
    await app.close();
  }
}

/** `rcp-server models build|fetch`: prepares model directories; progress and failures go to stderr. */
async function models(command: ModelsCommand): Promise<number> {
  const settings = loadConfig({ env: process.env }).models;
  const say = (line: string) => process.stderr.write(`rcp-server: ${line}\n`);
  if (command.action === 'build') {
    const target = command.dir ?? modelDir(settings, DEFAULT_ENCODER);
    const started = Date.now();
    const { built } = await buildDefaultModel(target);
    say(built ? `built ${target} in ${Date.now() - started} ms` : `${target} is up to date`);
    return 0;
  }
  const catalog = await readCatalog(fileURLToPath(new URL('../models/catalog.json', import.meta.url)));
  for (const name of command.names) {
    const target = join(command.dir ?? settings.dir, name);
    try {
      const manifest = await fetchModel(catalog, name, target, {
        hub: command.hub,
        unpinned: command.unpinned,
        log: say,
      });
      say(`fetched ${name} into ${target} (${manifest.identity})`);
    } catch (error) {
      return reported(error);
    }
  }
  return 0;
}

/** `rcp-server eval`: judged queries through retrieve on an in-process session of the configured server. */
async function evalCommand(command: EvalCommand): Promise<number> {
  const opened = await openQuietApp(command.configFile, command.overrides);
  if (opened === undefined) return 2;
  const { app } = opened;
  try {
    await app.corpus?.ready;
    const report = await evaluate(app, command.queries, command.qrels, command.params);
    process.stdout.write(
      `${report.queries} queries  nDCG@10 ${report.ndcg10.toFixed(4)}  Recall@100 ${report.recall100.toFixed(4)}  ` +
        `MRR@10 ${report.mrr10.toFixed(4)}  (p50 ${report.latencyMsP50.toFixed(1)} ms)  ${JSON.stringify(report.params)}\n`,
    );
    if (command.report !== undefined) await writeReport(command.report, report);
    return 0;
  } catch (error) {
    return reported(error);
  } finally {
    await app.close();
  }
}

/** The app for a one-shot command (ingest, eval): warnings only on stderr; undefined after printing why not. */
async function openQuietApp(
  file: string | undefined,
  overrides: ConfigOverrides,
): Promise<{ config: Config; app: App } | undefined> {
  const config = loadOrReport(file, overrides);
  if (config === undefined) return undefined;
  const log = loggerOrReport(config, 'warn');
  if (log === undefined) return undefined;
  await prepareDefaultModel(config.models, log);
  const app = await createOrReport(config, log, file);
  return app === undefined ? undefined : { config, app };
}

/** The configuration with secrets hidden: plain API keys and a Redis password become "***" (a sha256 is no secret). */
function redact(config: Config): Config {
  return {
    ...config,
    auth: {
      ...config.auth,
      apiKeys: config.auth.apiKeys.map((key) => (key.key === undefined ? key : { ...key, key: '***' })),
    },
    redis: { ...config.redis, url: config.redis.url.replace(/\/\/([^@/]*):[^@/]*@/, '//$1:***@') },
  };
}

/**
 * JSON log lines on stderr (stdout is protocol-only on stdio, §5.1), with the configured redaction. Written
 * synchronously: the process exits right after its last answer, and an asynchronous write still queued then is lost
 * (seen in the request-log test: the last request's line missing). Undefined after reporting a malformed redact
 * path.
 */
function loggerOrReport(config: Config, level: string = config.log.level): Logger | undefined {
  try {
    return pino(
      { level, base: { service: config.server.name }, redact: config.log.redact },
      pino.destination({ dest: 2, sync: true }),
    );
  } catch (error) {
    // pino refuses a malformed redact path at construction: a configuration error, reported as one (exit 2).
    process.stderr.write(`rcp-server: invalid configuration:\n  log.redact: ${(error as Error).message}\n`);
    return undefined;
  }
}

/** The registry's engines; undefined after printing why it cannot be read (exit 2). */
function registryOrReport(file: string): EngineSpec[] | undefined {
  try {
    return readRegistry(file);
  } catch (error) {
    reported(error);
    return undefined;
  }
}

/** Configuration errors are printed as text and exit 2; they are never wire codes. */
function loadOrReport(file: string | undefined, overrides: ConfigOverrides): Config | undefined {
  try {
    const config = loadConfig({ file, env: process.env, overrides });
    for (const name of unknownEnvironment(process.env)) {
      process.stderr.write(
        `rcp-server: ignoring ${name}, which names no setting (see \`rcp-server config --print\`)\n`,
      );
    }
    return config;
  } catch (error) {
    reported(error);
    return undefined;
  }
}

async function createOrReport(config: Config, log: Logger, configFile: string | undefined): Promise<App | undefined> {
  try {
    return createApp(config, { logger: log, configFile });
  } catch (thrown) {
    reported(thrown instanceof AppStartError ? (await thrown.closed, thrown.cause) : thrown);
    return undefined;
  }
}

async function serve(command: ServeCommand): Promise<number> {
  const started = startLogged(command);
  if (started === undefined) return 2;
  const { config, log } = started;
  await prepareDefaultModel(config.models, log);
  const app = await createOrReport(config, log, command.configFile);
  if (app === undefined) return 2;
  return run(app, command.transport, log);
}

/** `rcp-server gateway`: the registry's engines federated behind one server (§16). */
async function gatewayCommand(command: GatewayCommand): Promise<number> {
  const started = startLogged(command);
  if (started === undefined) return 2;
  const { config, log } = started;
  const specs = registryOrReport(command.registry);
  if (specs === undefined) return 2;
  const app = await createGateway(config, specs, log, command.select === 'primary' ? 'select' : 'federate');
  return run(app, command.transport, log);
}

/** `rcp-server mcp`: the MCP bridge on stdin/stdout over the local corpus or a registry's engines. */
async function mcpCommand(command: McpCommand): Promise<number> {
  const config = loadOrReport(command.configFile, command.overrides);
  if (config === undefined) return 2;
  const log = loggerOrReport(config);
  if (log === undefined) return 2;
  let app: App | undefined;
  if (command.registry !== undefined) {
    const specs = registryOrReport(command.registry);
    if (specs === undefined) return 2;
    app = await createGateway(config, specs, log);
  } else {
    await prepareDefaultModel(config.models, log);
    app = await createOrReport(config, log, command.configFile);
    if (app === undefined) return 2;
    await app.models.loaded;
    await app.corpus?.ready;
  }
  const bridge = await serveMcp({
    input: process.stdin,
    output: process.stdout,
    session: app.createSession({ implicit: true }),
    server: { name: config.server.name, version: config.server.version },
  });
  onSignals(log, () => process.stdin.destroy());
  await bridge.closed;
  await app.close();
  return 0;
}

/** Configuration, the bind policy and the logger, shared by every long-running command; undefined after saying why not. */
function startLogged(command: ServeCommand | GatewayCommand): { config: Config; log: Logger } | undefined {
  const config = loadOrReport(command.configFile, command.overrides);
  if (config === undefined) return undefined;
  if (command.transport.kind === 'http') {
    // §15.6: loopback by default; a public address needs API keys unless the operator says otherwise. The operator
    // listener never asks for a key, so a public address there needs the operator's explicit word too.
    const open = openPublicly(config);
    if (open !== undefined && !config.auth.allowUnauthenticated) {
      process.stderr.write(
        `rcp-server: refusing to serve ${open} without authentication: set RCP_API_KEYS ` +
          '(or RCP_ALLOW_UNAUTHENTICATED=true to accept anyone)\n',
      );
      return undefined;
    }
  }
  const log = loggerOrReport(config);
  return log === undefined ? undefined : { config, log };
}

/** A public address that would be served without asking for a key, if any. */
function openPublicly(config: Config): string | undefined {
  const loopback = (host: string) => ['127.0.0.1', '::1', 'localhost'].includes(host);
  if (!loopback(config.http.host) && config.auth.apiKeys.length === 0) return config.http.host;
  const { operatorPort, operatorHost } = config.http;
  if (operatorPort !== 0 && !loopback(operatorHost)) return `the operator endpoints on ${operatorHost}`;
  return undefined;
}

/** Serves the app on the chosen transport until EOF/shutdown (stdio) or a signal (HTTP), then closes it: exit 0. */
async function run(app: App, transport: ServeCommand['transport'], log: Logger): Promise<number> {
  const { config } = app;
  if (transport.kind === 'stdio') {
    const connection = app.serveStdio({
      input: process.stdin,
      output: process.stdout,
      log,
    });
    onSignals(log, () => process.stdin.destroy());
    let code = 0;
    void damagedStore(app).then((reason) => {
      code = reportDamage(reason);
      process.stdin.destroy();
    });
    await connection.closed;
    await app.close();
    log.info({}, 'stdio session ended');
    return code;
  }

  const listeners: [() => Promise<FastifyInstance>, string, number, string][] = [
    [() => app.buildHttp(), config.http.host, config.http.port, 'listening'],
  ];
  if (config.http.operatorPort !== 0) {
    listeners.push([
      () => app.buildOperatorHttp(),
      config.http.operatorHost,
      config.http.operatorPort,
      'operator endpoints listening',
    ]);
  }
  for (const [build, host, port, what] of listeners) {
    try {
      log.info({ address: await (await build()).listen({ host, port }), base: config.http.base }, what);
    } catch (error) {
      // A port in use or an address this host does not have: a start-up error, one line and exit 2.
      const { code, message } = error as NodeJS.ErrnoException;
      process.stderr.write(`rcp-server: cannot listen on ${host}:${port}: ${code ?? message}\n`);
      await app.close();
      return 2;
    }
  }
  const code = await Promise.race([
    new Promise<number>((resolve) => onSignals(log, () => resolve(0))),
    damagedStore(app).then(reportDamage),
  ]);
  // Graceful: stop accepting, let in-flight requests finish, then exit.
  await app.close();
  log.info({}, 'stopped');
  return code;
}

/** Resolves with the reason if the corpus finds its store damaged while loading; otherwise never. */
function damagedStore(app: App): Promise<string> {
  return new Promise((resolve) => {
    void app.corpus?.ready.then(() => {
      const reason = app.corpus?.fatal;
      if (reason !== undefined) resolve(reason);
    });
  });
}

/** A damaged store is a start-up error: one line, exit 2 (nothing in the data dir is changed). */
function reportDamage(reason: string): number {
  process.stderr.write(`rcp-server: ${reason}\n`);
  return 2;
}

function onSignals(log: Logger, stop: () => void): void {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      log.info({ signal }, 'shutting down');
      stop();
    });
  }
}
