import { pino, type Logger } from 'pino';
import { AppStartError, createApp, findCorpus, type App } from '../app.js';
import { prepareDefaultModel } from '../models/index.js';
import { loadConfig, unknownEnvironment, type Config, type ConfigOverrides } from '../config/index.js';
import { logCorrelation } from '../protocol/tracing.js';
import { StartupError } from '../startup-error.js';

/**
 * The start-up steps the commands share: configuration, logger, app. Each throws a StartupError when the command
 * cannot run as configured; main.ts prints it as one line and exits with its code (2), never a wire code.
 */

/** The configuration (file < environment < flags), after naming each RCP_* variable that sets nothing. */
export function loadSettings(file: string | undefined, overrides: ConfigOverrides): Config {
  const config = loadConfig({ file, env: process.env, overrides });
  for (const name of unknownEnvironment(process.env)) {
    process.stderr.write(`rcp-server: ignoring ${name}, which names no setting (see \`rcp-server config --print\`)\n`);
  }
  return config;
}

/**
 * JSON log lines on stderr (stdout is protocol-only on stdio, §5.1), with the configured redaction. Written
 * synchronously: the process exits right after its last answer, and an asynchronous write still queued then is lost
 * (seen in the request-log test: the last request's line missing).
 */
export function createLogger(config: Config, level: string = config.log.level): Logger {
  try {
    return pino(
      // §17.2: every line logged for a request that runs in a trace carries its trace id (protocol/tracing.ts).
      { level, base: { service: config.server.name }, redact: config.log.redact, mixin: logCorrelation },
      pino.destination({ dest: 2, sync: true }),
    );
  } catch (error) {
    // pino refuses a malformed redact path at construction: a configuration error, reported as one (exit 2).
    throw new StartupError(`invalid configuration:\n  log.redact: ${(error as Error).message}`);
  }
}

/**
 * The app (over the named corpus `corpus` of `corpora.root` alone, when given: docs/tenants.md); what stopped it from
 * starting is thrown once what it had opened is closed.
 */
export async function openApp(
  config: Config,
  log: Logger,
  configFile: string | undefined,
  corpus?: string,
): Promise<App> {
  const named = corpus === undefined ? undefined : await findCorpus(config, corpus);
  try {
    return createApp(config, { logger: log, configFile, corpus: named });
  } catch (thrown) {
    throw thrown instanceof AppStartError ? (await thrown.closed, thrown.cause) : thrown;
  }
}

/** The app for a one-shot command (ingest, eval): warnings only on stderr. */
export async function openQuietApp(
  file: string | undefined,
  overrides: ConfigOverrides,
): Promise<{ config: Config; app: App }> {
  const config = loadSettings(file, overrides);
  const log = createLogger(config, 'warn');
  await prepareDefaultModel(config.models, log);
  return { config, app: await openApp(config, log, file) };
}
