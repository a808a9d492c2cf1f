/**
 * The corpus's entry (docs/architecture.md §3): the ports methods and retrieval call, and the Corpus the composition
 * opens. Other layers import this module only; the store, indexes and their workers stay inside.
 */

export type * from './ports.js';
export { headingPathAt, outlineOf, pageAt, type Outline } from './outline.js';
export { Corpus, CorpusError, contentHash, type AddResult, type CorpusSettings, type CorpusStats } from './corpus.js';
export type { Snapshots } from './settings.js';
export { backupDataDir } from './backup/backup.js';
export { restoreDataDir } from './backup/restore.js';
export { exportDataDir, isExportHead, type ExportHeader } from './backup/export.js';
export { MAX_PREPARED_CHUNKS, MAX_PREPARED_CONTEXT, type PreparedDocument } from './prepared.js';
export { WRITE_PROGRESS } from './prepare.js';
export type { DocumentOrigin } from './store/corpus-store.js';
export { DirLock } from './store/dir-lock.js';
export { CATALOG_CHANNEL, PostgresCatalog, type DroppedRecords } from './store/postgres/catalog.js';
export { listenTo } from './store/postgres/follower.js';
export { spaceOf, type StoreSpace } from './store/postgres/schema.js';
export { screenText, type Screen, type Signal } from './screen/screen.js';
export { withoutHidden } from './screen/hidden.js';
