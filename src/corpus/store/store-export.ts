import type Database from 'better-sqlite3';
import { StoreError } from './dir-lock.js';
import { chunkSum, documentSum, intact, type ChunkColumns, type DocumentColumns } from './row-sums.js';
import { factsOf, openStore, type StoreFacts } from './store-file.js';

/** A stored chunk as an export writes it. */
export interface ExportedChunk {
  readonly text: string;
  readonly context: string;
  readonly start: number;
  readonly end: number;
  readonly vector: Float32Array;
}

/** A stored document as an export writes it (its metadata as the store keeps it, JSON). */
export interface ExportedDocument {
  readonly id: string;
  readonly text: string;
  readonly meta: string;
  readonly hash: string;
  readonly origin: string;
  readonly chunks: readonly ExportedChunk[];
}

/** Documents read per query: a page of them and their chunks is what an export holds at once. */
const PAGE = 256;

type DocumentRow = DocumentColumns & { sum?: Uint8Array | null };
type ChunkRow = ChunkColumns & { sum?: Uint8Array | null };

/**
 * The store at `file` read for `rcp-server export` (docs/corpus.md, "Export and import") as of one read transaction,
 * held from `open` to `close` (other processes write on; a WAL reader keeps its snapshot): its facts, its counts, then
 * its documents by id with their chunks in order, every row checked against its sum.
 */
export class StoreExport {
  private constructor(
    private readonly db: Database.Database,
    readonly facts: StoreFacts,
    readonly counts: { readonly documents: number; readonly chunks: number },
    /** Numbers per vector, from a stored vector's length (0 in a store without chunks). */
    readonly dimension: number,
  ) {}

  static open(file: string): StoreExport {
    const db = openStore(file);
    try {
      db.exec('BEGIN');
      const count = (table: string) => Number(db.prepare(`SELECT count(*) FROM ${table}`).pluck().get());
      const bytes = db.prepare('SELECT length(vector) FROM chunks LIMIT 1').pluck().get() as number | undefined;
      const counts = { documents: count('documents'), chunks: count('chunks') };
      return new StoreExport(db, factsOf(db, file), counts, (bytes ?? 0) / 4);
    } catch (error) {
      db.close();
      if (error instanceof StoreError) throw error;
      throw new StoreError(`${file} cannot be read for an export: ${(error as Error).message}`);
    }
  }

  *documents(): Generator<ExportedDocument> {
    const page = this.db.prepare('SELECT * FROM documents WHERE id > ? ORDER BY id LIMIT ?');
    const chunksOf = this.db.prepare('SELECT * FROM chunks WHERE doc_id = ? ORDER BY ordinal');
    for (let last = ''; ;) {
      const rows = page.all(last, PAGE) as DocumentRow[];
      for (const row of rows) {
        if (!intact(row.sum, documentSum(row))) throw new StoreError(`document ${row.id}: its row is damaged`);
        yield { ...row, chunks: (chunksOf.all(row.id) as ChunkRow[]).map(exportedChunk) };
      }
      if (rows.length < PAGE) return;
      last = rows.at(-1)!.id;
    }
  }

  close(): void {
    this.db.close();
  }
}

function exportedChunk(row: ChunkRow): ExportedChunk {
  if (!intact(row.sum, chunkSum(row))) throw new StoreError(`a chunk of document ${row.doc_id}: its row is damaged`);
  const bytes = Uint8Array.from(row.vector); // aligned, for the float32 view
  const vector = new Float32Array(bytes.buffer, 0, bytes.length / 4);
  return { text: row.text, context: row.context, start: row.start_offset, end: row.end_offset, vector };
}
