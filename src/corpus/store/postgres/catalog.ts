import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { DEFAULT_CORPUS, isCorpusName } from '../../../protocol/corpus-name.js';
import { LOCKS, SPACE_ID, spaceOf } from './schema.js';

/** What a named corpus's drop removed from the store: its documents and chunks. */
export interface DroppedRecords {
  readonly documents: number;
  readonly chunks: number;
}

/** The channel a created or dropped corpus is notified on, with its name as payload (followers' connections LISTEN). */
export const CATALOG_CHANNEL = 'rcp_corpora';

/** How long a drop waits for the corpus's tables (a replica reading them holds them), and a create for the catalog. */
const LOCK_TIMEOUT = '5s';

/**
 * The named corpora of one PostgreSQL database (docs/tenants.md): table `rcp_corpora` in schema `public` names each
 * corpus and its identity, and each corpus's records are in a schema of its own (`rcp_c_<identity>`, schema.ts
 * `spaceOf`), made when it is created and migrated by the first replica that opens it. A corpus dropped and created
 * again under its name is another identity, so another schema: nothing of the old one is ever stored as the new one's
 * (a replica holding the old one open serves it until it hears of the drop, at the drop's commit).
 */
export class PostgresCatalog {
  readonly #pool: pg.Pool;
  #ready: Promise<void> | undefined;

  constructor(url: string) {
    // Bounded in time on the client's side: a database that hangs (not gone: frozen) answers no lookup, and a
    // request waiting on one would wait past its deadline.
    this.#pool = new pg.Pool({
      connectionString: url,
      max: 2,
      connectionTimeoutMillis: 5_000,
      query_timeout: 5_000,
      keepAlive: true,
    });
    // A client whose server went away emits 'error'; unheard, it kills the process. The failure reaches the caller
    // as the rejection of its next query.
    this.#pool.on('error', () => undefined);
    this.#pool.on('connect', (client) => client.on('error', () => undefined));
  }

  /**
   * Every named corpus of the store: name to identity. A row not made by a server (a name that is none, an identity
   * that is none) is no corpus, and left out.
   */
  async list(): Promise<Map<string, string>> {
    await this.#made();
    const found = await this.#pool.query<{ name: string; id: string }>('SELECT name, id FROM public.rcp_corpora');
    const corpora = found.rows.filter((row) => isCorpusName(row.name) && row.name !== DEFAULT_CORPUS);
    return new Map(corpora.filter((row) => SPACE_ID.test(row.id)).map((row) => [row.name, row.id]));
  }

  /** Makes corpus `name` (its catalog row and its schema, in one transaction): its identity, or 'exists'. */
  async create(name: string): Promise<{ id: string } | 'exists'> {
    await this.#made();
    const id = randomBytes(12).toString('hex');
    return this.#inTransaction(async (client) => {
      const made = await client.query(
        'INSERT INTO public.rcp_corpora (name, id) VALUES ($1, $2) ON CONFLICT DO NOTHING',
        [name, id],
      );
      if (made.rowCount === 0) return 'exists';
      await client.query(`CREATE SCHEMA ${spaceOf(id).schema}`);
      await client.query('SELECT pg_notify($1, $2)', [CATALOG_CHANNEL, name]);
      return { id };
    });
  }

  /**
   * Removes corpus `name`, its row and its schema, in one transaction: 'absent' when there is none, 'writing' while a
   * write to it is in flight in any process (its write-order lock is held). A replica reading its tables delays the
   * drop up to LOCK_TIMEOUT, then the drop fails and nothing is removed.
   */
  async drop(name: string): Promise<DroppedRecords | 'absent' | 'writing'> {
    await this.#made();
    return this.#inTransaction(async (client) => {
      const found = await client.query<{ id: string }>('SELECT id FROM public.rcp_corpora WHERE name = $1 FOR UPDATE', [
        name,
      ]);
      const id = found.rows[0]?.id;
      if (id === undefined) return 'absent';
      // A row not made by a server names no schema: it alone goes.
      if (!SPACE_ID.test(id)) {
        await client.query('DELETE FROM public.rcp_corpora WHERE name = $1', [name]);
        return { documents: 0, chunks: 0 };
      }
      const space = spaceOf(id);
      const locked = await client.query<{ got: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS got', [
        space.writeOrder,
      ]);
      if (locked.rows[0]?.got !== true) return 'writing';
      const dropped = await recordsOf(client, space.schema);
      await client.query('DELETE FROM public.rcp_corpora WHERE name = $1', [name]);
      await client.query(`DROP SCHEMA IF EXISTS ${space.schema} CASCADE`);
      // At the commit: the replicas holding it open look at once (and find it gone), and every process reads the
      // catalog again.
      await client.query('SELECT pg_notify($1, $2), pg_notify($3, $4)', [
        space.writesChannel,
        '0',
        CATALOG_CHANNEL,
        name,
      ]);
      return dropped;
    });
  }

  async close(): Promise<void> {
    await this.#pool.end();
  }

  /**
   * The catalog's table, made once (again after a failure: the database may have been away), under the migration lock:
   * two processes making it at once on a new database would otherwise collide in PostgreSQL's own catalog.
   */
  #made(): Promise<void> {
    this.#ready ??= this.#inTransaction(async (client) => {
      await client.query('SELECT pg_advisory_xact_lock($1)', [LOCKS.migrate]);
      await client.query(
        `CREATE TABLE IF NOT EXISTS public.rcp_corpora (
           name text PRIMARY KEY, id text NOT NULL UNIQUE, created timestamptz NOT NULL DEFAULT clock_timestamp())`,
      );
    }).then(
      () => undefined,
      (error: unknown) => {
        this.#ready = undefined;
        throw error;
      },
    );
    return this.#ready;
  }

  async #inTransaction<T>(body: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.#pool.connect();
    let failed = false;
    try {
      await client.query('BEGIN');
      await client.query(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
      const result = await body(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      failed = true;
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release(failed);
    }
  }
}

/** The documents and chunks in `schema` (none when no replica has opened the corpus yet: it has no tables). */
async function recordsOf(client: pg.PoolClient, schema: string): Promise<DroppedRecords> {
  const exists = await client.query<{ t: string | null }>('SELECT to_regclass($1) AS t', [`${schema}.rcp_chunks`]);
  if (exists.rows[0]?.t === null) return { documents: 0, chunks: 0 };
  const counted = await client.query<{ documents: string; chunks: string }>(
    `SELECT (SELECT count(*) FROM ${schema}.rcp_documents) AS documents, (SELECT count(*) FROM ${schema}.rcp_chunks) AS chunks`,
  );
  const row = counted.rows[0]!;
  return { documents: Number(row.documents), chunks: Number(row.chunks) };
}
