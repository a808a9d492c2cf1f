import { randomBytes } from 'node:crypto';
import { RpcError } from '../protocol/errors.js';
import type { Session, SessionOptions } from '../protocol/session.js';

/**
 * How HTTP requests map to RCP sessions (§5.2):
 * - `caller` (default): a request without an `RCP-Session` header runs in its caller's shared session
 *   (keyed by the caller: its API key once authentication exists, else its address), so the §13 lifecycle
 *   holds over plain HTTP: -32001 before initialize, -32600 for a second initialize. A request with
 *   `RCP-Session: <token>` runs in that session; `initialize` with a token the server does not know opens a new
 *   private session. Every session's token is returned in `initialize.result._meta.session`.
 * - `stateless`: every session is implicitly initialized at the advertised capabilities and `initialize`/`info`
 *   are answered idempotently (§5.2); gated methods that are not advertised are still -32003.
 * Sessions expire after `idleMs` without a request, and at most `maxSessions` are kept (least recently used
 * dropped first), so memory is bounded whatever clients do. `shutdown` ends the session, not the server.
 */
export type HttpSessionMode = 'caller' | 'stateless';

export interface HttpSessionConfig {
  mode: HttpSessionMode;
  idleMs: number;
  maxSessions: number;
}

interface Entry {
  session: Session;
  token: string;
  callerKey: string | undefined;
  lastUsed: number;
}

export class HttpSessionStore {
  readonly #create: (options: SessionOptions) => Session;
  readonly #config: HttpSessionConfig;
  readonly #byToken = new Map<string, Entry>();
  readonly #byCaller = new Map<string, Entry>();

  constructor(create: (options: SessionOptions) => Session, config: HttpSessionConfig) {
    this.#create = create;
    this.#config = config;
  }

  get size(): number {
    return this.#byToken.size;
  }

  /** The session a request runs in, or the RpcError to answer it with. */
  resolve(token: string | undefined, callerKey: string, isInitialize: boolean): Session | RpcError {
    this.#expire();
    const entry = token === undefined ? undefined : this.#byToken.get(token);
    if (entry !== undefined) return this.#touch(entry).session;
    // Stateless mode never answers -32001: a stale token just falls back to the caller's implicit session.
    if (token === undefined || this.#config.mode === 'stateless') {
      return this.#touch(this.#byCaller.get(callerKey) ?? this.#open(callerKey)).session;
    }
    if (isInitialize) return this.#open(undefined).session;
    return RpcError.notInitialized('unknown or expired RCP-Session; send initialize to open a new session');
  }

  #open(callerKey: string | undefined): Entry {
    const token = randomBytes(18).toString('base64url');
    const session = this.#create({
      token,
      implicit: this.#config.mode === 'stateless',
      onShutdown: () => this.#forget(token),
    });
    const entry: Entry = { token, callerKey, lastUsed: Date.now(), session };
    this.#byToken.set(token, entry);
    if (callerKey !== undefined) this.#byCaller.set(callerKey, entry);
    while (this.#byToken.size > this.#config.maxSessions) {
      const oldest = this.#byToken.values().next().value;
      if (oldest === undefined) break;
      this.#remove(oldest);
    }
    return entry;
  }

  #touch(entry: Entry): Entry {
    entry.lastUsed = Date.now();
    // Map order is recency order: re-inserting keeps the least recently used first.
    this.#byToken.delete(entry.token);
    this.#byToken.set(entry.token, entry);
    return entry;
  }

  #expire(): void {
    const horizon = Date.now() - this.#config.idleMs;
    for (const entry of this.#byToken.values()) {
      if (entry.lastUsed > horizon) break;
      this.#remove(entry);
    }
  }

  #forget(token: string): void {
    const entry = this.#byToken.get(token);
    if (entry !== undefined) this.#remove(entry);
  }

  #remove(entry: Entry): void {
    this.#byToken.delete(entry.token);
    if (entry.callerKey !== undefined && this.#byCaller.get(entry.callerKey) === entry) {
      this.#byCaller.delete(entry.callerKey);
    }
  }
}
