import { outsidePathOrExit, SCHEMA } from './outside.js';

/**
 * vitest globalSetup of `npm run test:conformance`: the normative schema must be there before anything runs (one line
 * naming what is missing otherwise); its resolved path reaches the test workers through RCP_SCHEMA.
 */
export default function setup(): void {
  process.env.RCP_SCHEMA = outsidePathOrExit(SCHEMA);
}
