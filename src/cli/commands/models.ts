import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  BUILT_IN_ENCODERS,
  DEFAULT_ENCODER,
  buildDefaultModel,
  builtInEncoder,
  fetchModel,
  modelDir,
  readCatalog,
} from '../../models/index.js';
import type { ModelsCommand } from '../../cli.js';
import { loadConfig } from '../../config/index.js';
import { StartupError } from '../../startup-error.js';

/** `rcp-server models build|fetch`: prepares model directories; progress goes to stderr, a failure is thrown. */
export async function modelsCommand(command: ModelsCommand): Promise<number> {
  const settings = loadConfig({ env: process.env }).models;
  const say = (line: string) => process.stderr.write(`rcp-server: ${line}\n`);
  if (command.action === 'build') {
    const name = command.name ?? DEFAULT_ENCODER;
    const options = builtInEncoder(name);
    if (options === undefined) {
      throw new StartupError(`models build builds ${Object.keys(BUILT_IN_ENCODERS).join(' or ')}, not '${name}'`);
    }
    const target = command.dir ?? modelDir(settings, name);
    const started = Date.now();
    const { built } = await buildDefaultModel(target, options);
    say(built ? `built ${target} in ${Date.now() - started} ms` : `${target} is up to date`);
    return 0;
  }
  const catalog = await readCatalog(fileURLToPath(new URL('../../../models/catalog.json', import.meta.url)));
  for (const name of command.names) {
    const target = join(command.dir ?? settings.dir, name);
    const manifest = await fetchModel(catalog, name, target, {
      hub: command.hub,
      unpinned: command.unpinned,
      log: say,
    });
    say(`fetched ${name} into ${target} (${manifest.identity})`);
  }
  return 0;
}
