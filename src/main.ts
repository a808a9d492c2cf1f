import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino, type Logger } from 'pino';
import { createApp } from './app.js';
import { CorpusError } from './backend/corpus/corpus.js';
import { ManifestError } from './backend/manifest.js';
import { FetchError, fetchModel, readCatalog } from './backend/model-fetch.js';
import { DEFAULT_ENCODER, modelDir, prepareDefaultModel } from './backend/models.js';
import { buildDefaultModel } from './backend/onnx/default-model.js';
import { parseCommandLine, UsageError, type ModelsCommand, type ServeCommand } from './cli.js';
import { ConfigError, loadConfig } from './config.js';

/**
 * Process entry: CLI, logger to stderr, signals, transport choice. On stdio, stdout carries protocol frames
 * only (§5.1), so every log line goes to stderr.
 */
export async function main(argv: readonly string[]): Promise<number> {
  let command;
  try {
    command = parseCommandLine(argv);
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`rcp-server: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  if (command.command === 'help') {
    process.stderr.write(command.text);
    return 0;
  }
  if (command.command === 'models') return models(command);
  return serve(command);
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
      if (!(error instanceof FetchError)) throw error;
      say(error.message);
      return 1;
    }
  }
  return 0;
}

async function serve(command: ServeCommand): Promise<number> {
  let config;
  try {
    config = loadConfig({
      file: command.configFile,
      env: process.env,
      overrides: command.overrides,
    });
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`rcp-server: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  const log = pino({ level: config.log.level, base: { service: config.server.name } }, pino.destination(2));
  await prepareDefaultModel(config.models, log);
  let app;
  try {
    app = createApp(config, { logger: log });
  } catch (error) {
    if (error instanceof ManifestError || error instanceof CorpusError) {
      process.stderr.write(`rcp-server: ${error.message}\n`);
      return 2;
    }
    throw error;
  }

  if (command.transport.kind === 'stdio') {
    const connection = app.serveStdio({
      input: process.stdin,
      output: process.stdout,
      log,
    });
    onSignals(log, () => process.stdin.destroy());
    await connection.closed;
    await app.close();
    log.info({}, 'stdio session ended');
    return 0;
  }

  const http = await app.buildHttp();
  const address = await http.listen({
    host: config.http.host,
    port: config.http.port,
  });
  log.info({ address, base: config.http.base }, 'listening');
  await new Promise<void>((resolve) => onSignals(log, resolve));
  // Graceful: stop accepting, let in-flight requests finish, then exit 0.
  await app.close();
  log.info({}, 'stopped');
  return 0;
}

function onSignals(log: Logger, stop: () => void): void {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      log.info({ signal }, 'shutting down');
      stop();
    });
  }
}
