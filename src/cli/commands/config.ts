import type { ConfigCommand } from '../../cli.js';
import type { Config } from '../../config/index.js';
import { withoutPassword } from '../../platform/urls.js';
import { loadSettings } from '../startup.js';

/** `rcp-server config --print`: the effective configuration (file < environment) on stdout, secrets hidden. */
export function configCommand(command: ConfigCommand): number {
  const config = loadSettings(command.configFile, {});
  process.stdout.write(`${JSON.stringify(redact(config), null, 2)}\n`);
  return 0;
}

/**
 * The configuration with secrets hidden: plain API keys, the cursor-signing key and the passwords in the Redis and
 * PostgreSQL urls become "***" (a sha256 is no secret).
 */
function redact(config: Config): Config {
  return {
    ...config,
    auth: {
      ...config.auth,
      apiKeys: config.auth.apiKeys.map((key) => (key.key === undefined ? key : { ...key, key: '***' })),
    },
    redis: { ...config.redis, url: withoutPassword(config.redis.url) },
    store: { ...config.store, url: withoutPassword(config.store.url) },
    retrieve: { ...config.retrieve, cursorSecret: config.retrieve.cursorSecret === '' ? '' : '***' },
  };
}
