/** Where an RCP frame was posted (§5.2): the method the path names, and the session it names, if any. */
export interface RcpRoute {
  /** The method after the base (it may hold `/`, as `index/add` does); undefined at the base itself. */
  readonly method: string | undefined;
  /** The session named in the path, as sent (it is checked where sessions are found). */
  readonly session: string | undefined;
  /** The corpus named in the path (`<base>/corpora/<name>/…`, docs/tenants.md), as sent; undefined: the default. */
  readonly corpus?: string | undefined;
}

const SESSIONS = 'sessions/';
const CORPORA = 'corpora/';

/**
 * The route of a request for `url` under `base` (no trailing slash; '' for the root), or undefined when the path is
 * not an RCP one (the rest of the server answers it: 404) or cannot be decoded (400 there). `<base>` and `<base>/`
 * take a frame whose members name their methods (a batch, §11); `<base>/<method>` a frame for that method; and
 * `<base>/sessions/<name>` with or without `/<method>` the same in a named session; each of these under
 * `<base>/corpora/<corpus>` the same for that corpus. The query string is ignored; each part is percent-decoded after
 * the path is split, so an encoded `/` stays inside its part.
 */
export function rcpRoute(base: string, url: string): RcpRoute | undefined {
  const query = url.indexOf('?');
  const path = query < 0 ? url : url.slice(0, query);
  if (path === base) return { method: undefined, session: undefined };
  if (!path.startsWith(`${base}/`)) return undefined;
  const rest = path.slice(base.length + 1);
  if (!rest.startsWith(CORPORA)) return routeIn(rest, undefined);
  const slash = rest.indexOf('/', CORPORA.length);
  const corpus = decode(rest.slice(CORPORA.length, slash < 0 ? undefined : slash));
  if (corpus === undefined || corpus === '') return undefined;
  return routeIn(slash < 0 ? '' : rest.slice(slash + 1), corpus);
}

/** The route of `rest`, what follows the base (and the corpus, if one is named). */
function routeIn(rest: string, corpus: string | undefined): RcpRoute | undefined {
  const slash = rest.indexOf('/', SESSIONS.length);
  const name = rest.startsWith(SESSIONS) ? rest.slice(SESSIONS.length, slash < 0 ? undefined : slash) : '';
  if (name === '') return routeOf(rest, undefined, corpus);
  return routeOf(slash < 0 ? '' : rest.slice(slash + 1), name, corpus);
}

function routeOf(method: string, session: string | undefined, corpus: string | undefined): RcpRoute | undefined {
  const decoded = decode(method);
  const name = session === undefined ? undefined : decode(session);
  if (decoded === undefined || (session !== undefined && name === undefined)) return undefined;
  return { method: decoded === '' ? undefined : decoded, session: name, ...(corpus === undefined ? {} : { corpus }) };
}

/** The percent-decoded text, or undefined when it is not valid percent-encoded UTF-8. */
function decode(text: string): string | undefined {
  if (!text.includes('%')) return text;
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}
