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
import { applyRows, configure, Connection, deleteRows, upsertRows, type Written } from './writes.js';

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
    const db = new Database(request.file, { fileMustExist: true });
    configure(db);
    connection = new Connection(db);
    return { ok: true };
  }
  if (connection === undefined) throw new Error('the store writer is not open');
  const open = connection;
  switch (request.op) {
    case 'upsert':
      return transaction(open, () => upsertRows(open, request.documents, request.idempotency));
    case 'delete':
      return transaction(open, () => deleteRows(open, request.ids));
    case 'apply':
      return transaction(open, () => applyRows(open, request.changes));
    case 'close':
      open.db.close();
      connection = undefined;
      return { ok: true };
  }
}

/** `body` as one durable transaction; a disk that cannot take it rolls it back whole and says so (§7.10). */
function transaction(open: Connection, body: () => Written): WriterReply {
  try {
    return { ok: true, written: open.db.transaction(body)() };
  } catch (error) {
    const code = sqliteCode(error);
    if (code === 'SQLITE_FULL' || code.startsWith('SQLITE_IOERR')) {
      return { ok: true, refused: { code, message: (error as Error).message } };
    }
    throw error;
  }
}
