import { createHash } from 'node:crypto';
import type pg from 'pg';
import { text, utf8 } from './schema.js';

/**
 * How a session is named in what the store tells the replicas: a digest of its key, so a notification is short
 * whatever the key's length and does not carry the caller's identity.
 */
export const sessionIdOf = (key: string): string => createHash('sha256').update(utf8(key)).digest('base64url');

/** What an HTTP session negotiated, as the transport shares it (structurally its SessionState). */
export interface NegotiatedState {
  readonly protocolVersion: number;
  readonly clientCapabilities: Record<string, unknown>;
  readonly logFloor?: number | undefined;
}

/**
 * HTTP sessions shared by replicas (§5.2), in the store of record: a session opened on one replica continues on any.
 * Keys are the transport's caller-scoped keys (they hold NULs: bytea). Rows unused for the idle time are invisible
 * and pruned at the next save; each caller keeps at most its per-caller count, its least recently used going first.
 */
export class PostgresSessions {
  /** `channel`: where a session's end is notified, with `sessionIdOf(key)` as payload (every replica LISTENs on it). */
  constructor(
    private readonly pool: pg.Pool,
    private readonly channel: string,
  ) {}

  async load(key: string, idleMs: number): Promise<NegotiatedState | undefined> {
    const found = await this.pool.query<{ state: Buffer }>(
      `SELECT state FROM rcp_sessions WHERE key = $1 AND last_used > clock_timestamp() - $2 * interval '1 millisecond'`,
      [utf8(key), idleMs],
    );
    const row = found.rows[0];
    return row === undefined ? undefined : (JSON.parse(text(row.state)) as NegotiatedState);
  }

  async save(
    key: string,
    caller: string,
    state: NegotiatedState,
    { idleMs, perCaller }: { idleMs: number; perCaller: number },
  ): Promise<void> {
    await this.pool.query(
      `WITH expired AS (DELETE FROM rcp_sessions WHERE last_used < clock_timestamp() - $4 * interval '1 millisecond')
       INSERT INTO rcp_sessions (key, caller, state) VALUES ($1, $2, $3)
       ON CONFLICT (key) DO UPDATE SET state = excluded.state, last_used = clock_timestamp()`,
      [utf8(key), utf8(caller), utf8(JSON.stringify(state)), idleMs],
    );
    await this.pool.query(
      `DELETE FROM rcp_sessions WHERE key IN (
         SELECT key FROM rcp_sessions WHERE caller = $1 ORDER BY last_used DESC OFFSET $2)`,
      [utf8(caller), perCaller],
    );
  }

  async touch(key: string): Promise<void> {
    await this.pool.query('UPDATE rcp_sessions SET last_used = clock_timestamp() WHERE key = $1', [utf8(key)]);
  }

  /**
   * Removes the session and tells every replica, in one statement: the notification is delivered at its commit, when
   * no replica can load the session any more, and a replica that holds it drops it (§5.2: ended everywhere).
   */
  async forget(key: string): Promise<void> {
    await this.pool.query('WITH gone AS (DELETE FROM rcp_sessions WHERE key = $1) SELECT pg_notify($2, $3)', [
      utf8(key),
      this.channel,
      sessionIdOf(key),
    ]);
  }

  /** Which of `keys` the store still holds: a replica that may have missed notifications drops the others. */
  async held(keys: readonly string[]): Promise<Set<string>> {
    const found = await this.pool.query<{ key: Buffer }>('SELECT key FROM rcp_sessions WHERE key = ANY($1)', [
      keys.map(utf8),
    ]);
    return new Set(found.rows.map((row) => text(row.key)));
  }
}
