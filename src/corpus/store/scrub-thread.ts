/**
 * The store's scrub thread: opens the store file read-only on a connection of its own and checks all of it
 * (scrub.ts), off the event loop and off the path to ready. Answers one ScrubReply per request.
 */
import { parentPort } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { findDamage } from './scrub.js';

export interface ScrubRequest {
  readonly file: string;
}

/** `damage`: the line telling what is damaged; absent: the store checked whole. */
export type ScrubReply = { ok: true; damage?: string } | { ok: false; error: string };

/** How long the scrub's reads wait for a writer's lock (WAL readers wait only while the log is recovered). */
const BUSY_TIMEOUT_MS = 10_000;

const port = parentPort!;
port.on('message', ({ file }: ScrubRequest) => {
  let reply: ScrubReply;
  try {
    const db = new Database(file, { readonly: true, fileMustExist: true, timeout: BUSY_TIMEOUT_MS });
    try {
      const damage = findDamage(db, file);
      reply = damage === undefined ? { ok: true } : { ok: true, damage };
    } finally {
      db.close();
    }
  } catch (error) {
    reply = { ok: false, error: (error as Error).message };
  }
  port.postMessage(reply);
});
