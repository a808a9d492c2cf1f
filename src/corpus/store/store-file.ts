import Database from 'better-sqlite3';
import { StoreError, sqliteCode } from './dir-lock.js';

/** What a store file says of itself: what a backup records and a restore checks (docs/corpus.md, "Backup"). */
export interface StoreFacts {
  /** The seq of its last write: the `indexVersion` (§7.7.1) a server on it answers at. */
  readonly seq: number;
  /** Removals are replayable only after this seq: a saved index older than it cannot be brought up to the store. */
  readonly prunedThrough: number;
  /** The store's identity: saved index files name it, and load only over it. */
  readonly store: string;
  /** On a replica's snapshot, the PostgreSQL store it mirrors. */
  readonly upstream: string | undefined;
  /** The encoder its vectors were made by. */
  readonly encoder: string | undefined;
}

const TABLES = "SELECT name FROM sqlite_master WHERE type = 'table'";

/** How long a copy waits for a writer's lock (a WAL reader needs none but at its start, on a checkpoint's heels). */
const BUSY_MS = 10_000;

/**
 * Copies the store at `file` into `to` as of one read transaction (`VACUUM INTO`): consistent while other processes
 * write (a WAL reader never blocks them, nor they it), compacted, and in a file of its own. Blocks its thread for the
 * copy's time: a command's, never a server's.
 */
export function copyStore(file: string, to: string): StoreFacts {
  const db = openStore(file);
  try {
    db.prepare('VACUUM INTO ?').run(to);
  } catch (error) {
    throw new StoreError(`${file} cannot be copied to ${to}: ${(error as Error).message}`);
  } finally {
    db.close();
  }
  return storeFacts(to);
}

/** The facts of a store file; with `check`, only once SQLite's `quick_check` finds its pages whole. */
export function storeFacts(file: string, { check = false }: { check?: boolean } = {}): StoreFacts {
  const db = openStore(file);
  try {
    if (check) {
      const verdict: unknown = db.pragma('quick_check', { simple: true });
      if (verdict !== 'ok') throw new StoreError(`${file} is damaged: ${String(verdict)}`);
      const tables = db.prepare(TABLES).pluck().all() as string[];
      const missing = ['documents', 'chunks', 'tombstones'].filter((table) => !tables.includes(table));
      if (missing.length > 0) throw new StoreError(`${file} is not an rcp-server store (no ${missing.join(', ')})`);
    }
    return factsOf(db, file);
  } catch (error) {
    if (error instanceof StoreError) throw error;
    throw new StoreError(`${file} is not a readable rcp-server store: ${(error as Error).message}`);
  } finally {
    db.close();
  }
}

/** What the store open on `db` (the file `file`) says of itself, read in whatever transaction `db` is in. */
export function factsOf(db: Database.Database, file: string): StoreFacts {
  const rows = db.prepare('SELECT key, value FROM meta').all() as { key: string; value: string }[];
  const meta = new Map(rows.map(({ key, value }) => [key, value]));
  const store = meta.get('store');
  if (store === undefined) throw new StoreError(`${file} is not an rcp-server store (it has no identity)`);
  return {
    seq: Number(meta.get('seq') ?? 0),
    prunedThrough: Number(meta.get('pruned_through') ?? 0),
    store,
    upstream: meta.get('upstream'),
    encoder: meta.get('encoder'),
  };
}

/** A read-only connection to an existing store file, or a StoreError saying why there is none. */
export function openStore(file: string): Database.Database {
  try {
    return new Database(file, { readonly: true, fileMustExist: true, timeout: BUSY_MS });
  } catch (error) {
    throw new StoreError(`${file} cannot be opened (${sqliteCode(error) || (error as Error).message})`);
  }
}
