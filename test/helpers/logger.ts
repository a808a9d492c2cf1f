import type { Logger } from '../../src/protocol/logger.js';

/** A Logger that drops every line: for a backend part built directly in a test, where its logs are not under test. */
export const silentLogger: Logger = { info: () => undefined, warn: () => undefined, error: () => undefined };
