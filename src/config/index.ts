/**
 * The configuration's entry (docs/architecture.md §7): ConfigSchema declares every setting once (schema.ts); the
 * environment's names are derived from it (environment.ts); sources.ts merges defaults, a file, the environment and
 * flags; validate.ts checks the result, alone and setting against setting.
 */

export { ConfigSchema, defaultConfig, type Config } from './schema.js';
export { DERIVED_ENVIRONMENT, ENVIRONMENT, unknownEnvironment } from './environment.js';
export { loadConfig, type ConfigOverrides, type LoadOptions } from './sources.js';
export { ConfigError, validateConfig } from './validate.js';
