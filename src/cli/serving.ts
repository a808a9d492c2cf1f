import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { App } from '../app.js';
import type { GatewayCommand, ServeCommand, Transport } from '../cli.js';
import type { Config } from '../config/index.js';
import { StartupError } from '../startup-error.js';
import { startTracing } from '../telemetry/index.js';
import { createLogger, loadSettings } from './startup.js';

/** What the long-running commands (serve, gateway, mcp) share: the bind policy, serving a transport, signals. */

/** Configuration, the bind policy and the logger, shared by every long-running command. */
export function startLogged(command: ServeCommand | GatewayCommand): { config: Config; log: Logger } {
  const config = loadSettings(command.configFile, command.overrides);
  if (command.transport.kind === 'http') {
    // §15.6: loopback by default; a public address needs API keys unless the operator says otherwise. The operator
    // listener never asks for a key, so a public address there needs the operator's explicit word too.
    const open = openPublicly(config);
    if (open !== undefined && !config.auth.allowUnauthenticated) {
      throw new StartupError(
        `refusing to serve ${open} without authentication: set RCP_API_KEYS ` +
          '(or RCP_ALLOW_UNAUTHENTICATED=true to accept anyone)',
      );
    }
  }
  return { config, log: createLogger(config) };
}

/**
 * `run` with traces exported while it runs, when tracing is on (docs/operations.md "Tracing"); what is still held is
 * exported as it ends, within the exporter's timeout.
 */
export async function withTracing<T>(config: Config, log: Logger, run: () => Promise<T>): Promise<T> {
  const { name, version } = config.server;
  const settings = { ...config.tracing, serviceName: name, serviceVersion: version };
  const tracing = await startTracing(settings, process.env, log);
  try {
    return await run();
  } finally {
    await tracing?.shutdown();
  }
}

/** A public address that would be served without asking for a key, if any. */
function openPublicly(config: Config): string | undefined {
  const loopback = (host: string) => ['127.0.0.1', '::1', 'localhost'].includes(host);
  if (!loopback(config.http.host) && config.auth.apiKeys.length === 0) return config.http.host;
  const { operatorPort, operatorHost } = config.http;
  if (operatorPort !== 0 && !loopback(operatorHost)) return `the operator endpoints on ${operatorHost}`;
  return undefined;
}

/**
 * Serves the app on the chosen transport until EOF/shutdown (stdio) or a signal (HTTP), then closes it: exit 0. A
 * store found damaged, while loading or later by its scrub or a read, ends the process as a start-up error does
 * (exit 2, one line; nothing in the data dir is changed), thrown once the app is closed.
 */
export async function serveApp(app: App, transport: Transport, log: Logger): Promise<number> {
  if (transport.kind === 'stdio') {
    const connection = app.serveStdio({ input: process.stdin, output: process.stdout, log });
    onSignals(log, () => process.stdin.destroy());
    let damage: string | undefined;
    void damagedStore(app).then((reason) => {
      damage = reason;
      process.stdin.destroy();
    });
    await connection.closed;
    await app.close();
    log.info({}, 'stdio session ended');
    if (damage !== undefined) throw new StartupError(damage);
    return 0;
  }
  // Before the listener opens: a process with no handler for SIGTERM is killed by it outright, and a signal sent
  // as soon as `listening` was logged arrived before the handler in 20 of 30 tries (no drain, the index unsaved).
  const signalled = new Promise<undefined>((resolve) => onSignals(log, () => resolve(undefined)));
  await listen(app, log);
  const damage = await Promise.race([signalled, damagedStore(app)]);
  // Graceful: stop accepting, let in-flight requests finish, then exit.
  await app.close();
  log.info({}, 'stopped');
  if (damage !== undefined) throw new StartupError(damage);
  return 0;
}

/** The HTTP listener and, when configured, the operator one; a port that cannot be bound closes the app and throws. */
async function listen(app: App, log: Logger): Promise<void> {
  const { config } = app;
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
      await app.close();
      throw new StartupError(`cannot listen on ${host}:${port}: ${code ?? message}`);
    }
  }
}

/** Resolves with the reason if the corpus finds its store damaged, while loading or serving; otherwise never. */
export function damagedStore(app: App): Promise<string> {
  return app.corpus?.damaged ?? new Promise<never>(() => undefined);
}

/**
 * Stops once on the first SIGTERM or SIGINT; a later one is logged and otherwise ignored (with `once`, a second signal
 * found no listener and Node's default killed the process mid-drain: answers lost, the index not saved).
 */
export function onSignals(log: Logger, stop: () => void): void {
  let stopping = false;
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      if (stopping) return void log.info({ signal }, 'already shutting down');
      stopping = true;
      log.info({ signal }, 'shutting down');
      stop();
    });
  }
}
