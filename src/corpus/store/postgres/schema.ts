import type { PoolClient } from 'pg';

/**
 * The PostgreSQL store of record's schema, created and migrated by the server itself: `rcp_schema` holds the version
 * reached, and each migration runs once, in order, in one transaction (under an advisory lock, so replicas starting
 * together do not race to create the same tables).
 *
 * Text columns that a client fills (ids, text, metadata, idempotency keys and answers) are `bytea` holding UTF-8:
 * PostgreSQL's `text` refuses U+0000, which JSON strings may carry and every stored idempotency key holds (caller,
 * NUL, key). Vectors are little-endian float32 bytes, as in the SQLite store (no pgvector: dense search stays in
 * hnswlib on each replica).
 */
const MIGRATIONS: readonly string[] = [
  `CREATE TABLE rcp_meta (key text PRIMARY KEY, value text NOT NULL);
   INSERT INTO rcp_meta (key, value) VALUES ('seq', '0'), ('store', gen_random_uuid()::text);
   CREATE TABLE rcp_documents (
     id bytea PRIMARY KEY, text bytea NOT NULL, meta bytea NOT NULL, hash text NOT NULL, origin text NOT NULL,
     seq bigint NOT NULL);
   CREATE INDEX rcp_documents_seq ON rcp_documents (seq);
   CREATE TABLE rcp_chunks (
     label bigserial PRIMARY KEY, doc_id bytea NOT NULL, ordinal integer NOT NULL, text bytea NOT NULL,
     context bytea NOT NULL, start_offset integer NOT NULL, end_offset integer NOT NULL, vector bytea NOT NULL,
     seq bigint NOT NULL);
   CREATE INDEX rcp_chunks_doc ON rcp_chunks (doc_id);
   CREATE INDEX rcp_chunks_seq ON rcp_chunks (seq);
   CREATE TABLE rcp_tombstones (label bigint PRIMARY KEY, seq bigint NOT NULL);
   CREATE INDEX rcp_tombstones_seq ON rcp_tombstones (seq);
   CREATE TABLE rcp_deleted (id bytea PRIMARY KEY, seq bigint NOT NULL);
   CREATE INDEX rcp_deleted_seq ON rcp_deleted (seq);
   CREATE TABLE rcp_idempotency (key bytea PRIMARY KEY, result bytea NOT NULL, seq bigint NOT NULL);
   CREATE INDEX rcp_idempotency_seq ON rcp_idempotency (seq);
   CREATE TABLE rcp_writes (seq bigint PRIMARY KEY, committed_at timestamptz NOT NULL DEFAULT clock_timestamp());`,
  // HTTP sessions (§5.2) shared by replicas: what each negotiated, by caller-scoped key.
  `CREATE TABLE rcp_sessions (
     key bytea PRIMARY KEY, caller bytea NOT NULL, state bytea NOT NULL,
     last_used timestamptz NOT NULL DEFAULT clock_timestamp());
   CREATE INDEX rcp_sessions_caller ON rcp_sessions (caller, last_used);
   CREATE INDEX rcp_sessions_last_used ON rcp_sessions (last_used);`,
  // §7.7.3 retrieve sessions shared by replicas: the ids each returned, numbered by one sequence for all replicas.
  `CREATE SEQUENCE rcp_seen_serial;
   CREATE TABLE rcp_seen_sessions (key bytea PRIMARY KEY, caller bytea NOT NULL, expires timestamptz NOT NULL);
   CREATE INDEX rcp_seen_sessions_caller ON rcp_seen_sessions (caller, expires);
   CREATE INDEX rcp_seen_sessions_expires ON rcp_seen_sessions (expires);
   CREATE TABLE rcp_seen (
     key bytea NOT NULL REFERENCES rcp_seen_sessions ON DELETE CASCADE, id bytea NOT NULL, serial bigint NOT NULL,
     PRIMARY KEY (key, id));`,
  // §15.5 retrieve sessions bounded per caller in ids, not only in sessions: each session counts what it holds.
  `ALTER TABLE rcp_seen_sessions ADD COLUMN hits integer NOT NULL DEFAULT 0;
   UPDATE rcp_seen_sessions s SET hits = (SELECT count(*) FROM rcp_seen WHERE key = s.key);`,
  // §15.6 idempotency keys bounded per caller (the key's scope), so no caller's writes prune another's keys.
  `ALTER TABLE rcp_idempotency ADD COLUMN caller bytea NOT NULL DEFAULT ''::bytea;
   UPDATE rcp_idempotency SET caller = substring(key FROM 1 FOR position('\\x00'::bytea IN key) - 1)
     WHERE position('\\x00'::bytea IN key) > 0;
   CREATE INDEX rcp_idempotency_caller ON rcp_idempotency (caller, seq);`,
  // docs/trust.md each chunk's injection screen (JSON this server writes), null in rows written before: a replica
  // screens such a chunk when it reads it.
  `ALTER TABLE rcp_chunks ADD COLUMN screen text;`,
];

/** Client text to the `bytea` it is stored as (see above), and back. */
export const utf8 = (text: string): Buffer => Buffer.from(text, 'utf8');
export const text = (bytes: Buffer): string => bytes.toString('utf8');

/** The schema version this build writes and reads. */
export const SCHEMA_VERSION = MIGRATIONS.length;

/** Advisory lock keys (one bigint namespace per database): schema migration, and the order of writes. */
export const LOCKS = { migrate: 0x7263_7000, writeOrder: 0x7263_7001 } as const;

/**
 * Where one corpus lives in a database (docs/tenants.md): its schema (the tables above, found by `search_path`), the
 * channels its writes and ended sessions are notified on, and the advisory lock that orders its writes. The default
 * corpus is `public` with the names every earlier release used; a named corpus is schema `rcp_c_<id>`, its channels
 * and lock its own, so that corpora of one database neither wait on nor wake each other.
 */
export interface StoreSpace {
  /** The named corpus's identity in the catalog; '' for the default corpus. */
  readonly id: string;
  readonly schema: string;
  readonly writesChannel: string;
  readonly sessionsChannel: string;
  readonly writeOrder: string;
}

export const PUBLIC_SPACE: StoreSpace = {
  id: '',
  schema: 'public',
  writesChannel: 'rcp_writes',
  sessionsChannel: 'rcp_sessions_ended',
  writeOrder: String(LOCKS.writeOrder),
};

/** A named corpus's identity in the catalog: 24 hex digits (PostgresCatalog makes them). */
export const SPACE_ID = /^[0-9a-f]{24}$/;

/** The space of the named corpus whose catalog identity is `id`. */
export function spaceOf(id: string): StoreSpace {
  if (!SPACE_ID.test(id)) throw new Error(`'${id}' is not a corpus identity of the store`);
  return {
    id,
    schema: `rcp_c_${id}`,
    writesChannel: `rcp_writes_${id}`,
    sessionsChannel: `rcp_sessions_ended_${id}`,
    // 48 bits of the identity, above the 32-bit keys of LOCKS: a key no other space's nor LOCKS' (bar a collision of
    // identities, which would only make two corpora's writes wait on each other).
    writeOrder: String(2 ** 52 + parseInt(id.slice(0, 12), 16)),
  };
}

/**
 * Brings the schema to SCHEMA_VERSION. Throws when the database is ahead of this build (a newer server migrated it):
 * an older build must not write a schema it does not know.
 */
export async function migrate(client: PoolClient): Promise<void> {
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock($1)', [LOCKS.migrate]);
    await client.query('CREATE TABLE IF NOT EXISTS rcp_schema (version integer NOT NULL)');
    const found = await client.query<{ version: number }>('SELECT version FROM rcp_schema');
    const version = found.rows[0]?.version ?? 0;
    if (version > SCHEMA_VERSION) {
      throw new Error(`the store's schema is version ${version}, newer than this server's ${SCHEMA_VERSION}`);
    }
    for (const step of MIGRATIONS.slice(version)) await client.query(step);
    if (found.rows.length === 0) await client.query('INSERT INTO rcp_schema (version) VALUES ($1)', [SCHEMA_VERSION]);
    else await client.query('UPDATE rcp_schema SET version = $1', [SCHEMA_VERSION]);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}

/**
 * Whether `error` says a named corpus's tables are not there (SQLSTATE 42P01 undefined table, 3F000 no such schema):
 * its schema was dropped with the corpus (or by hand). Nothing brings it back: the corpus is gone, not away.
 */
export function isSpaceGone(space: StoreSpace, error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return space.id !== '' && (code === '42P01' || code === '3F000');
}
