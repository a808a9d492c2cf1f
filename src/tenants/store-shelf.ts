import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { CATALOG_CHANNEL, listenTo, PostgresCatalog, spaceOf } from '../corpus/index.js';
import { checkName, CorpusExists, CorpusOpenElsewhere, NoSuchCorpus } from './corpus-dirs.js';
import type { CorpusPlace, CorpusShelf } from './shelf.js';
import { StartupError } from '../startup-error.js';

/** How long one read of the catalog answers `find` (a flood of requests for corpora reads it once in that time). */
const LISTING_MS = 1000;
/** The local folders of store corpora under the root: `rcp_c_<identity>`, as their schemas. */
const LOCAL_DIR = /^rcp_c_[0-9a-f]{24}$/;

/** The store's catalog cannot be read or written now (its database away): the CLI's exit 2, the wire's -32010. */
export class ShelfUnreachable extends StartupError {
  override name = 'ShelfUnreachable';
}

/** What `run` resolves to; a failure of the database itself, as ShelfUnreachable. */
async function reaching<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw new ShelfUnreachable(`the store of the corpora cannot be reached: ${(error as Error).message}`);
  }
}

/**
 * The named corpora of a PostgreSQL store of record (docs/tenants.md): its catalog lists them, each corpus's records
 * are in a schema of its own, and each process keeps its replica of an open corpus (snapshot and saved indexes) in a
 * folder of `root` named as that schema. Any process of the store may create or drop a corpus: another hears of it at
 * its commit (`watch`), or sees it within LISTING_MS if that was missed (a corpus open here is looked for again after
 * as long, and closed once it is gone).
 */
export class StoreShelf implements CorpusShelf {
  readonly recheckMs = LISTING_MS;
  readonly dropsOpen = true;
  readonly #catalog: PostgresCatalog;
  #listing: { at: number; corpora: Promise<Map<string, string>>; settled: boolean } | undefined;

  #changes = 0;
  #unwatch: (() => void) | undefined;

  constructor(
    private readonly url: string,
    readonly root: string,
  ) {
    this.#catalog = new PostgresCatalog(url);
  }

  get changes(): number {
    return this.#changes;
  }

  /** Hears at once of corpora created and dropped by any process (else within LISTING_MS), until closed. */
  watch(): void {
    this.#unwatch ??= listenTo(this.url, CATALOG_CHANNEL, () => {
      this.#changes += 1;
      this.#listing = undefined;
    });
  }

  async find(name: string): Promise<string | undefined> {
    return (await this.#recent()).get(name);
  }

  async list(): Promise<string[]> {
    this.#listing = undefined;
    return [...(await this.#recent()).keys()].sort();
  }

  async create(name: string): Promise<string> {
    checkName(name);
    const made = await reaching(() => this.#catalog.create(name));
    this.#listing = undefined;
    if (made === 'exists') throw new CorpusExists(`corpus '${name}' already exists`);
    return `schema ${spaceOf(made.id).schema} of the store`;
  }

  async drop(name: string): Promise<Readonly<Record<string, number>>> {
    checkName(name);
    const dropped = await reaching(() => this.#catalog.drop(name));
    this.#listing = undefined;
    if (dropped === 'absent') throw new NoSuchCorpus(`no corpus '${name}' in the store`);
    if (dropped === 'writing') {
      throw new CorpusOpenElsewhere(`a write to corpus '${name}' is in flight; drop it once it is answered`);
    }
    return { ...dropped };
  }

  async forget(id: string): Promise<void> {
    if (this.root !== '') await rm(join(this.root, spaceOf(id).schema), { recursive: true, force: true });
  }

  placeOf(_name: string, id: string): CorpusPlace {
    const space = spaceOf(id);
    return { dataDir: join(this.root, space.schema), space };
  }

  /**
   * Removes the local replicas of corpora dropped while this process was away. The folders are listed before
   * the catalog is read: a folder made after the listing is not looked at, and an identity absent from the catalog
   * read after it was dropped (identities are never used again).
   */
  async sweep(): Promise<string[]> {
    if (this.root === '') return [];
    const folders = (await readdir(this.root).catch(() => [] as string[])).filter((name) => LOCAL_DIR.test(name));
    const live = new Set([...(await reaching(() => this.#catalog.list())).values()].map((id) => spaceOf(id).schema));
    const stale = folders.filter((folder) => !live.has(folder));
    await Promise.all(stale.map((folder) => rm(join(this.root, folder), { recursive: true, force: true })));
    return stale;
  }

  close(): Promise<void> {
    this.#unwatch?.();
    return this.#catalog.close();
  }

  /**
   * The catalog as read at most LISTING_MS ago, or the reading under way (one at a time, however many requests wait
   * on it: a database that hangs is not sent a query per request).
   */
  #recent(): Promise<Map<string, string>> {
    const last = this.#listing;
    if (last === undefined || (last.settled && Date.now() - last.at > LISTING_MS)) {
      const corpora = reaching(() => this.#catalog.list());
      const listing = { at: Date.now(), corpora, settled: false };
      this.#listing = listing;
      corpora.then(
        () => (listing.settled = true),
        () => this.#listing === listing && (this.#listing = undefined),
      );
      return corpora;
    }
    return last.corpora;
  }
}
