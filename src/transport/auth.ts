import { createHash } from 'node:crypto';
import { RpcErrorCode } from '../protocol/codes.js';
import { RpcError } from '../protocol/errors.js';
import { accessFor } from '../protocol/method-table.js';
import { DEFAULT_CORPUS, granted } from '../protocol/corpus-name.js';

/**
 * API-key authentication for HTTP (§5.2, §15.6). Keys are configured as plain keys or as their sha256 (so the
 * configuration need not hold secrets); only hashes are kept in memory. A caller is identified by its key, never by
 * anything in the params. Scopes (every key may run the §13 lifecycle: initialize, info, ping, shutdown):
 * - `read`: the methods that read (embed, rerank, retrieve, query/transform, catalog/list, feedback, ...);
 * - `write`: the methods that change the corpus (`accessFor` in the method table says which);
 * - `monitor`: the operator endpoints (`/readyz`, the metrics), nothing of RCP;
 * - `admin`: all of these.
 * stdio needs none of this: the spawning host decides who talks to the server.
 */
export type Scope = 'read' | 'write' | 'monitor' | 'admin';

export interface ApiKeyConfig {
  readonly key?: string | undefined;
  readonly sha256?: string | undefined;
  readonly scopes: readonly Scope[];
  /** The corpora the key may use (docs/tenants.md): names, `prefix*`, `*`; absent, the default corpus only. */
  readonly corpora?: readonly string[] | undefined;
}

export interface Caller {
  /** Stable, non-secret identity of the key (for the caller session and rate limits). */
  readonly id: string;
  readonly scopes: ReadonlySet<Scope>;
  /** Whether the key may use the corpus `name` (§15.6: a tenant is confined to its own). */
  mayUse(name: string): boolean;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

export class ApiKeys {
  readonly #byHash = new Map<string, Caller>();
  readonly #byId = new Map<string, Caller>();

  constructor(keys: readonly ApiKeyConfig[]) {
    for (const key of keys) {
      const hash = key.sha256?.toLowerCase() ?? (key.key === undefined ? undefined : sha256(key.key));
      if (hash === undefined) throw new Error('an API key needs "key" or "sha256"');
      const corpora = key.corpora ?? [DEFAULT_CORPUS];
      const caller: Caller = {
        id: `key:${hash.slice(0, 12)}`,
        scopes: new Set(key.scopes),
        mayUse: (name) => granted(corpora, name),
      };
      this.#byHash.set(hash, caller);
      this.#byId.set(caller.id, caller);
    }
  }

  /** The caller of the key whose id is `id` (a request's `ctx.caller`), if it is one. */
  callerOf(id: string): Caller | undefined {
    return this.#byId.get(id);
  }

  get enabled(): boolean {
    return this.#byHash.size > 0;
  }

  /** The caller behind an `Authorization` header, or -32012. */
  authenticate(header: string | undefined): Caller | RpcError {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
    if (match === null) return unauthorized('send Authorization: Bearer <API key>');
    return this.#byHash.get(sha256(match[1] ?? '')) ?? unauthorized('unknown API key');
  }
}

/** -32012 unless `caller` may call `method`. */
export function authorize(caller: Caller, method: unknown): RpcError | undefined {
  const needed = accessFor(typeof method === 'string' ? method : '');
  if (needed === 'lifecycle' || caller.scopes.has('admin') || caller.scopes.has(needed)) return undefined;
  return unauthorized(`this key lacks the ${needed} scope`);
}

/** The screen of each member of `caller`'s frame by its method's scope (`authorize`), for protocol/screen.ts. */
export function authorizer(caller: Caller): (method: unknown) => RpcError | undefined {
  return (method) => authorize(caller, method);
}

/** Whether `caller` may read the operator endpoints. */
export function mayMonitor(caller: Caller): boolean {
  return caller.scopes.has('monitor') || caller.scopes.has('admin');
}

function unauthorized(detail: string): RpcError {
  return new RpcError(RpcErrorCode.Unauthorized, 'unauthorized', { detail });
}
