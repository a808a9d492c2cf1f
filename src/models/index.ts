/**
 * The models' entry (docs/architecture.md §3): the ports other layers call, and what the composition uses to open,
 * prepare and fetch models. Other layers import this module only; src/models/onnx/ and the queue stay inside.
 */

export type * from './ports.js';
export {
  BUILT_IN_ENCODERS,
  DEFAULT_ENCODER,
  builtInEncoder,
  modelDir,
  openModels,
  prepareDefaultModel,
  type BatchObserver,
  type Models,
  type ModelSettings,
} from './models.js';
export { FetchError, fetchModel, readCatalog } from './model-fetch.js';
export { buildDefaultModel } from './onnx/default-model.js';
// How a text is cut into parts a tokenizer counts in slices: chunking and the lexical analyzer cut the same way.
export { PART_UNITS, addedPerCall, textParts } from './tokenizers/count-in-parts.js';
export {
  MAX_EXPANSION,
  UNITS_PER_TOKEN,
  normalizedEnd,
  readablePrefix,
  wholeCodePoints,
} from './tokenizers/readable-prefix.js';
