import pg from 'pg';
import type { StoreSpace } from './schema.js';

export interface FollowerOptions {
  readonly url: string;
  /** The corpus's space in the store: the channels listened on. */
  readonly space: StoreSpace;
  /** Called when another replica may have committed a write: at each NOTIFY, each poll and each reconnect. */
  readonly wake: () => void;
  /** A poll however quiet the channel: a NOTIFY lost with a dropped connection is found within this. */
  readonly pollMs: number;
  readonly onError: (reason: string) => void;
  /** Called with the `sessionIdOf` of each HTTP session ended on any replica. */
  readonly sessionEnded: (id: string) => void;
  /** Called at each (re)connect: sessions ended while no connection listened were never notified here. */
  readonly listening: () => void;
}

const RECONNECT_MS = { first: 250, most: 5_000 };

/**
 * Tails the store of record for one corpus: listens on its writes and sessions channels, polls as a fallback, and
 * says "look" at each notification, poll and reconnect. It only says "look": what to read is always `seq > last
 * applied`, so a lost or repeated wake-up loses or repeats nothing; and at each (re)connect it says that ended sessions
 * may have gone unheard. The listening connection is the process's one for that database (ListeningConnection),
 * shared by every corpus open in it: a process serving many corpora of one store holds one, not one per corpus.
 */
export class Follower {
  readonly #poll: NodeJS.Timeout;
  readonly #leave: () => void;

  constructor(private readonly options: FollowerOptions) {
    this.#poll = setInterval(options.wake, options.pollMs);
    this.#poll.unref();
    const { writesChannel, sessionsChannel } = options.space;
    this.#leave = ListeningConnection.join(options.url, {
      channels: [writesChannel, sessionsChannel],
      notified: (channel, payload) => {
        if (channel === sessionsChannel) options.sessionEnded(payload);
        else options.wake();
      },
      // Writes committed and sessions ended while no connection listened were never notified here.
      connected: () => {
        options.wake();
        options.listening();
      },
      lost: options.onError,
    });
  }

  close(): Promise<void> {
    clearInterval(this.#poll);
    this.#leave();
    return Promise.resolve();
  }
}

/**
 * Calls `changed` at each notification on `channel` of the database at `url`, and at each (re)connect (one may have
 * gone unheard), on the process's listening connection; until the returned function is called.
 */
export function listenTo(url: string, channel: string, changed: () => void): () => void {
  return ListeningConnection.join(url, { channels: [channel], notified: changed, connected: changed, lost: () => {} });
}

/** One corpus's part of a listening connection. */
interface Listener {
  readonly channels: readonly string[];
  notified(channel: string, payload: string): void;
  connected(): void;
  lost(reason: string): void;
}

/**
 * The process's one LISTEN connection to a database (a pooled one cannot hold a LISTEN), shared by the followers of
 * every corpus of that store open here; made with the first, ended with the last. It reconnects with a doubling
 * backoff when the database restarts or fails over, listening again on every channel of the followers it has.
 */
class ListeningConnection {
  static readonly #open = new Map<string, ListeningConnection>();
  readonly #listeners = new Set<Listener>();
  #client: pg.Client | undefined;
  #closed = false;
  #backoff = RECONNECT_MS.first;
  #retry: NodeJS.Timeout | undefined;

  private constructor(private readonly url: string) {}

  /** `listener` listening on `url`'s connection until the returned function is called. */
  static join(url: string, listener: Listener): () => void {
    let connection = ListeningConnection.#open.get(url);
    if (connection === undefined) {
      connection = new ListeningConnection(url);
      ListeningConnection.#open.set(url, connection);
      void connection.#connect();
    }
    connection.#add(listener);
    return () => connection.#remove(listener);
  }

  #add(listener: Listener): void {
    this.#listeners.add(listener);
    const client = this.#client;
    // Connected already: this listener's channels are listened on now; else at the connect, with every other's.
    if (client === undefined) return;
    client.query(listen(listener.channels)).then(
      () => this.#listeners.has(listener) && listener.connected(),
      (error: unknown) => this.#lost(client, error as Error),
    );
  }

  #remove(listener: Listener): void {
    if (!this.#listeners.delete(listener)) return;
    if (this.#listeners.size > 0) {
      // Only channels no other listener has (a corpus closing while it opens again has two for a moment).
      const kept = new Set([...this.#listeners].flatMap((other) => other.channels));
      const gone = listener.channels.filter((channel) => !kept.has(channel));
      if (gone.length > 0)
        this.#client?.query(gone.map((channel) => `UNLISTEN ${channel}`).join('; ')).catch(() => undefined);
      return;
    }
    this.#closed = true;
    ListeningConnection.#open.delete(this.url);
    clearTimeout(this.#retry);
    void this.#client?.end().catch(() => undefined);
  }

  async #connect(): Promise<void> {
    if (this.#closed) return;
    const client = new pg.Client({ connectionString: this.url, keepAlive: true, connectionTimeoutMillis: 5_000 });
    client.on('error', (error) => this.#lost(client, error));
    client.on('end', () => this.#lost(client, new Error('connection ended')));
    client.on('notification', ({ channel, payload }) => {
      for (const listener of this.#listeners) {
        if (listener.channels.includes(channel)) listener.notified(channel, payload ?? '');
      }
    });
    try {
      await client.connect();
      // Set before listening: a listener joining meanwhile listens on its own channels itself.
      this.#client = client;
      const listeners = [...this.#listeners];
      await client.query(listen(listeners.flatMap((listener) => listener.channels)));
      if (this.#closed) return void client.end().catch(() => undefined);
      this.#backoff = RECONNECT_MS.first;
      for (const listener of listeners) if (this.#listeners.has(listener)) listener.connected();
    } catch (error) {
      this.#lost(client, error as Error);
    }
  }

  #lost(client: pg.Client, error: Error): void {
    if (this.#closed || (this.#client !== client && this.#client !== undefined) || this.#retry !== undefined) return;
    this.#client = undefined;
    client.end().catch(() => undefined);
    for (const listener of this.#listeners) listener.lost(error.message);
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      void this.#connect();
    }, this.#backoff);
    this.#retry.unref();
    this.#backoff = Math.min(this.#backoff * 2, RECONNECT_MS.most);
  }
}

/** One statement listening on every channel (at least a no-op: a connection with no channel yet). */
function listen(channels: readonly string[]): string {
  return channels.length === 0 ? 'SELECT 1' : channels.map((channel) => `LISTEN ${channel}`).join('; ');
}
