import { fileURLToPath } from 'node:url';
import { buildDefaultModel } from '../../src/models/onnx/default-model.js';

/**
 * vitest globalSetup: the default encoder is built by `npm run build` (which `npm test` runs first); this makes a
 * bare `npx vitest` work on a clean checkout too. A no-op when the model is up to date.
 */
export default async function setup(): Promise<void> {
  await buildDefaultModel(fileURLToPath(new URL('../../models/use-lite', import.meta.url)));
}
