import { existsSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { StartupError } from '../../startup-error.js';

/**
 * The presence lock: a one-row SQLite database that every process serving the dir holds a shared lock on, in
 * EXCLUSIVE locking mode (an fcntl lock the kernel drops when the process dies, so a crash never leaves a stale lock
 * behind). Its presence also says the dir has been served.
 */
export const LOCK_FILE = 'owner.lock';

/** How long a process waits for another that is starting (and briefly holds the lock alone) to share it. */
const SHARE_WAIT_MS = 30_000;

/** A data dir this process cannot serve: a start-up error with one clear line, never a wire code. */
export class StoreError extends StartupError {
  override name = 'StoreError';
}

/** The SQLite result code of an error from the driver (`SQLITE_BUSY`, ...), or '' for any other error. */
export function sqliteCode(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && code.startsWith('SQLITE_') ? code : '';
}

/**
 * Many processes per data dir (docs/architecture.md §5): servers over stdio or HTTP, `mcp`, `ingest` and `eval` share
 * the dir, each holding the lock shared for its whole life. A process that finds no other holder (`alone`) holds it
 * exclusively until it calls `share()`: in between it may settle what every process of the dir must agree on (the
 * index settings), and a process starting meanwhile waits to read what it settled.
 *
 * A read-only process (`index.writable: false`, possibly on a read-only filesystem) is never alone: it writes
 * nothing. A dir never served has no lock file; a read-only process there holds nothing.
 */
export class DirLock {
  private constructor(
    private readonly db: Database.Database | undefined,
    /** Whether no other process held the dir when this one took it (it holds it exclusively until `share`). */
    readonly alone: boolean,
  ) {}

  static acquire(dir: string, { readOnly = false }: { readOnly?: boolean } = {}): DirLock {
    const file = join(dir, LOCK_FILE);
    if (readOnly && !existsSync(file)) return new DirLock(undefined, false);
    let db: Database.Database;
    try {
      db = new Database(file, { timeout: 0, readonly: readOnly });
    } catch (error) {
      throw unusable(file, error);
    }
    try {
      // EXCLUSIVE locking mode keeps the lock a transaction takes until the connection closes (or the mode changes).
      // The exclusive one writes nothing and keeps no journal on disk, so a dir on a disk that filled up while its
      // server was down (kill -9) can be taken again and served.
      db.pragma('locking_mode = EXCLUSIVE');
      db.pragma(`busy_timeout = ${SHARE_WAIT_MS}`);
      if (!readOnly) db.pragma('journal_mode = MEMORY');
      const alone = !readOnly && tryExclusive(db);
      if (!alone) holdShared(db);
      return new DirLock(db, alone);
    } catch (error) {
      db.close();
      if (sqliteCode(error) === 'SQLITE_BUSY') {
        throw new StoreError(`data dir ${dir}: a process starting there held it for over ${SHARE_WAIT_MS / 1000} s`);
      }
      throw unusable(file, error);
    }
  }

  /** Shares the dir with the processes that start after this one settled it (a no-op unless `alone`). */
  share(): void {
    if (!this.alone || this.db === undefined) return;
    this.db.pragma('locking_mode = NORMAL');
    read(this.db); // in NORMAL mode, the exclusive lock is let go at the end of this read
    holdShared(this.db);
  }

  release(): void {
    this.db?.close();
  }
}

function read(db: Database.Database): void {
  db.prepare('SELECT count(*) FROM sqlite_master').get();
}

/** The exclusive lock, at once, or false when another process holds the dir. */
function tryExclusive(db: Database.Database): boolean {
  db.pragma('busy_timeout = 0');
  try {
    db.exec('BEGIN EXCLUSIVE');
    db.exec('COMMIT');
    return true;
  } catch (error) {
    if (sqliteCode(error) !== 'SQLITE_BUSY') throw error;
    // The attempt left a PENDING lock that EXCLUSIVE locking mode would keep, keeping every other process from
    // reading: in NORMAL mode, the next read lets it go.
    db.pragma('locking_mode = NORMAL');
    read(db);
    return false;
  }
}

/** A shared lock for the connection's life, waiting while a starting process holds the dir alone. */
function holdShared(db: Database.Database): void {
  db.pragma('locking_mode = EXCLUSIVE');
  db.pragma(`busy_timeout = ${SHARE_WAIT_MS}`);
  read(db);
}

/** The lock file cannot serve as a lock (damaged, unreadable): it holds no data, but only the operator knows that no
 * other process is using the dir, so say how to proceed rather than replace it. */
function unusable(file: string, error: unknown): Error {
  const code = sqliteCode(error);
  if (code === 'SQLITE_FULL') return new StoreError(`${file} cannot be written: the disk is full`);
  if (code === '') return error as Error;
  return new StoreError(`${file} cannot be used as a lock (${code}); if no rcp-server uses this dir, remove it`);
}
