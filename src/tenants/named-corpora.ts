import { RpcErrorCode } from '../protocol/codes.js';
import { RpcError } from '../protocol/errors.js';
import { DEFAULT_CORPUS } from '../protocol/corpus-name.js';
import type { Logger } from '../protocol/logger.js';
import type { CorpusLanes, HeldLane } from '../transport/corpus-lanes.js';
import type { HttpSessionStore } from '../transport/http-sessions.js';
import { orAfter } from '../protocol/or-after.js';
import type { CorpusShelf } from './shelf.js';

/** A named corpus opened as an engine of its own (app.ts builds it): its sessions, readiness and close. */
export interface CorpusEngine {
  readonly sessions: HttpSessionStore;
  /** Settles when the corpus has opened; resolves to why it cannot serve, if it cannot. */
  readonly opened: Promise<string | undefined>;
  /** Resolves with the reason if its store is found damaged while it is open; otherwise never. */
  readonly damaged: Promise<string>;
  close(): Promise<void>;
}

export interface NamedCorporaOptions {
  /** Where the corpora are kept: the folders of a root, or a store's catalog. */
  readonly shelf: CorpusShelf;
  /** Corpora open at once. */
  readonly maxOpen: number;
  /** A corpus unused this long is closed. */
  readonly idleMs: number;
  /** How long a request waits for its corpus to open; past it, -32010 with retryAfterMs while it goes on opening. */
  readonly openWaitMs: number;
  /** Opens corpus `name` of identity `id` (where its shelf places it). */
  readonly open: (name: string, id: string) => CorpusEngine;
  readonly log: Logger;
}

const OPENING = Symbol('opening');
/** How long a request to an open corpus waits for its shelf to say it is still there. */
const RECHECK_WAIT_MS = 250;

/** Why a corpus was closed: unused too long, its place needed, its store damaged, failed or dropped, the end. */
type Closing = 'idle' | 'room' | 'damaged' | 'failed' | 'dropped' | 'stopping';

interface Open {
  readonly name: string;
  /** Its identity when it was opened: a corpus dropped and made again under its name is another. */
  readonly id: string;
  readonly engine: CorpusEngine;
  /** Requests holding it now: it is never closed under one. */
  holds: number;
  lastUsed: number;
  /** Who last used it (a key's id, else a client's address): room is made among a caller's own first. */
  lastCaller: string;
  /** When it was last found still on its shelf, with its identity (0: not since it was opened), and its changes then. */
  foundAt: number;
  foundChanges: number;
}

/**
 * The named corpora of `corpora.root` served by one process (docs/tenants.md): each opened on its first request, as
 * an engine of its own over the shared models; at most `maxOpen` in memory at once (past it an idle one is closed,
 * the asking caller's own first, or the request is refused -32011 when every one is in use); one unused for `idleMs`
 * is closed, its memory given back, and opened again from its saved files on demand.
 */
export class NamedCorpora implements CorpusLanes {
  readonly #open = new Map<string, Open>();
  readonly #closing = new Map<string, Promise<void>>();
  /** Corpora being dropped: requests for them meanwhile are answered as for a corpus that does not exist. */
  readonly #dropping = new Set<string>();
  readonly #sweep: NodeJS.Timeout;
  #closed = false;

  constructor(private readonly options: NamedCorporaOptions) {
    this.#sweep = setInterval(() => this.#closeIdle(), Math.min(options.idleMs, 60_000) / 2);
    this.#sweep.unref();
  }

  /** Corpora open now. */
  get openCount(): number {
    return this.#open.size;
  }

  async hold(name: string, caller: string): Promise<HeldLane | RpcError | undefined> {
    if (this.#closed || name === DEFAULT_CORPUS || this.#dropping.has(name)) return undefined;
    const entry = this.#held(this.#open.get(name), caller) ?? (await this.#start(name, caller));
    if (entry === undefined || entry instanceof RpcError) return entry;
    const release = () => {
      entry.holds -= 1;
      entry.lastUsed = Date.now();
    };
    const opened = await this.#opened(entry);
    if (opened === OPENING) {
      release();
      return RpcError.backendUnavailable('the corpus is opening; try again', 1000);
    }
    const failed = opened ?? (this.#open.get(name) === entry ? undefined : 'it was closed');
    // Dropped by another process in the moment it was opened, or (in a store) since it was last looked for.
    const gone = failed === undefined && !(await this.#stillThere(entry));
    if (failed === undefined && !gone) return { sessions: entry.engine.sessions, release };
    release();
    // Never closed under another request that holds it (a write in flight may be one): the last one out, or the idle
    // sweep, closes it.
    if (entry.holds === 0) void this.#close(entry, gone ? 'dropped' : 'failed');
    if (gone) return undefined;
    this.options.log.error({ corpus: name, reason: failed }, 'corpus cannot serve');
    return UNAVAILABLE;
  }

  /** Why `entry` cannot serve (undefined: it can), or OPENING when it is not open within `openWaitMs`. */
  #opened(entry: Open): Promise<string | undefined | typeof OPENING> {
    return orAfter(entry.engine.opened, this.options.openWaitMs, () => OPENING);
  }

  /**
   * Whether `entry` is still on its shelf as the corpus that was opened, looked for once in `recheckMs`. A shelf that
   * cannot be read (a store's database away) says nothing: an open corpus goes on serving what it holds.
   */
  async #stillThere(entry: Open): Promise<boolean> {
    const { shelf } = this.options;
    const now = Date.now();
    const changes = shelf.changes;
    if (now - entry.foundAt < shelf.recheckMs && entry.foundChanges === changes) return true;
    // Not waited for long: an open corpus serves on while its shelf is slow to answer (a database that hangs).
    const looked = shelf.find(entry.name).catch(() => entry.id);
    const found = await orAfter(looked, RECHECK_WAIT_MS, () => entry.id);
    if (found !== entry.id) return false;
    entry.foundAt = now;
    entry.foundChanges = changes;
    return true;
  }

  /** Corpus `name`'s identity, undefined if there is none, or -32010 when its shelf cannot be read now. */
  async #find(name: string): Promise<string | undefined | RpcError> {
    try {
      return await this.options.shelf.find(name);
    } catch (error) {
      this.options.log.warn({ corpus: name, err: error }, 'corpora cannot be looked up');
      return SHELF_UNAVAILABLE;
    }
  }

  /** `entry` held by one more request (taken in the same turn as it was found, so it cannot close in between). */
  #held(entry: Open | undefined, caller: string): Open | undefined {
    if (entry === undefined) return undefined;
    entry.holds += 1;
    entry.lastUsed = Date.now();
    entry.lastCaller = caller;
    return entry;
  }

  /** Opens corpus `name`, once it exists and a place is free; undefined when there is no such corpus. */
  async #start(name: string, caller: string): Promise<Open | RpcError | undefined> {
    const { maxOpen } = this.options;
    for (;;) {
      await this.#closing.get(name);
      // Looked for before room is made: a name that is no corpus closes nobody's.
      const found = await this.#find(name);
      if (found === undefined || found instanceof RpcError) return found;
      const room = await this.#makeRoom(caller);
      if (room !== undefined) return room;
      const id = await this.#find(name);
      if (id instanceof RpcError) return id;
      // From here in one turn: two corpora opening at once never both pass the bound, and a corpus dropped during the
      // waits is not made again by opening its store.
      const started = this.#held(this.#open.get(name), caller);
      if (started !== undefined) return started;
      if (this.#dropping.has(name) || id === undefined) return undefined;
      if (this.#inMemory() < maxOpen && !this.#closing.has(name)) return this.#opening(name, id, caller);
    }
  }

  /** Corpus `name` opening, held by the request that opened it. */
  #opening(name: string, id: string, caller: string): Open | RpcError {
    let engine: CorpusEngine;
    try {
      engine = this.options.open(name, id);
    } catch (error) {
      this.options.log.error({ corpus: name, err: error }, 'corpus failed to open');
      return UNAVAILABLE;
    }
    const entry: Open = {
      name,
      id,
      engine,
      holds: 1,
      lastUsed: Date.now(),
      lastCaller: caller,
      foundAt: 0,
      foundChanges: 0,
    };
    this.#open.set(name, entry);
    void entry.engine.damaged.then(async (reason) => {
      this.options.log.error({ corpus: name, reason }, 'corpus store damaged; closed');
      await this.#close(entry, 'damaged');
      // Gone from its shelf (a store's corpus dropped by another process): what this process kept of it goes too.
      if ((await this.options.shelf.find(name).catch(() => id)) !== id) await this.#forget(entry);
    });
    return entry;
  }

  /** Corpora holding memory: those open and those still closing. */
  #inMemory(): number {
    return this.#open.size + this.#closing.size;
  }

  /**
   * A place among the corpora in memory for `caller`: one still closing is waited for; else, at the bound, an idle
   * corpus is closed: the one `caller` used longest ago, if it last used one (a caller going through many corpora
   * makes room among its own), else the one unused longest.
   */
  async #makeRoom(caller: string): Promise<RpcError | undefined> {
    while (this.#inMemory() >= this.options.maxOpen) {
      if (this.#closing.size > 0) {
        await Promise.race(this.#closing.values());
        continue;
      }
      const idle = [...this.#open.values()].filter((entry) => entry.holds === 0);
      const oldest = (entries: Open[]) => entries.sort((a, b) => a.lastUsed - b.lastUsed)[0];
      const victim = oldest(idle.filter((entry) => entry.lastCaller === caller)) ?? oldest(idle);
      if (victim === undefined) return RpcError.rateLimited(1000, 'every open corpus is in use; try again');
      await this.#close(victim, 'room');
    }
    return undefined;
  }

  #closeIdle(): void {
    const before = Date.now() - this.options.idleMs;
    for (const entry of this.#open.values()) {
      if (entry.holds === 0 && entry.lastUsed < before) void this.#close(entry, 'idle');
    }
  }

  /** Closes an open corpus (once); a request for it meanwhile waits and opens it again. */
  #close(entry: Open, why: Closing): Promise<void> {
    if (this.#open.get(entry.name) !== entry) return this.#closing.get(entry.name) ?? Promise.resolve();
    this.#open.delete(entry.name);
    const closing = entry.engine
      .close()
      .then(() => this.options.log.info({ corpus: entry.name, why }, 'corpus closed'))
      .then(() => (why === 'dropped' ? this.#forget(entry) : undefined))
      .catch((error: unknown) => this.options.log.error({ corpus: entry.name, err: error }, 'corpus close failed'))
      .finally(() => this.#closing.delete(entry.name));
    this.#closing.set(entry.name, closing);
    return closing;
  }

  /** Removes what this process kept of `entry`, dropped and closed (a store's corpus: its replica here). */
  async #forget(entry: Open): Promise<void> {
    await this.options.shelf
      .forget(entry.id)
      .catch((error: unknown) => this.options.log.warn({ corpus: entry.name, err: error }, 'replica not removed'));
  }

  /** Whether corpus `name` is served; when its shelf cannot be read now, true: its request is then answered -32010. */
  async exists(name: string): Promise<boolean> {
    if (this.#closed || this.#dropping.has(name)) return false;
    return this.#open.has(name) || (await this.options.shelf.find(name).catch(() => name)) !== undefined;
  }

  /** Whether corpus `name` is open in this process. */
  isOpen(name: string): boolean {
    return this.#open.has(name);
  }

  /**
   * Drops corpus `name` (docs/tenants.md): refused while a request holds it (a write in flight among them), else
   * removed by its shelf, which refuses when another process has it open (a folder) or writes to it (a store), and
   * closed here. A folder is closed here first (this process's own hold on it would refuse the drop), so a refused
   * drop of a folder has closed it (it opens again at its next request); a store's corpus is closed once dropped.
   * Requests for it meanwhile are answered as for a corpus that does not exist.
   */
  async drop(name: string): Promise<Readonly<Record<string, number>>> {
    const entry = this.#open.get(name);
    if ((entry?.holds ?? 0) > 0) throw new CorpusInUse(name);
    const { shelf } = this.options;
    this.#dropping.add(name);
    try {
      const id = entry === undefined ? await shelf.find(name) : undefined;
      if (!shelf.dropsOpen && entry !== undefined) await this.#close(entry, 'dropped');
      await this.#closing.get(name);
      const dropped = await shelf.drop(name);
      if (entry !== undefined) await this.#close(entry, 'dropped');
      await this.#closing.get(name);
      // What this process kept of it goes before the drop is answered, whichever close came first: a store's corpus
      // found gone under its open engine is closed as damaged, its replica removed only after that close.
      const gone = entry?.id ?? id;
      if (gone !== undefined) await shelf.forget(gone);
      return dropped;
    } finally {
      this.#dropping.delete(name);
    }
  }

  /** Closes every open corpus (the process is stopping). */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#sweep);
    await Promise.all([...this.#open.values()].map((entry) => this.#close(entry, 'stopping')));
    await Promise.all([...this.#closing.values()]);
  }
}

/**
 * -32010: the corpus exists but cannot serve now (it failed to open, or was closed under the request). Why is in the
 * operator's log: the reason names files of the server's.
 */
const UNAVAILABLE = new RpcError(RpcErrorCode.BackendUnavailable, 'corpus unavailable', {
  detail: "the corpus cannot be opened now; the operator's log says why",
  retryable: true,
});

/**
 * -32010: where the corpora are kept cannot be read now (a store's database away). Every name gets it alike, one that
 * exists or not, so it tells a caller nothing of other tenants.
 */
const SHELF_UNAVAILABLE = RpcError.backendUnavailable('the store of the corpora cannot be reached; try again', 1000);

/** A corpus a request holds now (a write in flight among them): it is not dropped under it. */
export class CorpusInUse extends Error {
  override name = 'CorpusInUse';

  constructor(readonly corpus: string) {
    super(`corpus '${corpus}' has requests in flight; drop it when they are answered`);
  }
}
