import { createHash } from 'node:crypto';
import type Database from 'better-sqlite3';

/**
 * A sum per stored row (SHA-256, first 16 bytes) over every column a reader relies on, so that damage inside a row's
 * payload — which SQLite's own structure checks cannot see — is found when the corpus loads, instead of being served
 * as text, metadata or vectors that no client wrote. Fields are length-prefixed, so no two rows share a byte stream.
 */
const SUM_BYTES = 16;

export interface DocumentColumns {
  readonly id: string;
  readonly text: string;
  readonly meta: string;
  readonly hash: string;
  readonly origin: string;
}

export interface ChunkColumns {
  readonly doc_id: string;
  readonly ordinal: number;
  readonly text: string;
  readonly context: string;
  readonly start_offset: number;
  readonly end_offset: number;
  readonly vector: Uint8Array;
}

function sumOf(fields: readonly (string | number | Uint8Array)[]): Buffer {
  const hash = createHash('sha256');
  for (const field of fields) {
    const bytes = field instanceof Uint8Array ? field : Buffer.from(String(field));
    hash.update(`${bytes.length}:`).update(bytes);
  }
  return hash.digest().subarray(0, SUM_BYTES);
}

export const documentSum = (row: DocumentColumns): Buffer => sumOf([row.id, row.text, row.meta, row.hash, row.origin]);

export const chunkSum = (row: ChunkColumns): Buffer =>
  sumOf([row.doc_id, row.ordinal, row.text, row.context, row.start_offset, row.end_offset, row.vector]);

/**
 * Whether a row read back still matches the sum written with it. `undefined`: the store keeps no sums (written
 * before they were kept, and served read-only, so never given them): nothing to check against.
 */
export function intact(sum: Uint8Array | null | undefined, expected: Buffer): boolean {
  return sum === undefined || (sum !== null && expected.equals(sum));
}

/** Rows summed per statement while a store written before sums were kept gets its sums (bounded memory). */
const MIGRATION_BATCH = 1000;

/** Adds the sum columns to a store written before they existed, and sums its rows as they are, once. */
export function addSumColumns(db: Database.Database): void {
  const has = (table: string) =>
    (db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[]).some((c) => c.name === 'sum');
  if (has('documents') && has('chunks')) return;
  db.transaction(() => {
    if (!has('documents')) db.exec('ALTER TABLE documents ADD COLUMN sum BLOB');
    if (!has('chunks')) db.exec('ALTER TABLE chunks ADD COLUMN sum BLOB');
    sumRows(db, 'documents', 'rowid', (row) => documentSum(row as unknown as DocumentColumns));
    sumRows(db, 'chunks', 'label', (row) => chunkSum(row as unknown as ChunkColumns));
  })();
}

function sumRows(db: Database.Database, table: string, key: string, sum: (row: object) => Buffer): void {
  const batch = db.prepare(`SELECT ${key} AS key, * FROM ${table} WHERE ${key} > ? ORDER BY ${key} LIMIT ?`);
  const update = db.prepare(`UPDATE ${table} SET sum = ? WHERE ${key} = ?`);
  for (let last = -1; ;) {
    const rows = batch.all(last, MIGRATION_BATCH) as { key: number }[];
    for (const row of rows) update.run(sum(row), row.key);
    if (rows.length < MIGRATION_BATCH) return;
    last = rows.at(-1)!.key;
  }
}
