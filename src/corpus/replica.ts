import { RpcError } from '../protocol/errors.js';
import { orAfter } from '../protocol/or-after.js';
import type { Logger } from '../protocol/logger.js';
import type { Changes } from './store/changes.js';
import { StoreError } from './store/dir-lock.js';
import { Follower } from './store/postgres/follower.js';
import { isPassing, unavailable } from './store/postgres/failures.js';
import { PostgresStore, type Committed } from './store/postgres/postgres-store.js';
import { isSpaceGone, PUBLIC_SPACE, type StoreSpace } from './store/postgres/schema.js';
import type { PostgresSeen, SeenBounds } from './store/postgres/seen.js';
import { sessionIdOf, type PostgresSessions } from './store/postgres/sessions.js';
import type { Idempotency, NewDocument } from './store/writes.js';

/** What the replica brings up to date: the local corpus (its SQLite snapshot and the indexes derived from it). */
export interface ReplicaTarget {
  /** The seq of the last write applied here. */
  readonly seq: number;
  getMeta(key: string): string | undefined;
  setMeta(key: string, value: string): void;
  /** Applies changes to the snapshot and the indexes, after every earlier local write (in seq order). */
  apply(changes: Changes): Promise<void>;
}

export interface ReplicaOptions {
  readonly url: string;
  /** The corpus's space in the store (docs/tenants.md): the default corpus's unless named. */
  readonly space?: StoreSpace | undefined;
  /** The fallback poll of the store's head (a NOTIFY can be lost with its connection). */
  readonly pollMs: number;
  /** The encoder every replica must share (a query embedded by one model cannot search another's vectors). */
  readonly encoder: string;
  /** Called once if the corpus's tables are found gone (a named corpus dropped from its store): nothing is served. */
  readonly gone?: (reason: string) => void;
}

/** Who hears of HTTP sessions ended on any replica (transport/http-sessions.ts, structurally). */
export interface SessionWatcher {
  ended(id: string): void;
  unheard(): void;
}

/** How long a write waits to be applied here after its commit before its answer says it is not yet (§7.10). */
const APPLY_WAIT_MS = 10_000;
const RETRY_MS = { first: 250, most: 5_000 };
/** The fallback poll of a named corpus, at least: NOTIFY wakes it at once, and its pool's connection idles out. */
const NAMED_POLL_MS = 10_000;
/** How long close() waits for the store to let go. */
const CLOSE_WAIT_MS = 5_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Deferred {
  readonly promise: Promise<string | undefined>;
  readonly resolve: (reason: string | undefined) => void;
}

function deferred(): Deferred {
  let resolve!: (reason: string | undefined) => void;
  const promise = new Promise<string | undefined>((settle) => (resolve = settle));
  return { promise, resolve };
}

/**
 * A replica of the corpus of record in PostgreSQL. Writes go to the store (one transaction each, in commit order) and
 * are answered once applied here (read-your-writes on the replica that took them); every replica tails the store —
 * woken by NOTIFY, reading `seq > applied` — so all of them reach the same state, with the same `indexVersion`, within
 * the lag it exports. Reads never touch the store: they are served from the local snapshot and indexes, and keep
 * being served while the database is away.
 */
export class Replica {
  #store: PostgresStore | undefined;
  #follower: Follower | undefined;
  #running: Promise<void> | undefined;
  #queued: Promise<void> | undefined;
  /** Failures reported and not yet recovered from (each logged once). */
  readonly #failing = new Set<string>();
  #closed = false;
  /** The corpus's space in the store: the default corpus's unless named. */
  readonly #space: StoreSpace;
  /** Whether the corpus's tables were found gone (told once). */
  #gone = false;
  /** Whether start() has ended; why it cannot reach the store while it cannot; who waits to hear that. */
  #started = false;
  #unreachable: string | undefined;
  #reachability: Deferred | undefined;
  /** Told of HTTP sessions ended on any replica (one per HTTP listener built). */
  readonly #sessionWatchers = new Set<SessionWatcher>();
  /** Seconds from the commit of the last write read here to the moment it was read; writes the store is ahead by. */
  lagSeconds = 0;
  behind = 0;

  constructor(
    private readonly options: ReplicaOptions,
    private readonly target: ReplicaTarget,
    private readonly log: Logger,
  ) {
    this.#space = options.space ?? PUBLIC_SPACE;
  }

  /**
   * Connects (retrying while the database is away), checks that the local snapshot belongs to this store and the
   * encoder to its corpus, and catches up to the head: the replica serves only once this resolves. Meanwhile
   * `unreachable` says why the store cannot be reached, for requests to be refused at once rather than wait.
   */
  async start(): Promise<void> {
    try {
      const store = await this.#connect();
      while (store !== undefined && !this.#closed) {
        try {
          await this.catchUp();
          break;
        } catch (error) {
          this.#away((error as Error).message);
          await sleep(RETRY_MS.first);
        }
      }
    } finally {
      this.#startEnded();
    }
    if (this.#closed) return;
    this.#follower = new Follower({
      url: this.options.url,
      space: this.#space,
      // A named corpus polls less often (docs/tenants.md, connections): its pool's connection is let go between polls.
      pollMs: this.#space.id === '' ? this.options.pollMs : Math.max(this.options.pollMs, NAMED_POLL_MS),
      wake: () => void this.catchUp().catch((error: unknown) => this.#failed(error)),
      onError: (reason) => this.#report(`listen: ${reason}`),
      sessionEnded: (id) => this.#sessionWatchers.forEach((watcher) => watcher.ended(id)),
      listening: () => this.#sessionWatchers.forEach((watcher) => watcher.unheard()),
    });
  }

  /**
   * The store, once it is reached and its identity checked; undefined when closed first. Failing to connect is
   * retried with a doubling wait; so is a check cut short by the database going away (but not one that fails).
   */
  async #connect(): Promise<PostgresStore | undefined> {
    for (let wait = RETRY_MS.first; !this.#closed; wait = Math.min(wait * 2, RETRY_MS.most)) {
      try {
        this.#store ??= await PostgresStore.open(this.options.url, this.#space);
      } catch (error) {
        // Only a database away is waited for: a schema gone or newer than this build is no passing fault.
        if (!isPassing(error)) throw this.#goneOr(error);
        this.#away((error as Error).message);
        await sleep(wait);
        continue;
      }
      try {
        await this.#checkIdentity(this.#store);
        this.#unreachable = undefined;
        return this.#store;
      } catch (error) {
        if (!isPassing(error)) throw error;
        this.#away((error as Error).message);
        await sleep(wait);
      }
    }
    return undefined;
  }

  /** While start() cannot reach the store: why (the last failure), else undefined. */
  get unreachable(): string | undefined {
    return this.#unreachable;
  }

  /**
   * Resolves with the reason as soon as start() finds the store unreachable (at once if it is now), or with undefined
   * once start() has ended: a request waiting for the replica to start waits for whichever comes first.
   */
  untilUnreachable(): Promise<string | undefined> {
    if (this.#unreachable !== undefined || this.#started) return Promise.resolve(this.#unreachable);
    this.#reachability ??= deferred();
    return this.#reachability.promise;
  }

  /** start() could not reach the store: say so to the waiting requests (and log it once). */
  #away(reason: string): void {
    this.#report(reason, 'replica: cannot reach the store of record to start; requests answer -32010 until it can');
    this.#unreachable = reason;
    this.#settleWaiters(reason);
  }

  #startEnded(): void {
    this.#started = true;
    this.#unreachable = undefined;
    this.#settleWaiters(undefined);
  }

  #settleWaiters(reason: string | undefined): void {
    this.#reachability?.resolve(reason);
    this.#reachability = undefined;
  }

  /** The local snapshot must come from this store, and not be ahead of it; the encoder must be the corpus's. */
  async #checkIdentity(store: PostgresStore): Promise<void> {
    const id = (await store.meta('store'))!;
    const upstream = this.target.getMeta('upstream');
    const head = await store.head();
    if (upstream === undefined && this.target.seq > 0) {
      throw new StoreError('the data dir holds a corpus of its own: a replica needs an empty data dir (or its own)');
    }
    if ((upstream !== undefined && upstream !== id) || this.target.seq > head) {
      throw new StoreError(
        `the data dir's snapshot (at ${this.target.seq}) is not of this store (at ${head}): remove it to rebuild it`,
      );
    }
    const pruned = Number((await store.meta('pruned_through')) ?? 0);
    if (this.target.seq > 0 && this.target.seq < pruned) {
      throw new StoreError(
        `the data dir's snapshot (at ${this.target.seq}) is older than the store's log (pruned through ${pruned}): ` +
          'remove it to rebuild it from the store',
      );
    }
    if (upstream === undefined) this.target.setMeta('upstream', id);
    const encoder = await store.claimMeta('encoder', this.options.encoder);
    if (encoder !== this.options.encoder) {
      throw new StoreError(
        `the store was embedded with ${encoder}, but this replica's encoder is ${this.options.encoder}`,
      );
    }
  }

  /** Applies what the store committed after this replica's seq; one at a time, a call during one runs once after. */
  catchUp(): Promise<void> {
    if (this.#queued !== undefined) return this.#queued;
    if (this.#running === undefined) {
      this.#running = this.#run().finally(() => (this.#running = undefined));
      return this.#running;
    }
    const after = this.#running.catch(() => undefined);
    this.#queued = after.then(() => {
      this.#queued = undefined;
      return this.catchUp();
    });
    return this.#queued;
  }

  async #run(): Promise<void> {
    const store = this.#connected();
    for (;;) {
      const changes = await store.changesSince(this.target.seq);
      if (changes.through > this.target.seq) {
        await this.target.apply(changes);
        this.lagSeconds = changes.lagSeconds;
      }
      this.behind = changes.head - this.target.seq;
      if (this.#failing.size > 0) this.log.info({ seq: this.target.seq }, 'replica: following the store again');
      this.#failing.clear();
      if (changes.through >= changes.head) return;
    }
  }

  /** Resolves once this replica has applied write `seq` (read-your-writes); -32010 saying so past APPLY_WAIT_MS. */
  async caughtUpTo(seq: number): Promise<void> {
    const deadline = Date.now() + APPLY_WAIT_MS;
    while (this.target.seq < seq) {
      if (Date.now() > deadline) {
        throw RpcError.backendUnavailable(
          `the write committed as indexVersion ${seq}, but this replica has not applied it yet (at ${this.target.seq})`,
          1_000,
        );
      }
      await this.catchUp().catch(() => sleep(RETRY_MS.first));
    }
  }

  idempotentResult(key: string): Promise<Record<string, unknown> | undefined> {
    return this.#connected()
      .idempotentResult(key)
      .catch((error: unknown) => {
        throw unavailable(this.#goneOr(error), 'nothing was applied');
      });
  }

  /** `signal`: the caller's, which abandons a write the database does not answer in time (§13.1). */
  upsert(documents: readonly NewDocument[], idempotency?: Idempotency, signal?: AbortSignal): Promise<Committed> {
    return this.#connected()
      .upsert(documents, idempotency, signal)
      .catch((error: unknown) => {
        throw this.#goneOr(error);
      });
  }

  delete(ids: readonly string[], signal?: AbortSignal): Promise<Committed & { deletedIds: string[] }> {
    return this.#connected()
      .delete(ids, signal)
      .catch((error: unknown) => {
        throw this.#goneOr(error);
      });
  }

  /** A catch-up that failed: the corpus gone, or (logged once) the store away. */
  #failed(error: unknown): void {
    if (this.#goneOr(error) === error) this.#report((error as Error).message);
  }

  /**
   * `error`, unless it says the corpus's tables are gone (a named corpus dropped): then `gone` is told once, and what
   * the caller sees is -32010 saying so (nothing was applied: the tables the write needed are not there).
   */
  #goneOr(error: unknown): unknown {
    // Once gone, whatever fails says so (a write in flight at the drop fails on a pool ended with the corpus).
    if (!this.#gone && !isSpaceGone(this.#space, error)) return error;
    const reason = `the corpus is no longer in its store of record (dropped): ${(error as Error).message}`;
    if (!this.#gone) {
      this.#gone = true;
      this.options.gone?.(reason);
    }
    return RpcError.backendUnavailable(`${reason}; nothing was applied`, 1000);
  }

  /**
   * HTTP sessions shared with the other replicas (§5.2); each call fails while the store is not connected yet. Their
   * ends are told to the watchers as the store notifies them (and, at each reconnect, that some may have gone unheard).
   */
  readonly sessions = {
    load: (key: string, idleMs: number) => this.#connected().sessions.load(key, idleMs),
    save: (...args: Parameters<PostgresSessions['save']>) => this.#connected().sessions.save(...args),
    touch: (key: string) => this.#connected().sessions.touch(key),
    forget: (key: string) => this.#connected().sessions.forget(key),
    held: (keys: readonly string[]) => this.#connected().sessions.held(keys),
    idOf: sessionIdOf,
    watch: (watcher: SessionWatcher) => void this.#sessionWatchers.add(watcher),
  };

  /**
   * §7.7.3 retrieve sessions shared with the other replicas. A store that cannot answer is -32010 for a retrieve with
   * a `sessionId` (it cannot know what the session was shown); retrieves without one never touch the store.
   */
  seen(bounds: SeenBounds) {
    const failed = (error: unknown) => {
      throw unavailable(error, 'the session cannot be read or remembered');
    };
    let shared: PostgresSeen | undefined;
    const sessions = () => (shared ??= this.#connected().seen(bounds));
    return {
      seen: (caller: string, sessionId: string, mark?: number) =>
        sessions().seen(caller, sessionId, mark).catch(failed),
      remember: (caller: string, sessionId: string, ids: readonly string[]) =>
        sessions().remember(caller, sessionId, ids).catch(failed),
    };
  }

  #connected(): PostgresStore {
    if (this.#store === undefined) {
      throw RpcError.backendUnavailable('the store of record is not connected yet; nothing was applied', 1_000);
    }
    return this.#store;
  }

  /** Logs a failure to follow the store once, not at every poll while it lasts. */
  #report(
    reason: string,
    message = 'replica: cannot reach the store of record; serving reads from the local snapshot',
  ): void {
    if (this.#failing.has(reason)) return;
    this.#failing.add(reason);
    this.log.warn({ reason }, message);
  }

  /**
   * Stops following and lets go of the store: waiting at most CLOSE_WAIT_MS for a catch-up in flight and for the
   * connections to end (a database that hangs must not hold a process's shutdown).
   */
  async close(): Promise<void> {
    this.#closed = true;
    this.#settleWaiters(undefined);
    await this.#follower?.close();
    const ending = (async () => {
      await this.#running?.catch(() => undefined);
      await this.#store?.close();
    })();
    await orAfter(ending, CLOSE_WAIT_MS, () => undefined);
  }
}
