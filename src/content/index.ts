/**
 * Content's entry (docs/architecture.md §3): the uri fetcher port (§4.8) and its policy-bound implementation (§15.5).
 * Other layers import this module only.
 */

export type * from './ports.js';
export { within } from './file-reader.js';
export {
  PolicyUriFetcher,
  isPrivateAddress,
  type FetchPolicy,
  type FetcherOptions,
  type ProtectedPath,
} from './uri-fetcher.js';
