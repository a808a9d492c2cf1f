import { RpcErrorCode } from './codes.js';
import { RpcError } from './errors.js';

/**
 * Names of corpora (docs/tenants.md): a corpus is reached at `<base>/corpora/<name>` over HTTP and lives in the folder
 * `<corpora.root>/<name>`, so a name is safe in a URL path and a file name on every filesystem: lowercase letters,
 * digits, `-` and `_`, at most 64, starting with a letter or digit. `default` is the process's own corpus (`dataDir`).
 */
export const CORPUS_NAME = '[a-z0-9][a-z0-9_-]{0,63}';

/** The corpus a request that names none reaches, and the name keys use for it. */
export const DEFAULT_CORPUS = 'default';

const NAME = new RegExp(`^${CORPUS_NAME}$`);

/**
 * §15.6 the one answer for a corpus a caller may not use, one that does not exist and a malformed name alike, so that a
 * key never learns that another tenant's corpus exists (the HTTP path and the admin methods give it).
 */
export const NO_SUCH_CORPUS = new RpcError(RpcErrorCode.Unauthorized, 'unauthorized', {
  detail: 'no corpus of that name is open to this caller',
});

export function isCorpusName(name: string): boolean {
  return NAME.test(name);
}

/**
 * What an API key's `corpora` may list: a name, a prefix ending in `*` (`beta-*`), or `*` alone (every corpus).
 * Written as a JSON Schema pattern for the configuration.
 */
export const CORPUS_GRANT = `^(\\*|${CORPUS_NAME}\\*?)$`;

/**
 * Whether `grants` (a key's `corpora`) let it use the corpus `name`. The default corpus is granted by its name or by
 * `*`, never by a prefix (`d*` is for named corpora).
 */
export function granted(grants: readonly string[], name: string): boolean {
  return grants.some((grant) => {
    if (grant === '*' || grant === name) return true;
    return grant.endsWith('*') && name !== DEFAULT_CORPUS && name.startsWith(grant.slice(0, -1));
  });
}
