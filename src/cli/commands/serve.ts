import { prepareDefaultModel } from '../../models/index.js';
import type { ServeCommand } from '../../cli.js';
import { serveApp, startLogged, withTracing } from '../serving.js';
import { openApp } from '../startup.js';

/** `rcp-server serve`: the local corpus and models on stdio or HTTP. */
export async function serveCommand(command: ServeCommand): Promise<number> {
  const { config, log } = startLogged(command);
  return withTracing(config, log, async () => {
    await prepareDefaultModel(config.models, log);
    const app = await openApp(config, log, command.configFile, command.corpus);
    return serveApp(app, command.transport, log);
  });
}
