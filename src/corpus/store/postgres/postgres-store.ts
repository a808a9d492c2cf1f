import pg from 'pg';
import type { Changes, ChangedDocument } from '../changes.js';
import { IDEMPOTENCY_KEPT, type DocumentOrigin, type Idempotency, type NewDocument } from '../writes.js';
import { migrate, PUBLIC_SPACE, text, utf8, type StoreSpace } from './schema.js';
import { abandoned, unavailable, untilAborted } from './failures.js';
import { PostgresSeen, type SeenBounds } from './seen.js';
import { PostgresSessions } from './sessions.js';
import { scopeOf } from '../../../protocol/context.js';
import { parsedScreen, storedScreen } from '../../screen/stored.js';

/** The most chunk rows one catch-up window reads (a replica far behind catches up in windows of about this size). */
const WINDOW_CHUNKS = 2_000;
/** How long removals stay in the log, and how often the log is pruned (in writes). */
const LOG_RETAINED_DAYS = 7;
const PRUNE_EVERY = 256;

const blob = (vector: Float32Array) => Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength);

/** A committed write: its seq, and for a keyed write seen before, the first answer (§7.10) instead of a new write. */
export interface Committed {
  readonly seq: number;
  readonly repeated?: Record<string, unknown>;
}

/**
 * The corpus of record in PostgreSQL (docs/architecture.md §3: the only importer of `pg`), shared by every replica.
 * Writes are transactions whose commit order is the `indexVersion` order: each takes a transaction-level advisory lock
 * before it reads the sequence and holds it to its commit. A sequence object would not do — two transactions can take 7
 * and 8 and commit 8 first, and a replica that read "everything after 6" at that moment would skip 7 for ever.
 *
 * Every write leaves the rows it adds with its seq, a tombstone per chunk label it removes and a `rcp_deleted` row per
 * document it deletes, so `changesSince(n)` gives a replica exactly what brings it from n to the head.
 */
export class PostgresStore {
  readonly #pool: pg.Pool;
  #sessions: PostgresSessions | undefined;

  private constructor(
    pool: pg.Pool,
    readonly space: StoreSpace,
  ) {
    this.#pool = pool;
  }

  /**
   * Connects and migrates the schema of `space` (the default corpus's unless named); rejects (with the driver's error)
   * when the database cannot be reached, or the space's schema does not exist (a named corpus dropped).
   */
  static async open(url: string, space: StoreSpace = PUBLIC_SPACE): Promise<PostgresStore> {
    const pool = new pg.Pool({
      connectionString: url,
      // A named corpus's pool is smaller, a process may hold many of them open (docs/tenants.md, connections)…
      max: space === PUBLIC_SPACE ? 4 : 2,
      // …and its connections are let go soon after their last use: an idle open corpus holds none.
      idleTimeoutMillis: space === PUBLIC_SPACE ? 10_000 : 2_000,
      connectionTimeoutMillis: 5_000,
      keepAlive: true,
      // The space's schema alone: unqualified names are its tables, and nothing is made elsewhere.
      ...(space === PUBLIC_SPACE ? {} : { options: `-c search_path=${space.schema}` }),
    });
    // A client whose server went away emits 'error' — on the pool while idle, on itself while checked out (between
    // a transaction's statements): unheard, either kills the process. The failure reaches the caller as the
    // rejection of its next query.
    pool.on('error', () => undefined);
    pool.on('connect', (client) => client.on('error', () => undefined));
    try {
      const client = await pool.connect();
      try {
        await migrate(client);
      } finally {
        client.release();
      }
    } catch (error) {
      await pool.end();
      throw error;
    }
    return new PostgresStore(pool, space);
  }

  /** HTTP sessions shared by the replicas of this store. */
  get sessions(): PostgresSessions {
    return (this.#sessions ??= new PostgresSessions(this.#pool, this.space.sessionsChannel));
  }

  /** §7.7.3 retrieve sessions shared by the replicas of this store. */
  seen(bounds: SeenBounds): PostgresSeen {
    return new PostgresSeen(this.#pool, bounds);
  }

  async meta(key: string): Promise<string | undefined> {
    const found = await this.#pool.query<{ value: string }>('SELECT value FROM rcp_meta WHERE key = $1', [key]);
    return found.rows[0]?.value;
  }

  /** Sets `key` unless it is set; returns the value it holds afterwards (the first replica's value wins). */
  async claimMeta(key: string, value: string): Promise<string> {
    await this.#pool.query('INSERT INTO rcp_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING', [
      key,
      value,
    ]);
    return (await this.meta(key))!;
  }

  async head(): Promise<number> {
    return Number(await this.meta('seq'));
  }

  /** The first answer of a keyed write (§7.10), if the store still remembers it. */
  idempotentResult(key: string): Promise<Record<string, unknown> | undefined> {
    return rememberedAnswer(this.#pool, key);
  }

  /**
   * Upserts documents in one transaction (each replaces any stored one with its id); a keyed repeat writes nothing.
   * `signal` is the caller's: when it aborts first, the transaction is abandoned (see #transaction).
   */
  upsert(documents: readonly NewDocument[], idempotency?: Idempotency, signal?: AbortSignal): Promise<Committed> {
    return this.#transaction(signal, async (client) => {
      if (idempotency !== undefined) {
        const repeated = await rememberedAnswer(client, idempotency.key);
        if (repeated !== undefined) return { seq: Number(repeated.indexVersion), repeated };
      }
      const seq = await nextSeq(client);
      // The last of a document given twice wins (as in one SQLite transaction), and unnest takes each id once.
      const latest = [...new Map(documents.map((document) => [document.id, document])).values()];
      await tombstoneChunks(
        client,
        latest.map((document) => utf8(document.id)),
        seq,
      );
      await putDocuments(client, latest, seq);
      await putChunks(client, latest, seq);
      if (idempotency !== undefined) await remember(client, idempotency, seq);
      return { seq: await finishWrite(client, seq, this.space) };
    });
  }

  /** Deletes documents and their chunks; absent ids are not an error and a delete of none takes no seq (§7.11). */
  delete(ids: readonly string[], signal?: AbortSignal): Promise<Committed & { deletedIds: string[] }> {
    return this.#transaction(signal, async (client) => {
      const found = await client.query<{ id: Buffer }>('SELECT id FROM rcp_documents WHERE id = ANY($1)', [
        [...new Set(ids)].map(utf8),
      ]);
      const present = found.rows.map((row) => row.id);
      if (present.length === 0) return { seq: await currentSeq(client), deletedIds: [] };
      const seq = await nextSeq(client);
      await tombstoneChunks(client, present, seq);
      await client.query('DELETE FROM rcp_documents WHERE id = ANY($1)', [present]);
      await client.query(
        `INSERT INTO rcp_deleted (id, seq) SELECT id, $2 FROM unnest($1::bytea[]) AS id
         ON CONFLICT (id) DO UPDATE SET seq = excluded.seq`,
        [present, seq],
      );
      return { seq: await finishWrite(client, seq, this.space), deletedIds: present.map(text) };
    });
  }

  /**
   * What brings a replica at `after` towards the head, read in one snapshot (REPEATABLE READ): every write up to the
   * head, or, for a replica far behind, up to a seq whose window holds about WINDOW_CHUNKS chunk rows.
   */
  async changesSince(after: number): Promise<Changes> {
    const client = await this.#pool.connect();
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      const head = await currentSeq(client);
      const changes = { ...(await readWindow(client, after, await windowEnd(client, after, head))), head };
      await client.query('COMMIT');
      return changes;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  async close(): Promise<void> {
    await this.#pool.end();
  }

  /**
   * Runs `body` as one write transaction in commit order (the advisory lock). A database that cannot be reached
   * rejects with -32010 retryable; one lost during COMMIT says that the write may have been applied. When `signal`
   * aborts first (§13.1: a database that hangs holds no request past its deadline), the connection is dropped and the
   * caller's -32014 or -32006 says what was applied: nothing before COMMIT was sent (the server never sees it, and a
   * transaction without it is rolled back), perhaps after.
   */
  async #transaction<T>(signal: AbortSignal | undefined, body: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const nothing = 'nothing was applied';
    let client: pg.PoolClient;
    const connecting = this.#pool.connect();
    try {
      client = await untilAborted(connecting, signal, () => {
        connecting.then(
          (late) => late.release(),
          () => undefined,
        );
        // No connection was had (every one busy, a new one not yet made): none to drop, nothing sent.
        return abandoned(signal!, nothing, 'no connection to the store of record came free');
      });
    } catch (error) {
      throw unavailable(error, nothing);
    }
    let committing = false;
    let failed = false;
    let dropped = false;
    const maybe = 'the write may have been applied (retry with the same idempotencyKey)';
    const run = (async () => {
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock($1)', [this.space.writeOrder]);
      const result = await body(client);
      committing = true;
      await client.query('COMMIT');
      return result;
    })();
    try {
      return await untilAborted(run, signal, () => {
        dropped = true;
        run.catch(() => undefined);
        return abandoned(signal!, committing ? maybe : nothing);
      });
    } catch (error) {
      failed = true;
      if (dropped) throw error;
      await client.query('ROLLBACK').catch(() => undefined);
      throw unavailable(error, committing ? `the connection was lost during the commit: ${maybe}` : nothing);
    } finally {
      // A client that failed mid-transaction is dropped, not returned to the pool in an unknown state.
      client.release(failed);
    }
  }
}

/** A keyed write's stored answer, read on the pool or inside a write's transaction (its re-check under the lock). */
async function rememberedAnswer(
  on: pg.Pool | pg.PoolClient,
  key: string,
): Promise<Record<string, unknown> | undefined> {
  const found = await on.query<{ result: Buffer }>('SELECT result FROM rcp_idempotency WHERE key = $1', [utf8(key)]);
  const row = found.rows[0];
  return row === undefined ? undefined : (JSON.parse(text(row.result)) as Record<string, unknown>);
}

async function currentSeq(client: pg.PoolClient): Promise<number> {
  const found = await client.query<{ value: string }>("SELECT value FROM rcp_meta WHERE key = 'seq'");
  return Number(found.rows[0]!.value);
}

/** Inside the write-order lock, so the next number is the next commit. */
async function nextSeq(client: pg.PoolClient): Promise<number> {
  return (await currentSeq(client)) + 1;
}

/** Records the write as committed at `seq` and wakes the replicas (NOTIFY is delivered at commit, never before). */
async function finishWrite(client: pg.PoolClient, seq: number, space: StoreSpace): Promise<number> {
  await client.query("UPDATE rcp_meta SET value = $1 WHERE key = 'seq'", [String(seq)]);
  await client.query('INSERT INTO rcp_writes (seq) VALUES ($1)', [seq]);
  await client.query('SELECT pg_notify($1, $2)', [space.writesChannel, String(seq)]);
  if (seq % PRUNE_EVERY === 0) await pruneLog(client);
  return seq;
}

/**
 * The log of removals is kept LOG_RETAINED_DAYS: what a replica needs to catch up from a snapshot that old. Older
 * tombstones, deletions and write times go (every PRUNE_EVERY writes), and `pruned_through` says so: a replica whose
 * snapshot is older than that is refused at start (its dir must be rebuilt from the store).
 */
async function pruneLog(client: pg.PoolClient): Promise<void> {
  const found = await client.query<{ horizon: string | null }>(
    `SELECT max(seq) AS horizon FROM rcp_writes WHERE committed_at < clock_timestamp() - $1 * interval '1 day'`,
    [LOG_RETAINED_DAYS],
  );
  const horizon = found.rows[0]?.horizon;
  if (horizon === null || horizon === undefined) return;
  await client.query('DELETE FROM rcp_tombstones WHERE seq <= $1', [horizon]);
  await client.query('DELETE FROM rcp_deleted WHERE seq <= $1', [horizon]);
  await client.query('DELETE FROM rcp_writes WHERE seq < $1', [horizon]);
  await client.query(
    `INSERT INTO rcp_meta (key, value) VALUES ('pruned_through', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
    [horizon],
  );
}

/** Removes the chunks of these documents, leaving a tombstone per label at `seq`. */
async function tombstoneChunks(client: pg.PoolClient, ids: readonly Buffer[], seq: number): Promise<void> {
  await client.query(
    `WITH gone AS (DELETE FROM rcp_chunks WHERE doc_id = ANY($1) RETURNING label)
     INSERT INTO rcp_tombstones (label, seq) SELECT label, $2 FROM gone`,
    [ids, seq],
  );
}

async function putDocuments(client: pg.PoolClient, documents: readonly NewDocument[], seq: number): Promise<void> {
  await client.query(
    `INSERT INTO rcp_documents (id, text, meta, hash, origin, seq)
     SELECT id, text, meta, hash, origin, $6 FROM unnest($1::bytea[], $2::bytea[], $3::bytea[], $4::text[], $5::text[])
       AS d(id, text, meta, hash, origin)
     ON CONFLICT (id) DO UPDATE SET text = excluded.text, meta = excluded.meta, hash = excluded.hash,
       origin = excluded.origin, seq = excluded.seq`,
    [
      documents.map((d) => utf8(d.id)),
      documents.map((d) => utf8(d.text)),
      documents.map((d) => utf8(JSON.stringify(d.meta))),
      documents.map((d) => d.hash),
      documents.map((d) => d.origin),
      seq,
    ],
  );
}

/** Every chunk in document order, so labels ascend with (document, ordinal) as the SQLite store numbers them. */
async function putChunks(client: pg.PoolClient, documents: readonly NewDocument[], seq: number): Promise<void> {
  const rows = documents.flatMap((document) => document.chunks.map((chunk, ordinal) => ({ document, chunk, ordinal })));
  if (rows.length === 0) return;
  await client.query(
    `INSERT INTO rcp_chunks (doc_id, ordinal, text, context, start_offset, end_offset, vector, screen, seq)
     SELECT doc_id, ordinal, text, context, start_offset, end_offset, vector, screen, $9
     FROM unnest($1::bytea[], $2::int[], $3::bytea[], $4::bytea[], $5::int[], $6::int[], $7::bytea[], $8::text[])
       WITH ORDINALITY AS c(doc_id, ordinal, text, context, start_offset, end_offset, vector, screen, n)
     ORDER BY n`,
    [
      rows.map((row) => utf8(row.document.id)),
      rows.map((row) => row.ordinal),
      rows.map((row) => utf8(row.chunk.text)),
      rows.map((row) => utf8(row.chunk.context)),
      rows.map((row) => row.chunk.start),
      rows.map((row) => row.chunk.end),
      rows.map((row) => blob(row.chunk.vector)),
      rows.map((row) => (row.chunk.screen === undefined ? null : storedScreen(row.chunk.screen))),
      seq,
    ],
  );
}

/** Stores a keyed write's answer under its key, and forgets the oldest beyond the kept bounds (§7.10, §15.5). */
async function remember(client: pg.PoolClient, idempotency: Idempotency, seq: number): Promise<void> {
  const result = JSON.stringify({ ...idempotency.result, indexVersion: String(seq) });
  const caller = utf8(scopeOf(idempotency.key));
  await client.query('INSERT INTO rcp_idempotency (key, result, seq, caller) VALUES ($1, $2, $3, $4)', [
    utf8(idempotency.key),
    utf8(result),
    seq,
    caller,
  ]);
  // Only this caller's keys are pruned, by its own bounds (IDEMPOTENCY_KEPT).
  const kept = idempotency.kept ?? IDEMPOTENCY_KEPT;
  await client.query(
    `DELETE FROM rcp_idempotency WHERE caller = $1 AND seq <= (
       SELECT seq FROM (
         SELECT seq, row_number() OVER newest AS n, sum(octet_length(key) + octet_length(result)) OVER newest AS total
         FROM rcp_idempotency WHERE caller = $1 WINDOW newest AS (ORDER BY seq DESC)) AS sized
       WHERE n > $2 OR total > $3 ORDER BY seq DESC LIMIT 1)`,
    [caller, kept.writes, kept.bytes],
  );
}

/** The end of the next window after `after`: the head, halved until the window holds at most WINDOW_CHUNKS rows. */
async function windowEnd(client: pg.PoolClient, after: number, head: number): Promise<number> {
  let through = head;
  while (through > after + 1) {
    const found = await client.query<{ n: string }>(
      'SELECT count(*) AS n FROM rcp_chunks WHERE seq > $1 AND seq <= $2',
      [after, through],
    );
    if (Number(found.rows[0]!.n) <= WINDOW_CHUNKS) break;
    through = after + Math.ceil((through - after) / 2);
  }
  return through;
}

interface DocumentRow {
  id: Buffer;
  text: Buffer;
  meta: Buffer;
  hash: string;
  origin: DocumentOrigin;
}

interface ChunkRow {
  label: string;
  doc_id: Buffer;
  ordinal: number;
  text: Buffer;
  context: Buffer;
  start_offset: number;
  end_offset: number;
  vector: Buffer;
  screen: string | null;
}

async function readWindow(client: pg.PoolClient, after: number, through: number): Promise<Omit<Changes, 'head'>> {
  const range = [after, through];
  const documents = await client.query<DocumentRow>(
    'SELECT id, text, meta, hash, origin FROM rcp_documents WHERE seq > $1 AND seq <= $2',
    range,
  );
  const chunks = await client.query<ChunkRow>(
    'SELECT * FROM rcp_chunks WHERE seq > $1 AND seq <= $2 ORDER BY label',
    range,
  );
  const removed = await client.query<{ label: string }>(
    'SELECT label FROM rcp_tombstones WHERE seq > $1 AND seq <= $2',
    range,
  );
  const deleted = await client.query<{ id: Buffer }>('SELECT id FROM rcp_deleted WHERE seq > $1 AND seq <= $2', range);
  const lag = await client.query<{ lag: number | null }>(
    'SELECT extract(epoch FROM clock_timestamp() - committed_at)::float8 AS lag FROM rcp_writes WHERE seq = $1',
    [through],
  );
  return {
    through,
    documents: documents.rows.map(documentOf),
    chunks: chunks.rows.map(chunkOf),
    removedLabels: removed.rows.map((row) => Number(row.label)),
    deletedIds: deleted.rows.map((row) => text(row.id)),
    lagSeconds: Math.max(0, lag.rows[0]?.lag ?? 0),
  };
}

function documentOf(row: DocumentRow): ChangedDocument {
  const meta = JSON.parse(text(row.meta)) as Record<string, unknown>;
  return { id: text(row.id), text: text(row.text), meta, hash: row.hash, origin: row.origin };
}

function chunkOf(row: ChunkRow) {
  const bytes = new Uint8Array(row.vector);
  return {
    label: Number(row.label),
    docId: text(row.doc_id),
    ordinal: row.ordinal,
    text: text(row.text),
    context: text(row.context),
    start: row.start_offset,
    end: row.end_offset,
    vector: new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4),
    screen: parsedScreen(row.screen),
  };
}
