import { randomBytes } from 'node:crypto';
import { RpcError } from '../protocol/errors.js';
import { setMostRecent } from '../protocol/lru-map.js';
import type { Session, SessionOptions, SessionState } from '../protocol/session.js';

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
 * and past `maxSessions` the caller holding the most (the one opening, on a tie) loses its least recently used, or,
 * when no caller holds more than the opener plus one, the new session is refused (-32011): a flood of sessions, from
 * one caller or from many, evicts the flooders', never a caller's few.
 */
export interface HttpSessionConfig {
  idleMs: number;
  maxSessions: number;
  maxSessionsPerCaller: number;
}

/**
 * Where replicas behind one load balancer keep what their HTTP sessions negotiated (the store of record), so that a
 * session opened on one continues on any other: a request with a token this replica does not hold looks it up there.
 * Keys are caller-scoped (as here); a session unused for `idleMs` is gone there as here. A session shut down on any
 * replica is forgotten there and every replica is told (`watch`, naming it by `idOf` its key), so the ones holding it
 * drop it; a replica that may have missed being told (`unheard`) keeps only those the store still `held`.
 */
export interface SharedSessions {
  load(key: string, idleMs: number): Promise<SessionState | undefined>;
  save(key: string, caller: string, state: SessionState, options: { idleMs: number; perCaller: number }): Promise<void>;
  touch(key: string): Promise<void>;
  forget(key: string): Promise<void>;
  held(keys: readonly string[]): Promise<ReadonlySet<string>>;
  idOf(key: string): string;
  watch(watcher: { ended(id: string): void; unheard(): void }): void;
}

/** What a request names as its session. */
export type SessionRef = { token: string } | { name: string } | undefined;

interface Entry {
  key: string;
  caller: string;
  session: Session;
  lastUsed: number;
  /** When the shared store last heard of it (saved at initialize, touched now and then); undefined: not yet. */
  sharedAt?: number | undefined;
  /** Its name in what the shared store tells (`SharedSessions.idOf`), once it is there. */
  sharedId?: string | undefined;
}

export class HttpSessionStore {
  readonly #create: (options: SessionOptions) => Session;
  readonly #config: HttpSessionConfig;
  /** Every kept session, least recently used first. */
  readonly #entries = new Map<string, Entry>();
  /** Each caller's sessions, least recently used first. */
  readonly #byCaller = new Map<string, Map<string, Entry>>();
  readonly #bySession = new WeakMap<Session, Entry>();
  readonly #shared: SharedSessions | undefined;
  /** The sessions in the shared store, by their name there (`SharedSessions.idOf`). */
  readonly #byShared = new Map<string, Entry>();
  /** How many ends the shared store has told of: a restore that saw it move while loading checks it was not one. */
  #endsHeard = 0;

  constructor(create: (options: SessionOptions) => Session, config: HttpSessionConfig, shared?: SharedSessions) {
    this.#create = create;
    this.#config = config;
    this.#shared = shared;
    shared?.watch({ ended: (id) => this.#endedElsewhere(id), unheard: () => void this.#recheck(shared) });
  }

  /** §5.2: a session shut down on another replica ends here too. */
  #endedElsewhere(id: string): void {
    this.#endsHeard++;
    const entry = this.#byShared.get(id);
    if (entry !== undefined) this.#remove(entry);
  }

  /** Ends may have gone unheard (no connection listened): keep only the shared sessions the store still holds. */
  async #recheck(shared: SharedSessions, entries = [...this.#byShared.values()]): Promise<void> {
    if (entries.length === 0) return;
    // A store that cannot answer now is asked again at the next reconnect.
    const held = await shared.held(entries.map((entry) => entry.key)).catch(() => undefined);
    if (held === undefined) return;
    for (const entry of entries) {
      if (!held.has(entry.key) && this.#entries.get(entry.key) === entry) this.#remove(entry);
    }
  }

  /**
   * resolve(), after looking in the shared store for a session this replica does not hold: one another replica
   * opened continues here as it was negotiated (§13.2). A store that cannot answer is -32010: the session may exist.
   */
  find(ref: SessionRef, caller: string, isInitialize: boolean): Session | RpcError | Promise<Session | RpcError> {
    const shared = this.#shared;
    // Without a shared store, or without a session named, the answer is known at once.
    if (shared === undefined || ref === undefined) return this.resolve(ref, caller, isInitialize);
    return this.#findShared(shared, ref, caller, isInitialize);
  }

  async #findShared(
    shared: SharedSessions,
    ref: NonNullable<SessionRef>,
    caller: string,
    isInitialize: boolean,
  ): Promise<Session | RpcError> {
    const key = keyOf(ref, caller);
    if (!this.#entries.has(key)) {
      let restored: SessionState | undefined;
      const endsHeard = this.#endsHeard;
      try {
        restored = await shared.load(key, this.#config.idleMs);
      } catch {
        return RpcError.backendUnavailable('the shared session store cannot be read; retry', 1000);
      }
      if (restored !== undefined && !this.#entries.has(key)) {
        const opened = this.#open(caller, key, { ...('token' in ref ? { token: ref.token } : {}), restored });
        // Its end may have been told while it loaded (before it was held here to be dropped): ask the store again.
        const entry = opened instanceof RpcError ? undefined : this.#bySession.get(opened);
        if (entry !== undefined && this.#endsHeard !== endsHeard) void this.#recheck(shared, [entry]);
        return opened;
      }
    }
    return this.resolve(ref, caller, isInitialize);
  }

  /**
   * After a request in `session`: an initialized session is saved to the shared store before its answer goes (a
   * client's next request may reach another replica), and its last use is passed on now and then (a quarter of the
   * idle time), not at every request. Undefined when there is nothing to share (no shared store, or a session that
   * negotiated nothing): no turn of the microtask queue for it.
   */
  share(session: Session): Promise<void> | undefined {
    const entry = this.#bySession.get(session);
    const state = session.state;
    if (this.#shared === undefined || entry === undefined || state === undefined) return undefined;
    return this.#share(this.#shared, entry, session, state);
  }

  async #share(shared: SharedSessions, entry: Entry, session: Session, state: SessionState): Promise<void> {
    // Ended here: gone from the shared store before `shutdown` is answered, so no replica continues it after.
    if (session.shutDown) return void (await shared.forget(entry.key).catch(() => undefined));
    const now = Date.now();
    if (entry.sharedAt === undefined) {
      const { idleMs, maxSessionsPerCaller: perCaller } = this.#config;
      // A store that cannot take it leaves the session to this replica until a later request saves it.
      const saved = await shared.save(entry.key, entry.caller, state, { idleMs, perCaller }).then(
        () => true,
        () => false,
      );
      if (saved) this.#shareAs(entry, now);
    } else if (now - entry.sharedAt > this.#config.idleMs / 4) {
      entry.sharedAt = now;
      void shared.touch(entry.key).catch(() => undefined);
    }
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The session a request runs in, or the RpcError to answer it with. */
  resolve(ref: SessionRef, caller: string, isInitialize: boolean): Session | RpcError {
    this.#expire();
    if (ref === undefined) return this.#create({ implicit: true, caller });
    const key = keyOf(ref, caller);
    const entry = this.#entries.get(key);
    if (entry !== undefined) return this.#touch(entry).session;
    if ('name' in ref) return this.#open(caller, key, {});
    if (isInitialize) return this.#openPrivate(caller);
    return RpcError.notInitialized('unknown or expired RCP-Session; send initialize to open a new session');
  }

  /** A session with a fresh unguessable token, returned to the client in `initialize.result._meta.session`. */
  #openPrivate(caller: string): Session | RpcError {
    const token = randomBytes(18).toString('base64url');
    return this.#open(caller, tokenKey(caller, token), { token });
  }

  #open(caller: string, key: string, options: SessionOptions): Session | RpcError {
    const own = this.#byCaller.get(caller);
    if (own !== undefined && own.size >= this.#config.maxSessionsPerCaller) this.#remove(own.values().next().value!);
    if (this.#entries.size >= this.#config.maxSessions) {
      const victim = this.#evictable(caller);
      if (victim === undefined) return this.#full();
      this.#remove(victim);
    }
    const onShutdown = () => {
      this.#forget(key);
      void this.#shared?.forget(key).catch(() => undefined);
    };
    const session = this.#create({ ...options, caller, onShutdown });
    const entry: Entry = { key, caller, session, lastUsed: Date.now() };
    this.#entries.set(key, entry);
    this.#bySession.set(session, entry);
    this.#byCaller.set(caller, (this.#byCaller.get(caller) ?? new Map<string, Entry>()).set(key, entry));
    // A restored session is in the shared store already.
    if (options.restored !== undefined) this.#shareAs(entry, Date.now());
    return session;
  }

  /**
   * The session to give up for the opener's new one: the least recently used of the caller holding the most — the
   * opener's own on a tie — but never that of a caller holding no more than the opener's share plus one. So many
   * callers (addresses) opening one session each cannot push out a caller's few: the store refuses them instead.
   */
  #evictable(opener: string): Entry | undefined {
    const mine = this.#byCaller.get(opener);
    let largest = mine;
    for (const own of this.#byCaller.values()) if (own.size > (largest?.size ?? 0)) largest = own;
    if (largest === undefined || (largest !== mine && largest.size <= (mine?.size ?? 0) + 1)) return undefined;
    return largest.values().next().value;
  }

  /** §15.5: -32011, to retry when the least recently used session would expire. */
  #full(): RpcError {
    const oldest = this.#entries.values().next().value;
    const wait = oldest === undefined ? 1000 : Math.max(1000, oldest.lastUsed + this.#config.idleMs - Date.now());
    return RpcError.rateLimited(wait, `${this.#entries.size} sessions are open; none can be given up for a new one`);
  }

  #touch(entry: Entry): Entry {
    entry.lastUsed = Date.now();
    setMostRecent(this.#entries, entry.key, entry);
    const own = this.#byCaller.get(entry.caller);
    if (own !== undefined) setMostRecent(own, entry.key, entry);
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

  /** The entry is in the shared store (as of `at`), and listed by its name there. */
  #shareAs(entry: Entry, at: number): void {
    entry.sharedAt = at;
    entry.sharedId ??= this.#shared?.idOf(entry.key);
    if (entry.sharedId === undefined || this.#entries.get(entry.key) !== entry) return;
    this.#byShared.set(entry.sharedId, entry);
  }

  #remove(entry: Entry): void {
    if (this.#byShared.get(entry.sharedId ?? '') === entry) this.#byShared.delete(entry.sharedId!);
    this.#entries.delete(entry.key);
    const own = this.#byCaller.get(entry.caller);
    own?.delete(entry.key);
    if (own?.size === 0) this.#byCaller.delete(entry.caller);
  }
}

// A NUL cannot occur in a header value or a path segment, so the two namespaces never meet.
const tokenKey = (caller: string, token: string): string => `${caller}\0t\0${token}`;
const namedKey = (caller: string, name: string): string => `${caller}\0n\0${name}`;
const keyOf = (ref: NonNullable<SessionRef>, caller: string): string =>
  'name' in ref ? namedKey(caller, ref.name) : tokenKey(caller, ref.token);
