import { withoutPassword } from '../platform/urls.js';
import type { Encoder } from '../models/index.js';
import { StartupError } from '../startup-error.js';
import type { DenseIndexOptions } from './hnsw/dense-index.js';
import type { Bm25Options } from '../lexical/bm25.js';
import type { FieldType, MetadataLimits } from './metadata.js';
import { CorpusStore, type StoreOptions } from './store/corpus-store.js';
import { StoreError } from './store/dir-lock.js';
import type { Retention } from './store/retired.js';
import type { StoreSpace } from './store/postgres/schema.js';

export interface CorpusSettings {
  readonly dir: string;
  readonly space: DenseIndexOptions['space'];
  readonly m: number;
  readonly efConstruction: number;
  readonly efSearch: number;
  readonly saveIntervalMs: number;
  /** `index.followMs`: how often other processes' writes to the data dir are looked for (default 50). */
  readonly followMs?: number | undefined;
  readonly maxDocumentBytes: number;
  readonly metadata: MetadataLimits;
  readonly fields: Readonly<Record<string, FieldType>>;
  readonly bm25: Bm25Options;
  /** `index.writable`; false: nothing in the dir is ever written (it may be on a read-only filesystem). */
  readonly writable?: boolean | undefined;
  /**
   * A PostgreSQL store of record shared by replicas (`store.url`): the data dir then holds this replica's snapshot of
   * it, written only by catching up (replica.ts).
   */
  readonly store?:
    { readonly url: string; readonly pollMs: number; readonly space?: StoreSpace | undefined } | undefined;
  /** `index.chunkCacheBytes`: chunk texts kept in memory for building hits; 0 or absent reads each from the store. */
  readonly chunkCacheBytes?: number | undefined;
  /** `index.snapshots`: the window of recent versions a retrieve may pin (§7.7.1); absent: only the current one. */
  readonly snapshots?: Snapshots | undefined;
  /** A named corpus's quota of documents (`corpora.maxDocuments`, docs/tenants.md); 0 or absent: none. */
  readonly maxDocuments?: number | undefined;
  /** A named corpus's quota of text bytes (`corpora.maxBytes`, docs/tenants.md); 0 or absent: none. */
  readonly maxBytes?: number | undefined;
}

/** §7.7.1 the window of versions kept: in the store (retired.ts) and in memory (snapshots/history.ts). */
export type Snapshots = Retention;

/** A data dir that cannot serve this configuration: a start-up error with clear text, never a wire code. */
export class CorpusError extends StartupError {
  override name = 'CorpusError';
}

/** Whether a process with these settings writes its data dir: a server that takes writes, or a replica catching up. */
export function writesLocally(settings: CorpusSettings): boolean {
  return settings.writable !== false || settings.store !== undefined;
}

/**
 * The data dir's store, opened for these settings and this encoder, or a CorpusError (a start-up error, one line
 * naming the reason): the store is unfit, the dir's live processes agreed on other settings (docs/architecture.md
 * §5), a replica's dir is shared, or its vectors were made by another encoder.
 */
export function openCorpusStore(settings: CorpusSettings, encoder: Encoder): CorpusStore {
  const writable = writesLocally(settings);
  const agreed = { ...agreedSettings(settings), 'models.encoder': encoder.info.identity };
  // The whole-file checks run once the corpus serves (Corpus `checked`), not on the path to ready.
  const store = openStore(settings.dir, {
    readOnly: !writable,
    agreed,
    scrubLater: true,
    retention: settings.snapshots,
  });
  try {
    if (settings.store !== undefined && !store.alone) {
      throw new CorpusError(
        `data dir ${settings.dir} is served by another process: a replica's data dir holds its own snapshot`,
      );
    }
    const built = store.getMeta('encoder');
    if (built !== undefined && built !== encoder.info.identity && store.counts().chunks > 0) {
      throw new CorpusError(
        `data dir ${settings.dir} was embedded with ${built}, but the configured encoder is ${encoder.info.identity}; ` +
          're-ingest into a new data dir (or configure the original encoder)',
      );
    }
    if (built !== encoder.info.identity && writable) store.setMeta('encoder', encoder.info.identity);
    return store;
  } catch (error) {
    void store.close();
    throw error;
  }
}

/**
 * What every process serving one data dir must build alike (docs/architecture.md §5), by the names of their
 * settings: two processes must never serve differently built indexes of one corpus.
 */
function agreedSettings(settings: CorpusSettings): Record<string, string> {
  const { space, m, efConstruction, bm25 } = settings;
  const agreed: Record<string, string> = {
    'index.space': space,
    'index.m': String(m),
    'index.efConstruction': String(efConstruction),
    'store.url': settings.store === undefined ? '(none)' : withoutPassword(settings.store.url),
  };
  for (const [name, value] of Object.entries(bm25)) agreed[`index.bm25.${name}`] = JSON.stringify(value);
  return agreed;
}

/** The store, or a CorpusError (a start-up error) when the store is unfit or the dir's processes disagree. */
function openStore(dir: string, options: StoreOptions): CorpusStore {
  try {
    return new CorpusStore(dir, options);
  } catch (error) {
    if (error instanceof StoreError) throw new CorpusError(error.message);
    throw error;
  }
}
