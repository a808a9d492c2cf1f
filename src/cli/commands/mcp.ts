import type { Logger } from 'pino';
import type { App } from '../../app.js';
import { prepareDefaultModel } from '../../models/index.js';
import type { McpCommand } from '../../cli.js';
import type { Config } from '../../config/index.js';
import { readRegistry } from '../../gateway/engine-registry.js';
import { createGateway } from '../../gateway/gateway.js';
import { serveMcp } from '../../transport/mcp.js';
import { damagedStore, onSignals, withTracing } from '../serving.js';
import { StartupError } from '../../startup-error.js';
import { createLogger, loadSettings, openApp } from '../startup.js';

/** `rcp-server mcp`: the MCP bridge on stdin/stdout over the local corpus or a registry's engines. */
export async function mcpCommand(command: McpCommand): Promise<number> {
  const config = loadSettings(command.configFile, command.overrides);
  const log = createLogger(config);
  return withTracing(config, log, () => bridge(command, config, log));
}

async function bridge(command: McpCommand, config: Config, log: Logger): Promise<number> {
  const app = await openBridged(command, config, log);
  const served = await serveMcp({
    input: process.stdin,
    output: process.stdout,
    session: app.createSession({ implicit: true }),
    server: { name: config.server.name, version: config.server.version },
    maxLineBytes: config.limits.maxBodyBytes,
    maxFrameValues: config.limits.maxFrameValues,
    log,
  });
  onSignals(log, () => process.stdin.destroy());
  // A store found damaged (or a named corpus dropped from its store) ends the bridge as it ends a stdio session.
  let damage: string | undefined;
  void damagedStore(app).then((reason) => {
    damage = reason;
    process.stdin.destroy();
  });
  await served.closed;
  await app.close();
  if (damage !== undefined) throw new StartupError(damage);
  return 0;
}

/** A registry's engines federated, or the local corpus once its models are loaded and its indexes open. */
async function openBridged(command: McpCommand, config: Config, log: Logger): Promise<App> {
  if (command.registry !== undefined) return createGateway(config, readRegistry(command.registry), log);
  await prepareDefaultModel(config.models, log);
  const app = await openApp(config, log, command.configFile, command.corpus);
  await app.models.loaded;
  await app.corpus?.ready;
  return app;
}
