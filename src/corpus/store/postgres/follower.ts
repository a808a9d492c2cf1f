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
 * Tails the store of record: LISTENs on the writes and the sessions channels on a connection of its own (a pooled
 * one cannot hold a LISTEN), polls as a fallback, and reconnects with a doubling backoff when the database restarts or
 * fails over. It only says "look": what to read is always `seq > last applied`, so a lost or repeated wake-up loses
 * or repeats nothing; and at each (re)connect it says that ended sessions may have gone unheard.
 */
export class Follower {
  #client: pg.Client | undefined;
  #closed = false;
  #backoff = RECONNECT_MS.first;
  readonly #poll: NodeJS.Timeout;
  #retry: NodeJS.Timeout | undefined;

  constructor(private readonly options: FollowerOptions) {
    this.#poll = setInterval(options.wake, options.pollMs);
    this.#poll.unref();
    void this.#connect();
  }

  async #connect(): Promise<void> {
    if (this.#closed) return;
    const client = new pg.Client({
      connectionString: this.options.url,
      keepAlive: true,
      connectionTimeoutMillis: 5_000,
    });
    client.on('error', (error) => this.#lost(client, error));
    client.on('end', () => this.#lost(client, new Error('connection ended')));
    client.on('notification', ({ channel, payload }) => {
      if (channel === this.options.space.sessionsChannel) this.options.sessionEnded(payload ?? '');
      else this.options.wake();
    });
    try {
      await client.connect();
      const { writesChannel, sessionsChannel } = this.options.space;
      await client.query(`LISTEN ${writesChannel}; LISTEN ${sessionsChannel}`);
    } catch (error) {
      this.#lost(client, error as Error);
      return;
    }
    if (this.#closed) return void client.end().catch(() => undefined);
    this.#client = client;
    this.#backoff = RECONNECT_MS.first;
    // Writes committed and sessions ended while no connection listened were never notified here.
    this.options.wake();
    this.options.listening();
  }

  #lost(client: pg.Client, error: Error): void {
    if (this.#closed || (this.#client !== client && this.#client !== undefined) || this.#retry !== undefined) return;
    this.#client = undefined;
    client.end().catch(() => undefined);
    this.options.onError(error.message);
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      void this.#connect();
    }, this.#backoff);
    this.#retry.unref();
    this.#backoff = Math.min(this.#backoff * 2, RECONNECT_MS.most);
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#poll);
    clearTimeout(this.#retry);
    await this.#client?.end().catch(() => undefined);
  }
}
