/**
 * The store's writer thread: owns the one connection that writes. A write's inserts, its commit and the commit's
 * fsync (`synchronous = FULL`) take ~170 ms for 15 MB, all synchronous in better-sqlite3, so they run here and the
 * event loop that answers every client stays free (docs/architecture.md §10). Requests are answered in order with a
 * WriterReply.
 */
import { parentPort } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { sqliteCode } from './dir-lock.js';
import type { WriterReply, WriterRequest } from './writer-protocol.js';
import { applyRows, configure, Connection, deleteRows, pruneRows, upsertRows, type Written } from './writes.js';

/**
 * How long a write waits for another process's to commit (SQLite's write lock, docs/architecture.md §5); past it the
 * write is refused whole, -32010 (a commit of a large batch holds the lock ~170 ms).
 */
const BUSY_TIMEOUT_MS = 10_000;

let connection: Connection | undefined;
const port = parentPort!;

port.on('message', (request: WriterRequest) => {
  let reply: WriterReply;
  try {
    reply = handle(request);
  } catch (error) {
    reply = { ok: false, error: (error as Error).message };
  }
  port.postMessage(reply);
});

function handle(request: WriterRequest): WriterReply {
  if (request.op === 'open') {
    const db = new Database(request.file, { fileMustExist: true, timeout: BUSY_TIMEOUT_MS });
    configure(db);
    connection = new Connection(db);
    return { ok: true };
  }
  if (connection === undefined) throw new Error('the store writer is not open');
  const open = connection;
  switch (request.op) {
    case 'upsert':
      return transaction(open, () => upsertRows(open, request.documents, request.idempotency, request.retention));
    case 'delete':
      return transaction(open, () => deleteRows(open, request.ids, request.retention));
    case 'apply':
      return transaction(open, () => applyRows(open, request.changes, request.retention));
    case 'prune':
      return transaction(open, () => pruneRows(open, request.throughSeq));
    case 'close':
      open.db.close();
      connection = undefined;
      return { ok: true };
  }
}

/**
 * `body` as one durable transaction, begun IMMEDIATE: the write lock is taken (waiting for other processes' writes)
 * before the write reads the seq it will follow. A disk that cannot take it, or a lock not had in time, rolls it back
 * whole and says so (§7.10).
 */
function transaction(open: Connection, body: () => Written): WriterReply {
  try {
    return { ok: true, written: open.db.transaction(body).immediate() };
  } catch (error) {
    const code = sqliteCode(error);
    if (code === 'SQLITE_FULL' || code.startsWith('SQLITE_IOERR') || code.startsWith('SQLITE_BUSY')) {
      return { ok: true, refused: { code, message: (error as Error).message } };
    }
    throw error;
  }
}
