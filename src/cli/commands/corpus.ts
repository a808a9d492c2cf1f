import type { CorpusCommand } from '../../cli.js';
import { StartupError } from '../../startup-error.js';
import { FolderShelf, StoreShelf, type CorpusShelf } from '../../tenants/index.js';
import { loadSettings } from '../startup.js';

/**
 * `rcp-server corpus create|list|drop` (docs/tenants.md): the named corpora of a root, by their folders, or of a
 * PostgreSQL store of record, by its catalog. A server sees a created corpus at its next request for it; a corpus
 * open in any process (a root) or written to (a store) is not dropped.
 */
export async function corpusCommand(command: CorpusCommand): Promise<number> {
  const shelf = shelfOf(command);
  const out = (line: string) => process.stdout.write(`${line}\n`);
  try {
    if (command.action === 'list') {
      for (const name of await shelf.list()) out(name);
      return 0;
    }
    const name = command.name ?? '';
    if (command.action === 'create') {
      out(`created corpus '${name}' in ${await shelf.create(name)}`);
      return 0;
    }
    const removed = Object.entries(await shelf.drop(name)).map(([what, count]) => `${count} ${what}`);
    out(`dropped corpus '${name}': ${removed.join(', ')} removed`);
    return 0;
  } finally {
    await shelf.close();
  }
}

/** The store named by --store (else store.url) when there is one; else the root named by --data (else corpora.root). */
function shelfOf(command: CorpusCommand): CorpusShelf {
  const config = loadSettings(command.configFile, {});
  const store = command.store ?? config.store.url;
  const root = command.root ?? config.corpora.root;
  // A store's corpora need no root here: the root holds a serving process's replicas of them.
  if (store !== '') return new StoreShelf(store, command.root ?? '');
  if (root === '') throw new StartupError('name the root of the named corpora: --data ROOT (or corpora.root)');
  return new FolderShelf(root);
}
