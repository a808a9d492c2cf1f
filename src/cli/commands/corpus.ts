import type { CorpusCommand } from '../../cli.js';
import { StartupError } from '../../startup-error.js';
import { createCorpus, dropCorpus, listCorpora } from '../../tenants/index.js';
import { loadSettings } from '../startup.js';

/**
 * `rcp-server corpus create|list|drop` (docs/tenants.md): the named corpora of a root, by their folders. A server on
 * that root sees a created corpus at its next request for it; a corpus open in any process is not dropped.
 */
export async function corpusCommand(command: CorpusCommand): Promise<number> {
  const root = command.root ?? loadSettings(command.configFile, {}).corpora.root;
  if (root === '') throw new StartupError('name the root of the named corpora: --data ROOT (or corpora.root)');
  const out = (line: string) => process.stdout.write(`${line}\n`);
  if (command.action === 'list') {
    for (const name of await listCorpora(root)) out(name);
    return 0;
  }
  const name = command.name ?? '';
  if (command.action === 'create') {
    out(`created corpus '${name}' in ${createCorpus(root, name)}`);
    return 0;
  }
  const { files, bytes } = dropCorpus(root, name);
  out(`dropped corpus '${name}': ${files} files, ${bytes} bytes removed`);
  return 0;
}
