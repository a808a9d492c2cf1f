import { SET_META, type Connection } from './writes.js';

/**
 * §7.7.1 snapshots in the store: the rows a write removes or replaces are kept, as they were, in `retired_documents`
 * and `retired_chunks` (with the seq that removed them), so that a process can serve a recent indexVersion exactly
 * after a restart, and a process following another's writes can read a removed chunk's text and vector
 * (docs/architecture.md §5). Every write prunes them to the window (`Retention`) in its own transaction and records
 * the oldest version the rows still describe: `snapshot_floor`. Version v needs every row removed after v, so once
 * the rows removed at or before P are gone, the versions from P on are whole.
 */

export const RETIRED_SCHEMA = `
  CREATE TABLE IF NOT EXISTS retired_documents (
    id TEXT NOT NULL, removed_seq INTEGER NOT NULL, text TEXT NOT NULL, meta TEXT NOT NULL, origin TEXT NOT NULL,
    seq INTEGER NOT NULL, removed_at INTEGER NOT NULL, PRIMARY KEY (id, removed_seq));
  CREATE INDEX IF NOT EXISTS retired_documents_removed ON retired_documents (removed_seq);
  CREATE TABLE IF NOT EXISTS retired_chunks (
    label INTEGER PRIMARY KEY, doc_id TEXT NOT NULL, ordinal INTEGER NOT NULL, text TEXT NOT NULL,
    context TEXT NOT NULL, start_offset INTEGER NOT NULL, end_offset INTEGER NOT NULL, vector BLOB NOT NULL,
    seq INTEGER NOT NULL, removed_seq INTEGER NOT NULL, sum BLOB, screen TEXT);
  CREATE INDEX IF NOT EXISTS retired_chunks_removed ON retired_chunks (removed_seq);
  CREATE INDEX IF NOT EXISTS retired_chunks_seq ON retired_chunks (seq);
`;

/** How many recent versions stay queryable (index.snapshots): 0 keeps none but the current one. */
export interface Retention {
  /** The last `versions` versions (the current one included). */
  readonly versions: number;
  /** Versions whose removals are older than this are dropped. */
  readonly maxAgeMs: number;
  /** At most this many removed chunks are kept; the oldest versions go first. */
  readonly maxChunks: number;
  /** At most this many bytes of removed rows (texts and vectors) are kept; the oldest versions go first. */
  readonly maxBytes: number;
}

export const SNAPSHOT_FLOOR = 'snapshot_floor';
/** Versions above the floor a replica never held whole (it applied several writes at once): `[[from, to], …]`. */
export const SNAPSHOT_HOLES = 'snapshot_holes';

/** Inclusive ranges of versions. */
export type VersionRanges = readonly (readonly [number, number])[];

const SET_FLOOR = `INSERT INTO meta (key, value) VALUES ('${SNAPSHOT_FLOOR}', ?)
  ON CONFLICT (key) DO UPDATE SET value = max(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))`;

/**
 * Keeps document `id` as it is before write `seq` removes or replaces it. A row that write itself wrote (a document
 * given twice in one batch) was in no version: it is not kept, and never takes the place of the one before it.
 */
export function retireDocument(connection: Connection, id: string, seq: number, retention?: Retention): void {
  if (!retains(retention)) return;
  connection
    .sql(
      `INSERT INTO retired_documents (id, removed_seq, text, meta, origin, seq, removed_at)
        SELECT id, ?, text, meta, origin, seq, ? FROM documents WHERE id = ? AND seq < ?`,
    )
    .run(seq, Date.now(), id, seq);
}

/** Keeps chunk `label` (or every chunk of document `docId`) as it is before write `seq` removes it (as a document). */
export function retireChunks(
  connection: Connection,
  where: { label: number } | { docId: string },
  seq: number,
  retention?: Retention,
): void {
  if (!retains(retention)) return;
  const [column, value] = 'label' in where ? ['label', where.label] : ['doc_id', where.docId];
  connection
    .sql(
      `INSERT OR REPLACE INTO retired_chunks
        (label, doc_id, ordinal, text, context, start_offset, end_offset, vector, seq, removed_seq, sum, screen)
        SELECT label, doc_id, ordinal, text, context, start_offset, end_offset, vector, seq, ?, sum, screen
        FROM chunks WHERE ${column} = ? AND seq < ?`,
    )
    .run(seq, value, seq);
}

/**
 * After write `seq`: drops the rows no version in the window needs and moves the floor. Without retention only the
 * current version is whole. `hole`: versions this write passed over without holding them whole (a replica's catch-up
 * of several writes at once); those before it keep what they had.
 */
export function pruneRetired(
  connection: Connection,
  seq: number,
  retention?: Retention,
  hole?: readonly [number, number],
): void {
  const sql = (text: string) => connection.sql(text);
  let through = seq;
  if (retains(retention)) {
    through = Math.max(0, seq - retention.versions + 1);
    const aged = sql('SELECT max(removed_seq) FROM retired_documents WHERE removed_at < ?')
      .pluck()
      .get(Date.now() - retention.maxAgeMs) as number | null;
    const crowded = sql('SELECT removed_seq FROM retired_chunks ORDER BY removed_seq DESC LIMIT 1 OFFSET ?')
      .pluck()
      .get(retention.maxChunks) as number | undefined;
    through = Math.max(through, aged ?? 0, crowded ?? 0, heavyThrough(connection, seq, retention.maxBytes));
  }
  sql('DELETE FROM retired_chunks WHERE removed_seq <= ?').run(through);
  sql('DELETE FROM retired_documents WHERE removed_seq <= ?').run(through);
  sql(SET_FLOOR).run(String(through));
  const floor = Number(sql(`SELECT value FROM meta WHERE key = '${SNAPSHOT_FLOOR}'`).pluck().get());
  const holes = [...holesOf(connection), ...(hole === undefined ? [] : [hole])].filter(([, to]) => to >= floor);
  sql(SET_META).run(SNAPSHOT_HOLES, JSON.stringify(holes));
}

/** The holes a store records (none for one that never applied writes at once). */
export function holesOf(connection: Pick<Connection, 'sql'>): VersionRanges {
  const recorded = connection.sql(`SELECT value FROM meta WHERE key = '${SNAPSHOT_HOLES}'`).pluck().get() as
    string | undefined;
  return recorded === undefined ? [] : (JSON.parse(recorded) as [number, number][]);
}

/** Bytes of each removed row kept, newest first, summed: past `maxBytes`, the versions from there back go. */
const HEAVY = `SELECT removed_seq FROM (
    SELECT removed_seq, SUM(bytes) OVER (ORDER BY removed_seq DESC ROWS UNBOUNDED PRECEDING) AS total FROM (
      SELECT removed_seq, length(CAST(text AS BLOB)) + length(CAST(context AS BLOB)) + length(vector) AS bytes
        FROM retired_chunks
      UNION ALL SELECT removed_seq, length(CAST(text AS BLOB)) + length(CAST(meta AS BLOB)) FROM retired_documents))
  WHERE total > ? ORDER BY removed_seq DESC LIMIT 1`;

/** The floor `maxBytes` asks for; read only after a write that kept rows (a scan of the rows kept). */
function heavyThrough(connection: Connection, seq: number, maxBytes: number): number {
  const kept = connection.sql('SELECT 1 FROM retired_documents WHERE removed_seq = ? LIMIT 1').get(seq);
  if (kept === undefined) return 0;
  return (connection.sql(HEAVY).pluck().get(maxBytes) as number | undefined) ?? 0;
}

function retains(retention: Retention | undefined): retention is Retention {
  return retention !== undefined && retention.versions > 1;
}
