import { isIP } from 'node:net';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { StartupError } from '../startup-error.js';
import { ConfigSchema, type Config } from './schema.js';

export class ConfigError extends StartupError {
  override name = 'ConfigError';
}

/**
 * A candidate configuration checked against ConfigSchema, then against the rules that join settings (a setting
 * valid alone but not beside another): the configuration, or a ConfigError naming every problem.
 */
const validate = new Ajv2020({
  allErrors: true,
  allowUnionTypes: true,
}).compile(ConfigSchema);

export function validateConfig(candidate: unknown): Config {
  if (validate(candidate)) {
    return checkTimeouts(checkTrustedProxies(checkFileRoots(checkQueueAdmitsLargestRequest(candidate))));
  }
  const problems = (validate.errors ?? []).map((e) => {
    const where = e.instancePath.split('/').slice(1).join('.') || '(root)';
    const extra = (e.params as { additionalProperty?: string }).additionalProperty;
    return extra === undefined ? `${where}: ${e.message ?? 'invalid'}` : `${where}: unknown setting '${extra}'`;
  });
  throw new ConfigError(`invalid configuration:\n  ${problems.join('\n  ')}`);
}

/**
 * The body's time counts from the request's start, its headers' time included: Node refuses to listen with a body
 * timeout shorter than the headers' (a bare ERR_OUT_OF_RANGE), so the settings are named here instead.
 */
function checkTimeouts(config: Config): Config {
  const { headersTimeoutMs, bodyTimeoutMs } = config.http;
  if (bodyTimeoutMs < headersTimeoutMs) {
    throw new ConfigError(
      `invalid configuration:\n  http.bodyTimeoutMs (${bodyTimeoutMs}) must be at least http.headersTimeoutMs ` +
        `(${headersTimeoutMs}): a request's time to send its body includes its headers' time`,
    );
  }
  return config;
}

/** Every trusted proxy is a name the proxy matcher knows, an address, or a network of a prefix in range (1..32/128). */
function checkTrustedProxies(config: Config): Config {
  for (const proxy of config.http.trustProxy) {
    if (['loopback', 'linklocal', 'uniquelocal'].includes(proxy)) continue;
    const [address = '', prefix] = proxy.split('/');
    const family = isIP(address);
    const bits = prefix === undefined ? undefined : Number(prefix);
    if (family !== 0 && (bits === undefined || (bits >= 1 && bits <= (family === 4 ? 32 : 128)))) continue;
    throw new ConfigError(`invalid configuration:\n  http.trustProxy: '${proxy}' is not an address or a network`);
  }
  return config;
}

/** A queue smaller than the largest request it must accept would refuse that request forever. */
function checkQueueAdmitsLargestRequest(config: Config): Config {
  const { embedBatchLimit, rerankMaxCandidates, batching } = config.models;
  const largest = Math.max(embedBatchLimit, rerankMaxCandidates + 1);
  if (batching.maxQueuedItems < largest) {
    throw new ConfigError(
      `invalid configuration:\n  models.batching.maxQueuedItems (${batching.maxQueuedItems}) must admit the largest ` +
        `single request (embedBatchLimit or rerankMaxCandidates + 1 = ${largest})`,
    );
  }
  return config;
}

/**
 * §15.5: `file` among the fetch schemes with no roots would serve nothing, or (as once) everything the process can
 * read: refuse to start and say which setting is missing.
 */
function checkFileRoots(config: Config): Config {
  const { schemes, fileRoots } = config.content.fetch;
  if (schemes.includes('file') && fileRoots.length === 0) {
    throw new ConfigError(
      "invalid configuration:\n  content.fetch.schemes lists 'file' but content.fetch.fileRoots is empty: " +
        'list the directories file uris may read from',
    );
  }
  return config;
}
