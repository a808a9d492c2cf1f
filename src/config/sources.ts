import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { isJsonObject } from '../protocol/messages.js';
import { DERIVED_ENVIRONMENT, ENVIRONMENT } from './environment.js';
import { defaultConfig, type Config } from './schema.js';
import { ConfigError, validateConfig } from './validate.js';

/**
 * Where settings come from, in precedence order (docs/architecture.md §7): defaults < config file (JSON or YAML) <
 * RCP_* environment variables < command-line flags.
 */

/** Dotted paths to values, from command-line flags. */
export type ConfigOverrides = Record<string, unknown>;

export interface LoadOptions {
  file?: string | undefined;
  env?: NodeJS.ProcessEnv;
  /** Dotted paths to values, from command-line flags. */
  overrides?: ConfigOverrides;
}

export function loadConfig(options: LoadOptions = {}): Config {
  const config: Record<string, unknown> = defaultConfig();
  if (options.file !== undefined) deepMerge(config, readConfigFile(options.file));
  for (const [name, { path, parse }] of [...Object.entries(DERIVED_ENVIRONMENT), ...Object.entries(ENVIRONMENT)]) {
    const raw = (options.env ?? {})[name];
    if (raw !== undefined && raw !== '') setPath(config, path, parse(raw), name);
  }
  for (const [path, value] of Object.entries(options.overrides ?? {})) setPath(config, path, value, `--${path}`);
  return validateConfig(config);
}

function readConfigFile(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError(`cannot read config file ${file}: ${(error as Error).message}`);
  }
  const yaml = /\.ya?ml$/i.test(file);
  try {
    const parsed = (yaml ? parseYaml(text) : JSON.parse(text)) as unknown;
    if (!isJsonObject(parsed)) throw new Error(`not a ${yaml ? 'YAML mapping' : 'JSON object'}`);
    return parsed;
  } catch (error) {
    // The parser's first line names the problem and its line and column; the code frame after it is not one line.
    const reason = (error as Error).message.split('\n')[0]?.replace(/:$/, '');
    throw new ConfigError(`config file ${file} is not valid ${yaml ? 'YAML' : 'JSON'}: ${reason}`);
  }
}

function deepMerge(target: Record<string, unknown>, source: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(source)) {
    const existing = target[key];
    if (isJsonObject(existing) && isJsonObject(value)) deepMerge(existing, value);
    else target[key] = value;
  }
}

function setPath(target: Record<string, unknown>, path: string, value: unknown, source: string): void {
  const keys = path.split('.');
  const last = keys.pop();
  let node = target;
  for (const key of keys) {
    const next = node[key];
    if (!isJsonObject(next)) throw new ConfigError(`${source}: no such setting '${path}'`);
    node = next;
  }
  if (last === undefined) throw new ConfigError(`${source}: empty setting path`);
  node[last] = value;
}
