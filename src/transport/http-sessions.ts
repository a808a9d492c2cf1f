import { randomBytes } from 'node:crypto';
import { RpcError } from '../protocol/errors.js';
import type { Session, SessionOptions } from '../protocol/session.js';

/**
 * How HTTP requests map to RCP sessions (§5.2). HTTP has no connection to hang a session on, and two clients on one
 * host (or behind one proxy) look alike, so a session exists only where a client names it:
 * - **No session named**: the request is answered statelessly (§5.2): in a session of its own, implicitly
 *   initialized at the advertised capabilities (`initialize` included, idempotently), so no client can collide with,
 *   cancel or shut down another, and nothing is kept.
 * - **`RCP-Session: <token>`**: the private session with that token. `initialize` with a token the server does not
 *   know (e.g. `new`) opens a fresh one, whose token comes back in `_meta.session`. Any other request with an
 *   unknown token is -32001.
 * - **`<base>/sessions/<name>/<method>`**: a session the client names in its URL, for clients that send no
 *   headers: the full §13 lifecycle (-32001 before `initialize`, -32600 for a second one).
 * A session belongs to the caller that opened it (its API key, else its address): the same token or name from
 * another caller is another session. `shutdown` ends the session, not the server. Sessions expire after `idleMs`
 * without a request; each caller keeps at most `maxSessionsPerCaller` (its own least recently used goes first),
 * and past `maxSessions` the caller holding the most (the one opening, on a tie) loses its least recently used: a
 * flood of sessions evicts the flooder's, never everyone's.
 */
export interface HttpSessionConfig {
  idleMs: number;
  maxSessions: number;
  maxSessionsPerCaller: number;
}

/** What a request names as its session. */
export type SessionRef = { token: string } | { name: string } | undefined;

interface Entry {
  key: string;
  caller: string;
  session: Session;
  lastUsed: number;
}

export class HttpSessionStore {
  readonly #create: (options: SessionOptions) => Session;
  readonly #config: HttpSessionConfig;
  /** Every kept session, least recently used first. */
  readonly #entries = new Map<string, Entry>();
  /** Each caller's sessions, least recently used first. */
  readonly #byCaller = new Map<string, Map<string, Entry>>();

  constructor(create: (options: SessionOptions) => Session, config: HttpSessionConfig) {
    this.#create = create;
    this.#config = config;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The session a request runs in, or the RpcError to answer it with. */
  resolve(ref: SessionRef, caller: string, isInitialize: boolean): Session | RpcError {
    this.#expire();
    if (ref === undefined) return this.#create({ implicit: true, caller });
    const key = 'name' in ref ? namedKey(caller, ref.name) : tokenKey(caller, ref.token);
    const entry = this.#entries.get(key);
    if (entry !== undefined) return this.#touch(entry).session;
    if ('name' in ref) return this.#open(caller, key, {}).session;
    if (isInitialize) return this.#openPrivate(caller);
    return RpcError.notInitialized('unknown or expired RCP-Session; send initialize to open a new session');
  }

  /** A session with a fresh unguessable token, returned to the client in `initialize.result._meta.session`. */
  #openPrivate(caller: string): Session {
    const token = randomBytes(18).toString('base64url');
    return this.#open(caller, tokenKey(caller, token), { token }).session;
  }

  #open(caller: string, key: string, options: SessionOptions): Entry {
    const own = this.#byCaller.get(caller);
    if (own !== undefined && own.size >= this.#config.maxSessionsPerCaller) this.#remove(own.values().next().value!);
    if (this.#entries.size >= this.#config.maxSessions) this.#evictFromLargestCaller(caller);
    const session = this.#create({ ...options, caller, onShutdown: () => this.#forget(key) });
    const entry: Entry = { key, caller, session, lastUsed: Date.now() };
    this.#entries.set(key, entry);
    this.#byCaller.set(caller, (this.#byCaller.get(caller) ?? new Map<string, Entry>()).set(key, entry));
    return entry;
  }

  #evictFromLargestCaller(opener: string): void {
    let largest = this.#byCaller.get(opener);
    for (const own of this.#byCaller.values()) if (own.size > (largest?.size ?? 0)) largest = own;
    const victim = largest?.values().next().value;
    if (victim !== undefined) this.#remove(victim);
  }

  #touch(entry: Entry): Entry {
    entry.lastUsed = Date.now();
    // Map order is recency order: re-inserting keeps the least recently used first.
    this.#entries.delete(entry.key);
    this.#entries.set(entry.key, entry);
    const own = this.#byCaller.get(entry.caller);
    own?.delete(entry.key);
    own?.set(entry.key, entry);
    return entry;
  }

  #expire(): void {
    const horizon = Date.now() - this.#config.idleMs;
    for (const entry of this.#entries.values()) {
      if (entry.lastUsed > horizon) break;
      this.#remove(entry);
    }
  }

  #forget(key: string): void {
    const entry = this.#entries.get(key);
    if (entry !== undefined) this.#remove(entry);
  }

  #remove(entry: Entry): void {
    this.#entries.delete(entry.key);
    const own = this.#byCaller.get(entry.caller);
    own?.delete(entry.key);
    if (own?.size === 0) this.#byCaller.delete(entry.caller);
  }
}

// A NUL cannot occur in a header value or a path segment, so the two namespaces never meet.
const tokenKey = (caller: string, token: string): string => `${caller}\0t\0${token}`;
const namedKey = (caller: string, name: string): string => `${caller}\0n\0${name}`;
