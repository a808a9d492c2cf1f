import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { RpcError } from '../../protocol/errors.js';
import type { ChunkBody, ChunkRecord } from '../ports.js';
import { WorkerChannel } from '../../platform/worker-thread.js';
import { SAVED_INDEX } from '../hnsw/saved-file.js';
import { DirLock, LOCK_FILE, sqliteCode, StoreError } from './dir-lock.js';
import { paged, PAGE_ROWS } from './paged.js';
import { chunkSum, intact } from './row-sums.js';
import { parsedScreen } from '../screen/stored.js';
import { holesOf, RETIRED_SCHEMA, SNAPSHOT_FLOOR, type Retention, type VersionRanges } from './retired.js';
import { rowDamaged, STORE_FILE, storeDamaged } from './scrub.js';
import type { ScrubReply, ScrubRequest } from './scrub-thread.js';
import type { Changes } from './changes.js';
import type { WriterReply, WriterRequest } from './writer-protocol.js';
import { LABELS_DIGEST_SQL, type LabelsDigest } from '../labels-digest.js';
import {
  addColumns,
  configure,
  Connection,
  IDEMPOTENCY_KEPT,
  SET_META,
  storedAnswer,
  type DocumentOrigin,
  type Idempotency,
  type NewDocument,
  type StoredDocument,
  type Written,
} from './writes.js';

/** A chunk as stored: the port's record (text, context, offsets, vector) with its label and document. */
export type StoredChunk = ChunkRecord;

export type { DocumentOrigin, NewChunk, NewDocument, StoredDocument } from './writes.js';
export { IDEMPOTENCY_KEPT };

export interface WriteResult {
  readonly seq: number;
  /** Labels of chunks added, and of chunks removed (replaced or deleted), for the derived indexes. */
  readonly added: StoredChunk[];
  readonly removed: number[];
  /** Documents written (with their metadata) and ids actually removed (index/delete). */
  readonly written: readonly { id: string; meta: Record<string, unknown>; origin: DocumentOrigin; bytes: number }[];
  readonly deletedIds: readonly string[];
  /** A keyed write some process had already committed (§7.10): its first answer; nothing was written again. */
  readonly repeated?: Record<string, unknown> | undefined;
  /** Read back after later writes committed (`writeOf`): it may lack what they removed (§7.7.1, not a whole version). */
  readonly partial?: boolean | undefined;
}

/**
 * The tables and their indexes, brought up to date by every writer at open. `chunks_place` holds each chunk's place
 * (document, ordinal, label) and `documents_meta` each document's metadata and origin, for a start to read without
 * the tables' pages (which hold the texts, and the chunks' vectors); `chunks_place` took the place of an index on
 * `doc_id` alone. A store from before them builds them once, at its first open by a writer (140 ms at 30,000).
 */
const SCHEMA = `
  CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
  CREATE TABLE IF NOT EXISTS documents (
    id TEXT PRIMARY KEY, text TEXT NOT NULL, meta TEXT NOT NULL, hash TEXT NOT NULL, seq INTEGER NOT NULL,
    origin TEXT NOT NULL DEFAULT 'client', sum BLOB);
  CREATE TABLE IF NOT EXISTS chunks (
    label INTEGER PRIMARY KEY AUTOINCREMENT, doc_id TEXT NOT NULL, ordinal INTEGER NOT NULL, text TEXT NOT NULL,
    context TEXT NOT NULL, vector BLOB NOT NULL, seq INTEGER NOT NULL,
    start_offset INTEGER NOT NULL DEFAULT 0, end_offset INTEGER NOT NULL DEFAULT -1, sum BLOB, screen TEXT);
  CREATE INDEX IF NOT EXISTS chunks_place ON chunks (doc_id, ordinal);
  DROP INDEX IF EXISTS chunks_doc;
  CREATE INDEX IF NOT EXISTS chunks_seq ON chunks (seq);
  CREATE INDEX IF NOT EXISTS documents_seq ON documents (seq);
  CREATE INDEX IF NOT EXISTS documents_meta ON documents (id, meta, origin);
  CREATE TABLE IF NOT EXISTS tombstones (label INTEGER PRIMARY KEY, seq INTEGER NOT NULL);
  CREATE INDEX IF NOT EXISTS tombstones_seq ON tombstones (seq);
  CREATE TABLE IF NOT EXISTS idempotency (
    key TEXT PRIMARY KEY, result TEXT NOT NULL, seq INTEGER NOT NULL, caller TEXT NOT NULL DEFAULT '');
`;

interface ChunkRow {
  label: number;
  doc_id: string;
  ordinal: number;
  text: string;
  context: string;
  start_offset: number;
  end_offset: number;
  vector: Buffer;
  /** Absent in a store written before screens, served read-only (never given the column). */
  screen?: string | null;
}

/** A chunk row whole, with its write's seq and its sum (absent in a store written before sums). */
type SeqRow = ChunkRow & { seq: number; sum?: Uint8Array | null };

/** A stored vector as floats: copied out of the driver's buffer, which need not be 4-byte aligned. */
function vectorFrom(blob: Buffer): Float32Array {
  const bytes = new Uint8Array(blob);
  return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
}

function chunkOf(row: ChunkRow): StoredChunk {
  return { ...chunkBodyOf(row), vector: vectorFrom(row.vector) };
}

function chunkBodyOf(row: Omit<ChunkRow, 'vector'>): ChunkBody {
  return {
    label: row.label,
    docId: row.doc_id,
    ordinal: row.ordinal,
    text: row.text,
    context: row.context,
    start: row.start_offset,
    end: row.end_offset === -1 ? row.start_offset + row.text.length : row.end_offset,
    screen: parsedScreen(row.screen),
  };
}

const NOTHING = { added: [], removed: [], written: [], deletedIds: [] };

/** The tables that hold chunks: the live ones, and those removed writes keep for §7.7.1 snapshots (retired.ts). */
type ChunkTable = 'chunks' | 'retired_chunks';

const VECTORS_OF = (table: ChunkTable) =>
  `SELECT label, vector FROM ${table} WHERE label IN (SELECT value FROM json_each(?))`;

const CHUNK_ROW = (table: ChunkTable) => `SELECT * FROM ${table} WHERE label = ?`;

/** A document's metadata as stored; JSON that no longer parses is damage (a StoreError naming the document). */
function parsedMeta(row: { id: string; meta: string }): Record<string, unknown> {
  try {
    return JSON.parse(row.meta) as Record<string, unknown>;
  } catch {
    throw damaged(`document ${JSON.stringify(row.id)}`);
  }
}

/** A removed chunk kept for §7.7.1 snapshots: written at `seq`, removed at `removedSeq`. */
export interface RetiredChunk extends StoredChunk {
  readonly seq: number;
  readonly removedSeq: number;
}

/** A removed or replaced document kept for §7.7.1 snapshots (its text is read when asked for). */
export interface RetiredDocument {
  readonly id: string;
  readonly metaJson: string;
  readonly origin: DocumentOrigin;
  readonly seq: number;
  readonly removedSeq: number;
}

export interface StoreOptions {
  readonly readOnly?: boolean;
  /** Settings every process serving the dir must share (name → value), kept in the store's meta as `agreed.<name>`. */
  readonly agreed?: Readonly<Record<string, string>>;
  /**
   * Whole-file checks (`PRAGMA quick_check`, every row's sum) left to `scrub()`, run once the corpus serves: reading
   * a million-chunk store whole took longer than all the rest of a start.
   */
  readonly scrubLater?: boolean;
  /** §7.7.1 how much of the recent past writes keep (retired.ts); absent: only the current version. */
  readonly retention?: Retention | undefined;
}

/**
 * Opens the store file; a writer also brings its schema up to date. Every check is a read. Read-only with no store
 * yet (a dir never written): an empty store in memory, so nothing is created on disk.
 */
function openDatabase(file: string, readOnly: boolean, quickCheck: boolean): Database.Database {
  if (readOnly && !existsSync(file)) {
    const empty = new Database(':memory:');
    migrate(empty);
    return empty;
  }
  const db = new Database(file, { readonly: readOnly, fileMustExist: readOnly });
  try {
    checkStore(db, file, quickCheck);
    if (!readOnly) migrate(db);
    requireConsistentSeq(db);
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}

/**
 * The store's layout, recorded by every writer: a store written by a newer rcp-server (processes of several versions
 * may share a dir) may hold what this one cannot read or would undo, so it is refused rather than served or migrated.
 */
const STORE_SCHEMA = 4;

/** How long the writer thread is kept without writes (see `#retireWriterLater`). */
const WRITER_IDLE_MS = 30_000;

/**
 * Refuses another program's database, one of a newer schema (STORE_SCHEMA), and, with `quickCheck`, one SQLite finds
 * damaged (a serving process leaves that to its scrub, `CorpusStore.scrub`: it reads the whole file).
 */
function checkStore(db: Database.Database, file: string, quickCheck: boolean): void {
  const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[];
  if (tables.length > 0 && !tables.includes('meta')) {
    throw new StoreError(`${file} is not an rcp-server store (it has other tables: ${tables.slice(0, 3).join(', ')})`);
  }
  const schema =
    tables.length > 0 ? Number(db.prepare("SELECT value FROM meta WHERE key = 'schema'").pluck().get() ?? 0) : 0;
  if (schema > STORE_SCHEMA) {
    throw new StoreError(
      `${file} has store schema ${schema}, newer than this rcp-server's (${STORE_SCHEMA}): run the newer version`,
    );
  }
  if (!quickCheck) return;
  const problems = db.pragma('quick_check', { simple: false }) as { quick_check: string }[];
  if (problems[0]?.quick_check !== 'ok') {
    throw new StoreError(storeDamaged(file, problems[0]?.quick_check ?? 'quick_check failed'));
  }
}

/** WAL and full sync, the schema, and columns added since a store was first written. */
function migrate(db: Database.Database): void {
  configure(db);
  db.exec(SCHEMA + RETIRED_SCHEMA);
  addColumns(db);
  // A store from before snapshots kept none of its past: its versions start at the current one (retired.ts).
  db.prepare(`INSERT OR IGNORE INTO meta (key, value) VALUES ('${SNAPSHOT_FLOOR}', ?)`).run(
    db.prepare("SELECT value FROM meta WHERE key = 'seq'").pluck().get() ?? '0',
  );
  // This store's identity: saved index files name the store they were built from.
  db.prepare("INSERT OR IGNORE INTO meta (key, value) VALUES ('store', ?)").run(randomUUID());
  db.prepare(SET_META).run('schema', String(STORE_SCHEMA));
}

/** The write sequence must be a number no row is ahead of (it numbers the next write and every indexVersion). */
function requireConsistentSeq(db: Database.Database): void {
  const seq = (db.prepare("SELECT value FROM meta WHERE key = 'seq'").pluck().get() as string | undefined) ?? '0';
  const highest = db
    // coalesce: SQLite's max() of several values is NULL if any is (tombstones are often empty).
    .prepare(
      'SELECT max(coalesce((SELECT max(seq) FROM documents), 0), coalesce((SELECT max(seq) FROM tombstones), 0))',
    )
    .pluck()
    .get() as number;
  if (!/^\d+$/.test(seq) || Number(seq) < highest)
    throw new StoreError(`${STORE_FILE}: its write sequence (${seq}) is damaged: restore it from a backup`);
}

const damaged = (row: string) => new StoreError(rowDamaged(row));

const notADirectory = (dir: string, path: string) =>
  new StoreError(`data dir ${dir} cannot be used: ${path} is not a directory`);

/**
 * Creates the data dir and its missing parents one level at a time — Node's recursive mkdir never returns for a
 * path under /proc — or says in one line why it cannot (a StoreError: a start-up error, exit 2).
 */
function makeDataDir(dir: string): void {
  const missing: string[] = [];
  let existing = resolve(dir);
  while (!existsSync(existing) && dirname(existing) !== existing) {
    missing.unshift(existing);
    existing = dirname(existing);
  }
  if (!statSync(existing).isDirectory()) throw notADirectory(dir, existing);
  for (const path of missing) {
    try {
      mkdirSync(path);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'error';
      // Another process starting on the same new dir made it first (docs/architecture.md §5): it is there to use.
      if (code === 'EEXIST' && statSync(path).isDirectory()) continue;
      throw new StoreError(`data dir ${dir} cannot be created (${code} at ${path})`);
    }
  }
}

/** Whether `dir` has been served before: its lock file, or saved index files, are there. */
function hasServed(dir: string): boolean {
  return readdirSync(dir).some((name) => name === LOCK_FILE || SAVED_INDEX.test(name));
}

/** Runs `open`, turning SQLite's refusal of a file (not a database, damaged, unreadable) into a StoreError. */
function checked(file: string, open: () => Database.Database): Database.Database {
  try {
    return open();
  } catch (error) {
    const code = sqliteCode(error);
    if (error instanceof StoreError || code === '') throw error;
    throw new StoreError(`${file} cannot be opened (${code}: ${(error as Error).message}): restore it from a backup`);
  }
}

/**
 * The corpus of record (docs/architecture.md §3: the only importer of the database driver): documents, their chunks
 * with the chunks' vectors, and a tombstone per removed chunk. SQLite in WAL mode with `synchronous = FULL`: a write
 * transaction is on disk when `commit` returns, and only then is a write acknowledged. The dense and lexical indexes
 * are derived from this store and can always be rebuilt from it.
 *
 * Every committed write gets the next sequence number (`seq`), which is the corpus `indexVersion` (§7.7.1) and lets
 * a saved index replay exactly the writes it has not seen: chunks with a higher `seq` are added, tombstones with a
 * higher `seq` are removed. Chunk labels come from AUTOINCREMENT, so a label is never reused.
 */
export class CorpusStore {
  /** Reads, and the few small writes made at start (the encoder's name, the agreed settings). */
  #db: Connection;
  /**
   * Client writes (index/add, index/delete) run on the writer thread's own connection (writer-thread.ts), started at
   * the first one: a write's commit is synchronous and a large one held the event loop 170 ms. Reads here see only
   * committed writes (WAL snapshots). The corpus runs one write at a time; other processes' writers contend with this
   * one through SQLite's write lock (BEGIN IMMEDIATE, writer-thread.ts).
   */
  #writer: WorkerChannel<WriterRequest, WriterReply> | undefined;
  /** Writes sent to the writer thread and not yet answered. */
  #writing = 0;
  #writerIdle: NodeJS.Timeout | undefined;
  /** The writer thread's connection opened (a write waits for it). */
  #writerOpened: Promise<unknown> | undefined;
  /** A writer thread being let go (see `#retireWriterLater`). */
  #retiring: Promise<unknown> | undefined;
  #dataVersion = 0;
  readonly #file: string;
  readonly #scrubLater: boolean;
  #scrubber: WorkerChannel<ScrubRequest, ScrubReply> | undefined;
  readonly #lock: DirLock;
  readonly #retention: Retention | undefined;

  /**
   * Opens the store in `dir`, sharing the dir with the other processes serving it (dir-lock.ts). A StoreError
   * (nothing changed in the dir) when the store is not what the dir needs: missing or empty where the dir has held a
   * corpus, unreadable, damaged (`PRAGMA quick_check`) or another program's database; or when `agreed` (settings
   * every process of the dir must share, such as how its indexes are built) differs from what the processes already
   * serving it use. `readOnly` (a server with `index.writable: false`) writes nothing at all, so a read-only
   * filesystem can be served. `scrubLater`: SQLite's whole-file check waits for `scrub()`.
   */
  constructor(dir: string, { readOnly = false, agreed = {}, scrubLater = false, retention }: StoreOptions = {}) {
    this.#retention = retention;
    if (!readOnly) makeDataDir(dir);
    else if (existsSync(dir) && !statSync(dir).isDirectory()) throw notADirectory(dir, dir);
    const served = existsSync(dir) && hasServed(dir);
    this.#scrubLater = scrubLater;
    this.#lock = DirLock.acquire(dir, { readOnly });
    const file = (this.#file = join(dir, STORE_FILE));
    let db: Database.Database | undefined;
    try {
      if (served && (!existsSync(file) || statSync(file).size === 0))
        throw new StoreError(`${file} is missing or empty, but ${dir} has held a corpus: restore it from a backup`);
      db = checked(file, () => openDatabase(file, readOnly, !scrubLater));
      this.#db = new Connection(db);
      this.#settle(dir, agreed);
      this.#lock.share();
    } catch (error) {
      db?.close();
      this.#lock.release();
      throw error;
    }
  }

  /**
   * The first process to serve the dir records `agreed`; one that starts beside others must match what they
   * recorded, setting by setting (two processes must never serve differently built indexes of one corpus).
   */
  #settle(dir: string, agreed: Readonly<Record<string, string>>): void {
    for (const [name, value] of Object.entries(agreed)) {
      const recorded = this.getMeta(`agreed.${name}`);
      if (recorded === value) continue;
      if (this.#lock.alone) this.setMeta(`agreed.${name}`, value);
      else if (recorded !== undefined) {
        // A read-only process cannot tell whether others still serve the dir: it keeps to what the last writers used.
        const who = this.#db.db.readonly ? 'the last writers of' : 'the processes serving';
        throw new StoreError(
          `${name} is ${recorded} in ${who} ${dir}, but ${value} here: ` +
            'start this one with the same setting, or stop them first',
        );
      }
    }
  }

  /** The writer thread, started (and its connection opened) at the first write after none was running. */
  #writerThread(): WorkerChannel<WriterRequest, WriterReply> {
    if (this.#writer !== undefined) return this.#writer;
    const writer = new WorkerChannel<WriterRequest, WriterReply>(import.meta.url, './writer-thread');
    this.#writerOpened = writer.call({ op: 'open', file: this.#file });
    this.#writer = writer;
    return writer;
  }

  /**
   * The writer thread is let go after WRITER_IDLE_MS without writes: a thread holds some megabytes, and a process may
   * hold many corpora open that are written now and then (docs/tenants.md). The next write starts another.
   */
  #retireWriterLater(): void {
    this.#writerIdle = setTimeout(() => {
      const writer = this.#writer;
      if (writer === undefined || this.#writing > 0) return;
      this.#writer = undefined;
      this.#retiring = writer.call({ op: 'close' }).then(
        () => writer.terminate(),
        () => writer.terminate(),
      );
    }, WRITER_IDLE_MS);
    this.#writerIdle.unref();
  }

  #sql(text: string): Database.Statement {
    return this.#db.sql(text);
  }

  /**
   * Sends a write to the writer thread (opened at the first) and waits for its commit. A disk that cannot take it
   * (full, failing) rolled it back whole: -32010, nothing applied (§7.10), rather than an internal error.
   */
  async #write(request: WriterRequest): Promise<Written> {
    if (this.#db.db.readonly) throw new Error('a read-only store takes no writes');
    clearTimeout(this.#writerIdle);
    this.#writing += 1;
    let reply: WriterReply;
    try {
      const writer = this.#writerThread();
      await this.#writerOpened;
      reply = await writer.call(request);
    } finally {
      this.#writing -= 1;
      if (this.#writing === 0) this.#retireWriterLater();
    }
    if (reply.refused !== undefined) {
      const { code } = reply.refused;
      if (code.startsWith('SQLITE_BUSY')) {
        throw RpcError.backendUnavailable(
          'another process held the store for its writes too long; nothing was applied',
          1000,
        );
      }
      throw RpcError.backendUnavailable(`the store cannot take the write (${code}); nothing was applied`, 5000);
    }
    return reply.written!;
  }

  /**
   * Runs `read` in one snapshot of the store: a read transaction held across its awaits, so what it reads is one
   * state, whatever other processes commit meanwhile (WAL keeps that state for it). Only reads may run inside.
   */
  async snapshot<T>(read: () => Promise<T>): Promise<T> {
    this.#db.db.exec('BEGIN');
    try {
      return await read();
    } finally {
      this.#db.db.exec('COMMIT');
    }
  }

  /** Whether no other process served the dir when this one opened it. */
  get alone(): boolean {
    return this.#lock.alone;
  }

  /** This store's identity (kept in the store; '' for one written before it had one, served read-only). */
  get id(): string {
    return this.getMeta('store') ?? '';
  }

  /** What the labels of the chunks come to (labels-digest.ts), without listing them. */
  labelsDigest(): LabelsDigest {
    return this.#sql(LABELS_DIGEST_SQL).get() as LabelsDigest;
  }

  /** The sequence number of the last committed write: the corpus indexVersion. */
  get seq(): number {
    return Number(this.getMeta('seq') ?? 0);
  }

  getMeta(key: string): string | undefined {
    const row = this.#sql('SELECT value FROM meta WHERE key = ?').get(key) as { value: string } | undefined;
    return row?.value;
  }

  setMeta(key: string, value: string): void {
    this.#sql(SET_META).run(key, value);
  }

  /** The result a previous write with this idempotency key returned, if any (§7.10), among the latest kept. */
  idempotentResult(key: string): unknown {
    return storedAnswer(this.#db, key);
  }

  /**
   * Upserts documents in one durable transaction: each document replaces any previous one with its id (its old
   * chunks become tombstones). With `idempotency`, its answer (with the write's seq as `indexVersion`) is stored
   * under its key.
   */
  async upsert(documents: readonly NewDocument[], idempotency?: Idempotency): Promise<WriteResult> {
    const kept = { ...IDEMPOTENCY_KEPT };
    const written = await this.#write({
      op: 'upsert',
      documents,
      idempotency: idempotency && { ...idempotency, kept },
      retention: this.#retention,
    });
    const chunks = documents.flatMap((document) =>
      document.chunks.map((chunk, ordinal) => ({ docId: document.id, ordinal, ...chunk })),
    );
    if (written.repeated !== undefined) return { ...NOTHING, seq: written.seq, repeated: written.repeated };
    return {
      seq: written.seq,
      added: chunks.map((chunk, i) => ({ label: written.added[i]!, ...chunk })),
      removed: [...written.removed],
      written: documents.map(({ id, meta, origin, text }) => ({ id, meta, origin, bytes: Buffer.byteLength(text) })),
      deletedIds: [],
    };
  }

  /** Deletes documents and their chunks in one durable transaction; absent ids are not an error (§7.11). */
  async delete(ids: readonly string[]): Promise<WriteResult> {
    const written = await this.#write({ op: 'delete', ids, retention: this.#retention });
    return { seq: written.seq, added: [], removed: [...written.removed], written: [], deletedIds: written.deletedIds };
  }

  /** A replica applies what the store of record committed after its seq (changes.ts), in one local transaction. */
  async apply(changes: Changes): Promise<WriteResult> {
    const written = await this.#write({ op: 'apply', changes, retention: this.#retention });
    const added = new Set(written.added);
    return {
      seq: written.seq,
      added: changes.chunks.filter((chunk) => added.has(chunk.label)),
      removed: [...written.removed],
      written: changes.documents.map(({ id, meta, origin, text }) => ({
        id,
        meta,
        origin,
        bytes: Buffer.byteLength(text),
      })),
      deletedIds: written.deletedIds,
    };
  }

  getDocument(id: string): StoredDocument | undefined {
    const row = this.#sql('SELECT id, text, meta, hash, origin FROM documents WHERE id = ?').get(id) as
      { id: string; text: string; meta: string; hash: string; origin: DocumentOrigin } | undefined;
    return row === undefined ? undefined : { ...row, meta: JSON.parse(row.meta) as Record<string, unknown> };
  }

  /** Content hash of a stored document (ingest skips documents stored with the same hash). */
  hashOf(id: string): string | undefined {
    return this.#sql('SELECT hash FROM documents WHERE id = ?').pluck().get(id) as string | undefined;
  }

  /** A chunk's vector alone (MMR and score completion need no text). */
  vectorOf(label: number): Float32Array | undefined {
    const bytes = this.#sql('SELECT vector FROM chunks WHERE label = ?').pluck().get(label) as Buffer | undefined;
    return bytes === undefined ? undefined : vectorFrom(bytes);
  }

  /** The vectors of many chunks in one statement (of `table`); a label not stored is absent from the map. */
  vectorsOf(labels: readonly number[], table: ChunkTable = 'chunks'): Map<number, Float32Array> {
    const rows = this.#sql(VECTORS_OF(table)).raw().all(JSON.stringify(labels)) as [number, Buffer][];
    return new Map(rows.map(([label, bytes]) => [label, vectorFrom(bytes)]));
  }

  /**
   * A chunk without its vector (a hit's body), its row checked against its sum: the vector is read for that alone
   * (a start checks no row it does not read; the scrub checks them all later). From `retired_chunks`: a removed chunk
   * as it was (a hit at an earlier version, §7.7.1), undefined once pruned.
   */
  getChunk(label: number, table: ChunkTable = 'chunks'): ChunkBody | undefined {
    const row = this.#sql(CHUNK_ROW(table)).get(label) as (ChunkRow & { sum?: Uint8Array | null }) | undefined;
    const what = table === 'chunks' ? 'chunk' : 'retired chunk';
    if (row !== undefined && !intact(row.sum, chunkSum(row))) throw damaged(`${what} ${row.label}`);
    return row === undefined ? undefined : chunkBodyOf(row);
  }

  /**
   * Every chunk (or those written after `afterSeq`), in write order, streamed a page at a time (read it inside
   * `snapshot` for one state).
   */
  *chunks(afterSeq = 0): Generator<StoredChunk> {
    for (const row of this.#rowsAfter(afterSeq)) yield chunkOf(row);
  }

  /** The chunk rows written after `afterSeq`, whole, in write order, a page at a time. */
  *#rowsAfter(afterSeq: number): Generator<SeqRow> {
    const page = this.#sql(
      `SELECT * FROM chunks WHERE seq > ? AND (seq, label) > (?, ?) ORDER BY seq, label LIMIT ${PAGE_ROWS}`,
    );
    yield* paged((last: Pick<SeqRow, 'seq' | 'label'>) => page.all(afterSeq, last.seq, last.label) as SeqRow[], {
      seq: afterSeq,
      label: -1,
    });
  }

  /**
   * Every chunk's place (label, document, ordinal), a page at a time, read from the columns that hold it alone: with
   * a saved lexical index, that is all a start needs of the chunks written before it. Not checked against the row's
   * sum (the scrub checks every row; a hit's row is checked as it is read, `getChunk`).
   */
  *chunkPlaces(): Generator<{ label: number; doc_id: string; ordinal: number }> {
    type Row = { label: number; doc_id: string; ordinal: number };
    // In the order of the index `chunks_place`, which holds all three (the table's pages hold the texts and vectors
    // too: at 30,000 chunks 78-125 ms read through the table, 32-41 ms through the index).
    const page = this.#sql(
      'SELECT label, doc_id, ordinal FROM chunks WHERE (doc_id, ordinal, label) > (?, ?, ?) ' +
        `ORDER BY doc_id, ordinal, label LIMIT ${PAGE_ROWS}`,
    );
    yield* paged((last: Row) => page.all(last.doc_id, last.ordinal, last.label) as Row[], {
      doc_id: '',
      ordinal: -1,
      label: -1,
    });
  }

  /**
   * The chunks written after `afterSeq` (every chunk when 0) with their lexical text, in write order, a page at a
   * time: what the lexical index is brought up to date (or rebuilt) from. Each row is checked against its sum on the
   * way (a StoreError names the first damaged one).
   */
  *chunkTexts(
    afterSeq = 0,
  ): Generator<{ label: number; docId: string; ordinal: number; text: string; context: string }> {
    for (const row of this.#rowsAfter(afterSeq)) {
      if (!intact(row.sum, chunkSum(row))) throw damaged(`chunk ${row.label}`);
      yield { label: row.label, docId: row.doc_id, ordinal: row.ordinal, text: row.text, context: row.context };
    }
  }

  /**
   * Every document's metadata (undefined: none, `{}`) and, when `bytes`, its text's size, a page at a time (the corpus keeps it in memory for
   * filters). Not checked against the row's sum: the scrub does (metadata that no longer parses is damage found at
   * once).
   */
  *documentMetas(bytes = false): Generator<{
    id: string;
    meta: Record<string, unknown> | undefined;
    origin: DocumentOrigin;
    bytes: number;
  }> {
    type Row = { id: string; meta: string; origin: DocumentOrigin; bytes: number };
    // The texts' sizes only when asked for: the rest is read from an index alone (documents_meta), not the table.
    const size = bytes ? 'octet_length(text)' : '0';
    const page = this.#sql(
      `SELECT id, meta, origin, ${size} AS bytes FROM documents WHERE id > ? ORDER BY id LIMIT ${PAGE_ROWS}`,
    );
    for (const row of paged((last: Pick<Row, 'id'>) => page.all(last.id) as Row[], { id: '' })) {
      yield { id: row.id, meta: row.meta === '{}' ? undefined : parsedMeta(row), origin: row.origin, bytes: row.bytes };
    }
  }

  /**
   * The whole store checked on a thread of its own (scrub.ts): SQLite's structure check and every row's sum. The
   * line telling the first damage found; undefined: none (or nothing on disk to check).
   */
  async scrub(): Promise<string | undefined> {
    if (this.#db.db.memory) return undefined;
    // The thread lives for the check alone (a thread holds some megabytes; a process may hold many corpora open).
    const scrubber = new WorkerChannel<ScrubRequest, ScrubReply>(import.meta.url, './scrub-thread');
    this.#scrubber = scrubber;
    try {
      return (await scrubber.call({ file: this.#file })).damage;
    } finally {
      void scrubber.terminate();
      if (this.#scrubber === scrubber) this.#scrubber = undefined;
    }
  }

  /**
   * §7.7.1 the oldest version whose removed rows the store still keeps whole (retired.ts): the current one at most,
   * or the next when not even that is whole (a replica that read its rows after later writes).
   */
  get snapshotFloor(): number {
    return Number(this.getMeta(SNAPSHOT_FLOOR) ?? this.seq);
  }

  /** §7.7.1 versions above the floor this store never held whole (retired.ts). */
  get snapshotHoles(): VersionRanges {
    return holesOf(this.#db);
  }

  /** The chunks removed after `floor`, as they were, with the seqs that wrote and removed each, a page at a time. */
  *retiredChunks(floor: number): Generator<RetiredChunk> {
    type Row = SeqRow & { removed_seq: number };
    const page = this.#sql(
      'SELECT * FROM retired_chunks WHERE removed_seq > ? AND (removed_seq, label) > (?, ?) ' +
        `ORDER BY removed_seq, label LIMIT ${PAGE_ROWS}`,
    );
    const rows = paged(
      (last: Pick<Row, 'removed_seq' | 'label'>) => page.all(floor, last.removed_seq, last.label) as Row[],
      {
        removed_seq: floor,
        label: -1,
      },
    );
    for (const row of rows) {
      if (!intact(row.sum, chunkSum(row))) throw damaged(`retired chunk ${row.label}`);
      yield { ...chunkOf(row), seq: row.seq, removedSeq: row.removed_seq };
    }
  }

  /** The documents removed or replaced after `floor`, as they were (without their texts). */
  retiredDocuments(floor: number): RetiredDocument[] {
    const rows = this.#sql(
      'SELECT id, meta, origin, seq, removed_seq FROM retired_documents WHERE removed_seq > ? ORDER BY removed_seq, id',
    ).all(floor) as { id: string; meta: string; origin: DocumentOrigin; seq: number; removed_seq: number }[];
    return rows.map((row) => ({
      id: row.id,
      metaJson: JSON.stringify(parsedMeta(row)), // parsed once: metadata that no longer parses is damage
      origin: row.origin,
      seq: row.seq,
      removedSeq: row.removed_seq,
    }));
  }

  /**
   * The text of document `id` as `version` held it, in one statement (a write committed since, and not yet applied by
   * this process, moved it to the removed rows in the same transaction); undefined once pruned.
   */
  documentTextAt(id: string, version: number): string | undefined {
    return this.#sql(
      'SELECT text FROM documents WHERE id = ? AND seq <= ? UNION ALL ' +
        'SELECT text FROM retired_documents WHERE id = ? AND seq <= ? AND removed_seq > ? LIMIT 1',
    )
      .pluck()
      .get(id, version, id, version, version) as string | undefined;
  }

  /** Labels and seqs of the live chunks written after `floor`. */
  chunkSeqsAfter(floor: number): { label: number; seq: number }[] {
    return this.#sql('SELECT label, seq FROM chunks WHERE seq > ?').all(floor) as { label: number; seq: number }[];
  }

  /** Labels removed after `afterSeq`. */
  tombstonesAfter(afterSeq: number): number[] {
    return this.#sql('SELECT label FROM tombstones WHERE seq > ?').pluck().all(afterSeq) as number[];
  }

  /**
   * Tombstones at or below `throughSeq` are no longer needed to replay anything, by this process or a saved index at
   * or past it; a process following the store from further back reloads instead (`prunedThrough`). On the writer
   * thread: another process may hold the write lock for a while.
   */
  async pruneTombstones(throughSeq: number): Promise<void> {
    if (throughSeq <= this.prunedThrough) return;
    await this.#write({ op: 'prune', throughSeq });
  }

  /** The seq through which tombstones were pruned: a process that applied less cannot follow by replaying them. */
  get prunedThrough(): number {
    return Number(this.getMeta('pruned_through') ?? 0);
  }

  /**
   * Whether any process committed to the store since the last call (`PRAGMA data_version`, a counter read from
   * memory shared by the processes: microseconds, no I/O when nothing changed).
   */
  changed(): boolean {
    if (this.#db.db.memory) return this.#created();
    const version = this.#db.db.pragma('data_version', { simple: true }) as number;
    const moved = version !== this.#dataVersion;
    this.#dataVersion = version;
    return moved;
  }

  /**
   * A read-only process started on a dir no writer had served yet holds an empty store in memory: once a writer has
   * created the store file, it opens that (and follows it from the start).
   */
  #created(): boolean {
    if (!existsSync(this.#file)) return false;
    const db = checked(this.#file, () => openDatabase(this.#file, true, !this.#scrubLater));
    this.#db.db.close();
    this.#db = new Connection(db);
    return true;
  }

  /**
   * What write `seq` left in the store as it is now, read in one snapshot, for a process following writes that
   * others made: its chunks still alive, the labels it removed, its documents not since rewritten. Applied in seq
   * order, these bring a process's indexes to the store (docs/architecture.md §5).
   */
  async writeOf(seq: number): Promise<WriteResult> {
    return this.snapshot(async () => {
      const page = this.#sql(`SELECT * FROM chunks WHERE seq = ? AND label > ? ORDER BY label LIMIT ${PAGE_ROWS}`);
      const added: StoredChunk[] = [];
      // §7.7.1 with the chunks and documents it wrote that later writes removed since, as the store keeps them
      // (retired.ts): applied in order, the write and the ones after it then pass through the versions they made.
      const retired = this.#sql(
        `SELECT * FROM retired_chunks WHERE seq = ? AND removed_seq > ? AND label > ? ORDER BY label LIMIT ${PAGE_ROWS}`,
      );
      const rows = (function* () {
        yield* paged((last: Pick<ChunkRow, 'label'>) => page.all(seq, last.label) as ChunkRow[], { label: -1 });
        yield* paged((last: Pick<ChunkRow, 'label'>) => retired.all(seq, seq, last.label) as ChunkRow[], { label: -1 });
      })();
      for (const row of rows) {
        added.push(chunkOf(row));
        // A page at a time, a turn of the event loop between pages: one write of many chunks (an ingest batch) does
        // not hold this process's requests while it is read (docs/architecture.md §9).
        if (added.length % PAGE_ROWS === 0) await new Promise(setImmediate);
      }
      const documents = this.#sql(
        'SELECT id, meta, origin, octet_length(text) AS bytes FROM documents WHERE seq = ? ' +
          'UNION ALL SELECT id, meta, origin, octet_length(text) FROM retired_documents WHERE seq = ? AND removed_seq > ?',
      ).all(seq, seq, seq) as {
        id: string;
        meta: string;
        origin: DocumentOrigin;
        bytes: number;
      }[];
      return {
        seq,
        added,
        removed: this.#sql('SELECT label FROM tombstones WHERE seq = ?').pluck().all(seq) as number[],
        written: documents.map((row) => ({ ...row, meta: JSON.parse(row.meta) as Record<string, unknown> })),
        deletedIds: [],
        partial: this.seq > seq && this.snapshotFloor > seq,
      };
    });
  }

  counts(): { documents: number; chunks: number } {
    return {
      documents: this.#sql('SELECT count(*) FROM documents').pluck().get() as number,
      chunks: this.#sql('SELECT count(*) FROM chunks').pluck().get() as number,
    };
  }

  documentIds(): string[] {
    return this.#sql('SELECT id FROM documents ORDER BY id').pluck().all() as string[];
  }

  /**
   * Closes the store. The last writer out leaves it in rollback-journal mode, so that a read-only server (possibly on a
   * read-only filesystem) can read it without the WAL's shared-memory file; the next writer turns WAL back on.
   */
  async close(): Promise<void> {
    // A scrub under way is dropped (a read-only connection: nothing to finish).
    void this.#scrubber?.terminate();
    clearTimeout(this.#writerIdle);
    await this.#retiring;
    if (this.#writer !== undefined) {
      await this.#writer.call({ op: 'close' });
      await this.#writer.terminate();
    }
    const db = this.#db.db;
    if (!db.readonly && !db.memory) lastOneOut(db);
    db.close();
    this.#lock.release();
  }
}

/**
 * Rollback-journal mode, if this is the last process using the store (leaving WAL needs the store to itself): a
 * read-only server, possibly on a read-only filesystem, can then read it without the WAL's shared-memory file.
 */
function lastOneOut(db: Database.Database): void {
  try {
    db.pragma('busy_timeout = 0');
    db.pragma('journal_mode = DELETE');
  } catch (error) {
    if (sqliteCode(error) !== 'SQLITE_BUSY') throw error;
  }
}
