/**
 * The configuration's entry (docs/architecture.md §7): ConfigSchema declares every setting once (schema.ts); the
 * environment's names are derived from it (environment.ts); sources.ts merges defaults, a file, the environment and
 * flags; validate.ts checks the result, alone and setting against setting.
 */

import type { ParserLimits } from '../documents/index.js';
import type { Config } from './schema.js';

export { ConfigSchema, defaultConfig, type Config } from './schema.js';
export { DERIVED_ENVIRONMENT, ENVIRONMENT, unknownEnvironment } from './environment.js';
export { loadConfig, type ConfigOverrides, type LoadOptions } from './sources.js';
export { ConfigError, validateConfig } from './validate.js';

/** The bounds of reading document files (docs/documents.md): `content.documents`, and the corpus's own limits. */
export function parserLimitsOf(config: Config): ParserLimits {
  const { maxDocumentBytes, maxMetadataBytes } = config.index;
  return { ...config.content.documents, maxTextBytes: maxDocumentBytes, maxMetadataBytes };
}
