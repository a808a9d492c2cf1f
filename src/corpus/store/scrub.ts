import type Database from 'better-sqlite3';
import { sqliteCode } from './dir-lock.js';
import { paged, PAGE_ROWS } from './paged.js';
import { chunkSum, documentSum, intact, type ChunkColumns, type DocumentColumns } from './row-sums.js';

/** The store file's name in a data dir. */
export const STORE_FILE = 'corpus.sqlite';

/** What a damaged store file is told as: one line, the file, what is wrong, what to do. */
export const storeDamaged = (file: string, problem: string) =>
  `${file} is damaged (${problem}): restore it from a backup`;

/** A row whose contents no longer match the sum written with it (row-sums.ts). */
export const rowDamaged = (row: string) =>
  `${STORE_FILE}: ${row} is damaged (its contents do not match their sum): restore it from a backup`;

/**
 * The store's whole check (docs/architecture.md §5, "Damage"): SQLite's structure check (`PRAGMA quick_check`), then
 * every chunk and document row against its sum. It reads the whole file, so a serving process runs it on a thread
 * of its own once the corpus is ready (scrub-thread.ts), not on the path to ready; a read that meets a damaged page
 * is damage too. Returns the first damage found, as the line to tell; undefined: none.
 */
export function findDamage(db: Database.Database, file: string): string | undefined {
  try {
    const problems = db.pragma('quick_check', { simple: false }) as { quick_check: string }[];
    if (problems[0]?.quick_check !== 'ok') return storeDamaged(file, problems[0]?.quick_check ?? 'quick_check failed');
    return damagedChunk(db) ?? damagedDocument(db);
  } catch (error) {
    const code = sqliteCode(error);
    if (code === '') throw error;
    return storeDamaged(file, `${code}: ${(error as Error).message}`);
  }
}

function damagedChunk(db: Database.Database): string | undefined {
  type Row = ChunkColumns & { label: number; sum?: Uint8Array | null };
  const page = db.prepare(`SELECT * FROM chunks WHERE label > ? ORDER BY label LIMIT ${PAGE_ROWS}`);
  for (const row of paged((last: Pick<Row, 'label'>) => page.all(last.label) as Row[], { label: -1 })) {
    if (!intact(row.sum, chunkSum(row))) return rowDamaged(`chunk ${row.label}`);
  }
  return undefined;
}

function damagedDocument(db: Database.Database): string | undefined {
  type Row = DocumentColumns & { sum?: Uint8Array | null };
  const page = db.prepare(`SELECT * FROM documents WHERE id > ? ORDER BY id LIMIT ${PAGE_ROWS}`);
  for (const row of paged((last: Pick<Row, 'id'>) => page.all(last.id) as Row[], { id: '' })) {
    if (!intact(row.sum, documentSum(row))) return rowDamaged(`document ${JSON.stringify(row.id)}`);
  }
  return undefined;
}
