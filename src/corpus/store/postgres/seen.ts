import type pg from 'pg';
import { text, utf8 } from './schema.js';
import { callerScoped } from '../../../protocol/context.js';

/** The ids a §7.7.3 session returned before `mark` (the transport-free shape retrieve reads). */
export interface SeenBefore {
  readonly mark: number;
  readonly size: number;
  has(id: string): boolean;
}

export interface SeenBounds {
  readonly ttlSeconds: number;
  /** Ids remembered per session; sessions, and ids in all, kept per caller (its soonest to expire go first). */
  readonly maxHits: number;
  readonly maxSessionsPerCaller: number;
  readonly maxHitsPerCaller: number;
}

/**
 * §7.7.3 `sessionId` sessions shared by replicas, in the store of record: a session's next retrieve may reach any
 * replica. Serials come from one sequence, so a cursor's mark (§10) means the same on every replica. Sessions expire
 * `ttlSeconds` after their last use; expired ones are pruned at the next write.
 */
export class PostgresSeen {
  constructor(
    private readonly pool: pg.Pool,
    private readonly bounds: SeenBounds,
  ) {}

  async seen(caller: string, sessionId: string, mark?: number): Promise<SeenBefore> {
    const upTo =
      mark ?? Number((await this.pool.query<{ n: string }>("SELECT nextval('rcp_seen_serial') AS n")).rows[0]!.n);
    const found = await this.pool.query<{ id: Buffer }>(
      `SELECT s.id FROM rcp_seen s JOIN rcp_seen_sessions USING (key)
       WHERE key = $1 AND expires > clock_timestamp() AND s.serial < $2`,
      [utf8(callerScoped(caller, sessionId)), upTo],
    );
    const ids = new Set(found.rows.map((row) => text(row.id)));
    return { mark: upTo, size: ids.size, has: (id) => ids.has(id) };
  }

  async remember(caller: string, sessionId: string, ids: readonly string[]): Promise<void> {
    const key = utf8(callerScoped(caller, sessionId));
    const { ttlSeconds, maxHits, maxSessionsPerCaller, maxHitsPerCaller } = this.bounds;
    await this.pool.query('DELETE FROM rcp_seen_sessions WHERE expires < clock_timestamp()');
    await this.pool.query(
      `INSERT INTO rcp_seen_sessions (key, caller, expires) VALUES ($1, $2, clock_timestamp() + $3 * interval '1 second')
       ON CONFLICT (key) DO UPDATE SET expires = excluded.expires`,
      [key, utf8(caller), ttlSeconds],
    );
    // The ids and the session's count of them, in one statement.
    await this.pool.query(
      `WITH added AS (
         INSERT INTO rcp_seen (key, id, serial)
         SELECT $1, id, nextval('rcp_seen_serial') FROM unnest($2::bytea[]) WITH ORDINALITY AS u(id, n)
         WHERE (SELECT hits FROM rcp_seen_sessions WHERE key = $1) < $3 ORDER BY n
         ON CONFLICT DO NOTHING RETURNING 1)
       UPDATE rcp_seen_sessions SET hits = hits + (SELECT count(*) FROM added) WHERE key = $1`,
      [key, ids.map(utf8), maxHits],
    );
    // Past either of the caller's bounds its sessions soonest to expire go (their ids with them): one caller cycling
    // sessionIds fills its own share of the store, never the disk.
    await this.pool.query(
      `DELETE FROM rcp_seen_sessions WHERE key IN (
         SELECT key FROM (
           SELECT key, row_number() OVER newest AS n, sum(hits) OVER newest AS held
           FROM rcp_seen_sessions WHERE caller = $1 WINDOW newest AS (ORDER BY expires DESC, key)) kept
         WHERE n > $2 OR held > $3)`,
      [utf8(caller), maxSessionsPerCaller, maxHitsPerCaller],
    );
  }
}
