import type Database from 'better-sqlite3';
import type { Changes } from './changes.js';
import { addSumColumns, chunkSum, documentSum } from './row-sums.js';
import { scopeOf } from '../../protocol/context.js';
import { pruneRetired, retireChunks, retireDocument, type Retention } from './retired.js';
import { storedScreen } from '../screen/stored.js';
import type { Screen } from '../screen/screen.js';

/**
 * The store's writes (§7.10, §7.11), as SQL on one connection: the writer thread's (writer-thread.ts). Each runs as
 * one durable transaction and takes the next sequence number, which is the corpus `indexVersion` (§7.7.1).
 */

/** Who wrote a document: a client over the wire (index/add), or the operator (`rcp-server ingest`). §15.2 */
export type DocumentOrigin = 'client' | 'operator';

export interface StoredDocument {
  readonly id: string;
  readonly text: string;
  readonly meta: Record<string, unknown>;
  readonly hash: string;
  readonly origin: DocumentOrigin;
}

export interface NewChunk {
  readonly text: string;
  readonly context: string;
  readonly start: number;
  readonly end: number;
  readonly vector: Float32Array;
  /** Its injection screen (docs/trust.md), kept beside it; a chunk without one is screened when read. */
  readonly screen?: Screen | undefined;
}

export interface NewDocument extends StoredDocument {
  readonly chunks: readonly NewChunk[];
}

/**
 * An idempotency key and the answer its write gives, less `indexVersion`: that is the seq the write commits, filled
 * in inside the transaction (§7.10: a retry gets exactly the first answer).
 */
export interface Idempotency {
  readonly key: string;
  readonly result: Record<string, unknown>;
  /** How many keyed writes, and bytes of their answers, are remembered (IDEMPOTENCY_KEPT unless a test says). */
  readonly kept?: { readonly writes: number; readonly bytes: number };
}

/** What a write changed: its seq, the labels of the chunks it added (in document and chunk order) and removed. */
export interface Written {
  readonly seq: number;
  readonly added: readonly number[];
  readonly removed: readonly number[];
  /** index/delete: the ids actually removed. */
  readonly deletedIds: readonly string[];
  /** A keyed write already committed (by any process): its stored answer, and nothing written. */
  readonly repeated?: Record<string, unknown>;
}

/**
 * The idempotency keys kept (§7.10, §15.6), per caller: its latest 10,000 keyed writes, at most 16 MiB of their keys
 * and stored answers (newest first) — a retry comes soon after its write. Each caller's keys are pruned only by its
 * own writes, so no caller can make the server forget another's (docs/architecture.md §11).
 */
export const IDEMPOTENCY_KEPT = { writes: 10_000, bytes: 16 * 1024 * 1024 };
// Sizes in bytes of BLOBs: length() of TEXT stops at a NUL, and every key holds one (caller, NUL, key).
const PRUNE_IDEMPOTENCY = `DELETE FROM idempotency WHERE caller = @caller AND seq <= (
  SELECT seq FROM (
    SELECT seq, row_number() OVER newest AS n,
      SUM(length(CAST(key AS BLOB)) + length(CAST(result AS BLOB))) OVER newest AS total
    FROM idempotency WHERE caller = @caller WINDOW newest AS (ORDER BY seq DESC))
  WHERE n > @writes OR total > @bytes ORDER BY seq DESC LIMIT 1)`;
export const SET_META =
  'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value';
const PUT_DOCUMENT = `INSERT INTO documents (id, text, meta, hash, seq, origin, sum) VALUES (?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (id) DO UPDATE SET text = excluded.text, meta = excluded.meta, hash = excluded.hash,
    seq = excluded.seq, origin = excluded.origin, sum = excluded.sum`;
const PUT_CHUNK = `INSERT INTO chunks (doc_id, ordinal, text, context, start_offset, end_offset, vector, screen, seq, sum)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING label`;
/** A replica's chunk keeps the label the store of record gave it, so every replica ranks and pages alike. */
const PUT_LABELLED_CHUNK = `INSERT OR IGNORE INTO chunks
  (label, doc_id, ordinal, text, context, start_offset, end_offset, vector, screen, seq, sum)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;

/** A connection and its statements, prepared once: compiling a statement per read cost more than the read. */
export class Connection {
  readonly #statements = new Map<string, Database.Statement>();

  constructor(readonly db: Database.Database) {}

  sql(text: string): Database.Statement {
    let statement = this.#statements.get(text);
    if (statement === undefined) this.#statements.set(text, (statement = this.db.prepare(text)));
    return statement;
  }

  /** The sequence number of the last committed write (inside a write: of the one before it). */
  get seq(): number {
    return Number((this.sql("SELECT value FROM meta WHERE key = 'seq'").pluck().get() as string | undefined) ?? 0);
  }
}

const WAL_KEPT_BYTES = 4 * 1024 * 1024;

/** WAL, full sync (a write is on disk when its commit returns) and foreign keys: settings of each connection. */
export function configure(db: Database.Database): void {
  db.pragma('journal_mode = WAL');
  // After a checkpoint the WAL is cut back to this: a burst of writes, or a reader that held it, does not leave it
  // at its high-water mark for good.
  db.pragma(`journal_size_limit = ${WAL_KEPT_BYTES}`);
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
}

/** Columns added since a store was first written (end -1 = "start + length of text"). */
export function addColumns(db: Database.Database): void {
  const columns = (table: string) =>
    (db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[]).map((c) => c.name);
  if (!columns('documents').includes('origin')) {
    db.exec("ALTER TABLE documents ADD COLUMN origin TEXT NOT NULL DEFAULT 'client'");
  }
  const chunkColumns = columns('chunks');
  if (!chunkColumns.includes('start_offset'))
    db.exec('ALTER TABLE chunks ADD COLUMN start_offset INTEGER NOT NULL DEFAULT 0');
  if (!chunkColumns.includes('end_offset'))
    db.exec('ALTER TABLE chunks ADD COLUMN end_offset INTEGER NOT NULL DEFAULT -1');
  addSumColumns(db);
  addScreenColumns(db, columns);
  if (!columns('idempotency').includes('caller')) {
    // Each caller's keyed writes are bounded on their own (IDEMPOTENCY_KEPT): the caller is the key's scope.
    db.exec(`ALTER TABLE idempotency ADD COLUMN caller TEXT NOT NULL DEFAULT '';
      UPDATE idempotency SET caller = CAST(substr(CAST(key AS BLOB), 1, instr(CAST(key AS BLOB), x'00') - 1) AS TEXT)
        WHERE instr(CAST(key AS BLOB), x'00') > 0;`);
  }
  db.exec('CREATE INDEX IF NOT EXISTS idempotency_caller ON idempotency (caller, seq)');
}

/**
 * The screen column (docs/trust.md), nullable: a store written before it keeps its rows as they are, and a chunk
 * with no screen is screened when read (CorpusReader.screenOf).
 */
function addScreenColumns(db: Database.Database, columns: (table: string) => string[]): void {
  for (const table of ['chunks', 'retired_chunks']) {
    if (!columns(table).includes('screen')) db.exec(`ALTER TABLE ${table} ADD COLUMN screen TEXT`);
  }
}

const blob = (vector: Float32Array) => Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength);

/** The answer a keyed write gave (§7.10), while its key is among those kept. */
export function storedAnswer(connection: Connection, key: string): Record<string, unknown> | undefined {
  const answer = connection.sql('SELECT result FROM idempotency WHERE key = ?').pluck().get(key) as string | undefined;
  return answer === undefined ? undefined : (JSON.parse(answer) as Record<string, unknown>);
}

/** Upserts documents: each replaces any previous one with its id (its old chunks become tombstones). */
export function upsertRows(
  connection: Connection,
  documents: readonly NewDocument[],
  idempotency?: Idempotency,
  retention?: Retention,
): Written {
  const sql = (text: string) => connection.sql(text);
  if (idempotency !== undefined) {
    // Another process may have committed this key since the caller looked (§7.10: a retry gets the first answer).
    const repeated = storedAnswer(connection, idempotency.key);
    if (repeated !== undefined)
      return { seq: Number(repeated.indexVersion), added: [], removed: [], deletedIds: [], repeated };
  }
  const seq = connection.seq + 1;
  const removed: number[] = [];
  const added: number[] = [];
  for (const document of documents) {
    removed.push(...tombstoneChunksOf(connection, document.id, seq, retention));
    const meta = JSON.stringify(document.meta);
    const sum = documentSum({ ...document, meta });
    sql(PUT_DOCUMENT).run(document.id, document.text, meta, document.hash, seq, document.origin, sum);
    document.chunks.forEach((chunk, ordinal) => {
      const row = chunkColumns(document.id, ordinal, chunk);
      added.push(
        (sql(PUT_CHUNK).get(...chunkValues(row, chunk.screen), seq, chunkSum(row)) as { label: number }).label,
      );
    });
  }
  sql(SET_META).run('seq', String(seq));
  if (idempotency !== undefined) {
    const result = JSON.stringify({ ...idempotency.result, indexVersion: String(seq) });
    const caller = scopeOf(idempotency.key);
    sql('INSERT INTO idempotency (key, result, seq, caller) VALUES (?, ?, ?, ?)').run(
      idempotency.key,
      result,
      seq,
      caller,
    );
    // §15.5: only the caller's latest keyed writes are remembered, within a count and a byte bound.
    const kept = idempotency.kept ?? IDEMPOTENCY_KEPT;
    sql(PRUNE_IDEMPOTENCY).run({ caller, writes: kept.writes, bytes: kept.bytes });
  }
  pruneRetired(connection, seq, retention);
  return { seq, added, removed, deletedIds: [] };
}

function chunkColumns(docId: string, ordinal: number, chunk: NewChunk) {
  return {
    ...{ doc_id: docId, ordinal, text: chunk.text, context: chunk.context },
    ...{ start_offset: chunk.start, end_offset: chunk.end, vector: blob(chunk.vector) },
  };
}

/** A row's values for PUT_CHUNK, its screen last (not in its sum: derived state, checked as it is parsed). */
function chunkValues(row: ReturnType<typeof chunkColumns>, screen: Screen | undefined) {
  const stored = screen === undefined ? null : storedScreen(screen);
  return [row.doc_id, row.ordinal, row.text, row.context, row.start_offset, row.end_offset, row.vector, stored];
}

/**
 * A replica catching up with the store of record: removals, then the rows the window left alive, all at the window's
 * end seq (a saved dense index at or past it has them all). Labels this replica never held are skipped.
 */
export function applyRows(connection: Connection, changes: Changes, retention?: Retention): Written {
  const sql = (text: string) => connection.sql(text);
  const seq = changes.through;
  // §7.7.1: a replica that applies several writes at once never held the versions between; rows read after later
  // writes committed may lack what those removed, so this version is not whole either (retired.ts).
  const after = connection.seq;
  const last = changes.head > seq ? seq : seq - 1;
  const hole = last > after ? ([after + 1, last] as const) : undefined;
  const removed = changes.removedLabels.filter((label) => {
    retireChunks(connection, { label }, seq, retention);
    return sql('DELETE FROM chunks WHERE label = ?').run(label).changes > 0;
  });
  const tombstone = sql('INSERT OR REPLACE INTO tombstones (label, seq) VALUES (?, ?)');
  for (const label of removed) tombstone.run(label, seq);
  const written = new Set(changes.documents.map((document) => document.id));
  for (const id of new Set([...changes.deletedIds, ...written])) retireDocument(connection, id, seq, retention);
  const deletedIds = changes.deletedIds.filter(
    (id) => sql('DELETE FROM documents WHERE id = ?').run(id).changes > 0 && !written.has(id),
  );
  for (const document of changes.documents) {
    const meta = JSON.stringify(document.meta);
    const sum = documentSum({ ...document, meta });
    sql(PUT_DOCUMENT).run(document.id, document.text, meta, document.hash, seq, document.origin, sum);
  }
  const added = changes.chunks.filter((chunk) => {
    const row = chunkColumns(chunk.docId, chunk.ordinal, chunk);
    const values = chunkValues(row, chunk.screen);
    return sql(PUT_LABELLED_CHUNK).run(chunk.label, ...values, seq, chunkSum(row)).changes > 0;
  });
  sql(SET_META).run('seq', String(seq));
  pruneRetired(connection, seq, retention, hole);
  return { seq, added: added.map((chunk) => chunk.label), removed, deletedIds };
}

/** Deletes documents and their chunks; absent ids are not an error and a delete of none takes no seq (§7.11). */
export function deleteRows(connection: Connection, ids: readonly string[], retention?: Retention): Written {
  const sql = (text: string) => connection.sql(text);
  const present = [...new Set(ids)].filter((id) => sql('SELECT 1 FROM documents WHERE id = ?').get(id) !== undefined);
  if (present.length === 0) return { seq: connection.seq, added: [], removed: [], deletedIds: [] };
  const seq = connection.seq + 1;
  const removed = present.flatMap((id) => tombstoneChunksOf(connection, id, seq, retention));
  for (const id of present) sql('DELETE FROM documents WHERE id = ?').run(id);
  sql(SET_META).run('seq', String(seq));
  pruneRetired(connection, seq, retention);
  return { seq, added: [], removed, deletedIds: present };
}

/** Drops tombstones through `throughSeq`, and says so: a process that applied less must reload, not replay. */
export function pruneRows(connection: Connection, throughSeq: number): Written {
  connection.sql('DELETE FROM tombstones WHERE seq <= ?').run(throughSeq);
  connection.sql(SET_META).run('pruned_through', String(throughSeq));
  return { seq: connection.seq, added: [], removed: [], deletedIds: [] };
}

/**
 * Removes a document's chunks, leaving a tombstone per label at `seq` (and, with `retention`, the document and its
 * chunks as they were: retired.ts); returns the labels.
 */
function tombstoneChunksOf(connection: Connection, id: string, seq: number, retention?: Retention): number[] {
  retireDocument(connection, id, seq, retention);
  retireChunks(connection, { docId: id }, seq, retention);
  const labels = connection.sql('SELECT label FROM chunks WHERE doc_id = ?').pluck().all(id) as number[];
  const tombstone = connection.sql('INSERT OR REPLACE INTO tombstones (label, seq) VALUES (?, ?)');
  for (const label of labels) tombstone.run(label, seq);
  connection.sql('DELETE FROM chunks WHERE doc_id = ?').run(id);
  return labels;
}
