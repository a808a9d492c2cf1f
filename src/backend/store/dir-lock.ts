import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';

/** The lock itself: a one-row SQLite database held in EXCLUSIVE locking mode (an fcntl lock the kernel drops when the
 * process dies, so a crash never leaves a stale lock behind). Its presence also says the dir has been served. */
export const LOCK_FILE = 'owner.lock';
/** Who holds it, for the message a second process prints (the lock file cannot be read while it is held). */
const OWNER_FILE = 'owner.json';

/** A data dir this process cannot serve: a start-up error with one clear line, never a wire code. */
export class StoreError extends Error {
  override name = 'StoreError';
}

export class DirLockedError extends StoreError {
  override name = 'DirLockedError';
}

/**
 * One owner per data dir (DESIGN §1, the store adapter): a server, `ingest` or `eval` holds the dir for its whole
 * life, so no second process can write the store or save its indexes over another's. A second process gets a
 * DirLockedError naming the holder. The lock is released on close, and by the kernel on any exit.
 */
export class DirLock {
  private constructor(
    private readonly db: Database.Database,
    private readonly dir: string,
  ) {}

  static acquire(dir: string): DirLock {
    const db = new Database(join(dir, LOCK_FILE), { timeout: 0 });
    try {
      // EXCLUSIVE locking mode keeps the exclusive lock that the first write takes, until the connection closes.
      db.pragma('locking_mode = EXCLUSIVE');
      db.exec('CREATE TABLE IF NOT EXISTS owner (pid INTEGER NOT NULL)');
      db.prepare('INSERT INTO owner (pid) VALUES (?)').run(process.pid);
      db.exec('DELETE FROM owner');
    } catch (error) {
      db.close();
      if ((error as { code?: string }).code === 'SQLITE_BUSY') {
        throw new DirLockedError(
          `data dir ${dir} is in use by ${holder(dir)}; stop it first, or send documents through it (index/add)`,
        );
      }
      throw error;
    }
    writeOwner(dir);
    return new DirLock(db, dir);
  }

  release(): void {
    rmSync(join(this.dir, OWNER_FILE), { force: true });
    this.db.close();
  }
}

function writeOwner(dir: string): void {
  const owner = { pid: process.pid, host: hostname(), command: process.argv.slice(1).join(' '), since: new Date() };
  const temporary = join(dir, `${OWNER_FILE}.${process.pid}`);
  writeFileSync(temporary, `${JSON.stringify(owner)}\n`);
  renameSync(temporary, join(dir, OWNER_FILE));
}

function holder(dir: string): string {
  try {
    const owner = JSON.parse(readFileSync(join(dir, OWNER_FILE), 'utf8')) as Record<string, unknown>;
    return `pid ${String(owner.pid)} on ${String(owner.host)} (${String(owner.command)}, since ${String(owner.since)})`;
  } catch {
    return 'another process';
  }
}
