import type { StoreSpace } from '../corpus/index.js';
import { corpusDir, corpusExists, corpusIdentity, createCorpus, dropCorpus, listCorpora } from './corpus-dirs.js';

/**
 * Where the named corpora of a process are kept (docs/tenants.md): the folders of `corpora.root` (FolderShelf), or
 * the catalog of a PostgreSQL store of record (StoreShelf). Everything that creates, finds, lists and drops corpora
 * asks its shelf, so that serving them is the same whichever keeps them.
 */
export interface CorpusShelf {
  /**
   * How long a corpus found open here stays trusted to exist without looking again: for ever in a folder (a process
   * holding it open keeps any other from dropping it), briefly in a store (any process may drop it).
   */
  readonly recheckMs: number;
  /** Changes heard so far (a store's: corpora created or dropped anywhere): an open corpus is looked for again at each. */
  readonly changes: number;
  /** Starts hearing of changes made by other processes (a serving process; not the CLI). */
  watch(): void;
  /** Whether a corpus open in this process can be dropped (a store's) or must be closed first (a folder's). */
  readonly dropsOpen: boolean;
  /** The identity of corpus `name` if it exists ('' for a folder whose mark holds none); undefined if it does not. */
  find(name: string): Promise<string | undefined>;
  /** The names of every corpus, sorted. */
  list(): Promise<string[]>;
  /** Makes corpus `name`; says where. Throws CorpusNameError, CorpusExists. */
  create(name: string): Promise<string>;
  /** Removes corpus `name`; says what was removed. Throws CorpusNameError, NoSuchCorpus, CorpusOpenElsewhere. */
  drop(name: string): Promise<Readonly<Record<string, number>>>;
  /** Removes what this process kept of dropped corpora, when none is open here (at start): the folders removed. */
  sweep(): Promise<string[]>;
  /** Removes what this process kept of corpus identity `id`, dropped and closed here. */
  forget(id: string): Promise<void>;
  /** Where corpus `name` of identity `id` is opened: its data dir, and its space in a store of record. */
  placeOf(name: string, id: string): CorpusPlace;
  close(): Promise<void>;
}

export interface CorpusPlace {
  readonly dataDir: string;
  readonly space?: StoreSpace;
}

/** The named corpora in the folders of a root (corpus-dirs.ts), each its own SQLite store. */
export class FolderShelf implements CorpusShelf {
  readonly recheckMs = Infinity;
  readonly dropsOpen = false;
  readonly changes = 0;

  constructor(readonly root: string) {}

  /** Nothing to hear: a folder corpus open here cannot be dropped by another process. */
  watch(): void {}

  find(name: string): Promise<string | undefined> {
    const found = corpusExists(this.root, name) ? corpusIdentity(this.root, name) : undefined;
    return Promise.resolve(found);
  }

  list(): Promise<string[]> {
    return listCorpora(this.root);
  }

  create(name: string): Promise<string> {
    return Promise.resolve(createCorpus(this.root, name));
  }

  drop(name: string): Promise<Readonly<Record<string, number>>> {
    return Promise.resolve(dropCorpus(this.root, name));
  }

  /** A folder corpus is removed whole by its drop: nothing is left behind. */
  sweep(): Promise<string[]> {
    return Promise.resolve([]);
  }

  forget(): Promise<void> {
    return Promise.resolve();
  }

  placeOf(name: string): CorpusPlace {
    return { dataDir: corpusDir(this.root, name) };
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
