import { RpcError } from '../protocol/errors.js';
import type { JsonObject } from '../protocol/messages.js';
import type { MethodDefinition } from '../protocol/registry.js';
import { CatalogListParams } from '../protocol/schemas/params.js';
import { DEFAULT_CORPUS } from '../protocol/corpus-name.js';
import type { CorpusShelf } from './shelf.js';

export interface CatalogOptions {
  /** Where the named corpora are kept. */
  readonly shelf: CorpusShelf;
  /** The RCP base path (`http.base`): each corpus's endpoint is under it. */
  readonly base: string;
  readonly server: { readonly name: string; readonly version: string };
  /** What each corpus advertises (every corpus of a process is served by the same methods). */
  readonly capabilities: () => JsonObject;
  /** Which corpora the caller `callerId` may use (§15.6); every one when it is no key's caller. */
  readonly mayUse: (callerId: string) => (name: string) => boolean;
}

/**
 * §7.13 `catalog/list` over the corpora of this process (docs/tenants.md): each an engine with its own endpoint,
 * `<base>` for the default one and `<base>/corpora/<name>` for the others (a path on this server: a client resolves it
 * against the url it called). §15.6: a caller is shown only the corpora it may use, so a key never learns another
 * tenant's corpus exists.
 */
export function catalogMethod(options: CatalogOptions): MethodDefinition<typeof CatalogListParams> {
  const base = options.base.replace(/\/+$/, '');
  const listing = recentListing(options.shelf);
  return {
    method: 'catalog/list',
    params: CatalogListParams,
    handler: async (_params, ctx) => {
      const mayUse = options.mayUse(ctx.caller);
      const named = await listing().catch(() => {
        throw RpcError.backendUnavailable('the store of the corpora cannot be reached; try again', 1000);
      });
      const names = [DEFAULT_CORPUS, ...named].filter(mayUse);
      const capabilities = options.capabilities();
      return {
        engines: names.map((name) => ({
          id: name,
          server: options.server,
          capabilities,
          endpoint: { transport: 'http', url: name === DEFAULT_CORPUS ? base : `${base}/corpora/${name}` },
        })),
      };
    },
  };
}

/** How long a listing of the corpora serves catalog/list calls: a flood of them reads the root once in that time. */
const LISTING_MS = 2000;

/** The corpora of `shelf` as listed at most LISTING_MS ago (calls meanwhile share one listing). */
function recentListing(shelf: CorpusShelf): () => Promise<string[]> {
  let last: { at: number; names: Promise<string[]> } | undefined;
  return () => {
    if (last === undefined || Date.now() - last.at > LISTING_MS) {
      const names = shelf.list();
      last = { at: Date.now(), names };
      names.catch(() => (last = undefined));
    }
    return last.names;
  };
}
