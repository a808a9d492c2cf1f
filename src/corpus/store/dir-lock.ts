import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { removeFile } from '../../platform/files.js';
import { StartupError } from '../../startup-error.js';

/** The lock itself: a one-row SQLite database held in EXCLUSIVE locking mode (an fcntl lock the kernel drops when the
 * process dies, so a crash never leaves a stale lock behind). Its presence also says the dir has been served. */
export const LOCK_FILE = 'owner.lock';
/** Who holds it, for the message a second process prints (the lock file cannot be read while it is held). */
const OWNER_FILE = 'owner.json';

/** A data dir this process cannot serve: a start-up error with one clear line, never a wire code. */
export class StoreError extends StartupError {
  override name = 'StoreError';
}

/** The SQLite result code of an error from the driver (`SQLITE_BUSY`, ...), or '' for any other error. */
export function sqliteCode(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && code.startsWith('SQLITE_') ? code : '';
}

export class DirLockedError extends StoreError {
  override name = 'DirLockedError';
}

/**
 * One owner per data dir (docs/architecture.md §5): a server, `ingest` or `eval` holds the dir for its whole
 * life, so no second process can write the store or save its indexes over another's. A second process gets a
 * DirLockedError naming the holder. The lock is released on close, and by the kernel on any exit.
 *
 * A read-only server (`index.writable: false`, possibly on a read-only filesystem) holds it shared: read-only
 * servers may share a dir, and no writer can take it from under them (nor they from a writer). A dir never served
 * has no lock file; a read-only server there holds nothing (it cannot create one, and writes nothing itself).
 */
export class DirLock {
  private constructor(
    private readonly db: Database.Database | undefined,
    private readonly dir: string,
    private readonly shared: boolean,
  ) {}

  static acquire(dir: string, { shared = false }: { shared?: boolean } = {}): DirLock {
    const file = join(dir, LOCK_FILE);
    if (shared && !existsSync(file)) return new DirLock(undefined, dir, shared);
    let db: Database.Database;
    try {
      db = new Database(file, { timeout: 0, readonly: shared });
    } catch (error) {
      throw unusable(file, error);
    }
    try {
      // EXCLUSIVE locking mode keeps the lock that the first read (shared) or exclusive transaction takes, until
      // the connection closes. The exclusive one writes nothing and keeps no journal on disk, so a dir on a disk
      // that filled up while its server was down (kill -9) can be taken again and served.
      db.pragma('locking_mode = EXCLUSIVE');
      if (shared) db.prepare('SELECT count(*) FROM sqlite_master').get();
      else {
        db.pragma('journal_mode = MEMORY');
        db.exec('BEGIN EXCLUSIVE');
        db.exec('COMMIT');
      }
    } catch (error) {
      db.close();
      if (sqliteCode(error) === 'SQLITE_BUSY') {
        throw new DirLockedError(
          `data dir ${dir} is in use by ${holder(dir)}; stop it first, or send documents through it (index/add)`,
        );
      }
      throw unusable(file, error);
    }
    if (!shared) writeOwner(dir);
    return new DirLock(db, dir, shared);
  }

  release(): void {
    if (!this.shared) removeFile(join(this.dir, OWNER_FILE));
    this.db?.close();
  }
}

/** The lock file cannot serve as a lock (damaged, unreadable): it holds no data, but only the operator knows that no
 * other process is using the dir, so say how to proceed rather than replace it. */
function unusable(file: string, error: unknown): Error {
  const code = sqliteCode(error);
  if (code === 'SQLITE_FULL') return new StoreError(`${file} cannot be written: the disk is full`);
  if (code === '') return error as Error;
  return new StoreError(`${file} cannot be used as a lock (${code}); if no rcp-server uses this dir, remove it`);
}

/** Who holds the dir, for others' messages only: a failure to write it (a directory in its place) is not fatal. */
function writeOwner(dir: string): void {
  const owner = { pid: process.pid, host: hostname(), command: process.argv.slice(1).join(' '), since: new Date() };
  const temporary = join(dir, `${OWNER_FILE}.${process.pid}`);
  try {
    writeFileSync(temporary, `${JSON.stringify(owner)}\n`);
    renameSync(temporary, join(dir, OWNER_FILE));
  } catch {
    rmSync(temporary, { force: true });
  }
}

function holder(dir: string): string {
  try {
    const owner = JSON.parse(readFileSync(join(dir, OWNER_FILE), 'utf8')) as Record<string, unknown>;
    return `pid ${String(owner.pid)} on ${String(owner.host)} (${String(owner.command)}, since ${String(owner.since)})`;
  } catch {
    return 'another process';
  }
}
