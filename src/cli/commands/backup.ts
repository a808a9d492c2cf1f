import type { BackupCommand } from '../../cli.js';
import { backupDataDir, exportDataDir, restoreDataDir } from '../../corpus/index.js';
import { StartupError } from '../../startup-error.js';
import { lowerThreadPriority } from '../../platform/thread-priority.js';
import { loadSettings } from '../startup.js';

/**
 * The scheduling priority a backup or an export runs at: maintenance beside servers that answer queries on the same
 * cores yields to them (the libuv threads that read and write its files inherit it).
 */
const MAINTENANCE_NICE = 10;

/**
 * `rcp-server backup --to FILE`, `rcp-server restore FILE` and `rcp-server export --to FILE` over the configured data
 * dir (docs/corpus.md, "Backup and restore", "Export and import"). None loads a model or an index: a backup copies
 * files, a restore checks and moves them in, an export reads the store.
 */
export async function backupCommand(command: BackupCommand): Promise<number> {
  try {
    return await run(command);
  } catch (error) {
    // A system error (a folder missing or read-only, a full disk, a name too long) is the operator's to fix: one line,
    // exit 2, like every other reason these commands stop.
    const code = (error as NodeJS.ErrnoException).code;
    if (error instanceof StartupError || typeof code !== 'string') throw error;
    throw new StartupError(`${command.command} stopped: ${(error as Error).message}`);
  }
}

async function run(command: BackupCommand): Promise<number> {
  const { dataDir } = loadSettings(command.configFile, command.overrides);
  if (command.command !== 'restore') lowerThreadPriority(MAINTENANCE_NICE);
  const started = performance.now();
  const seconds = () => ((performance.now() - started) / 1000).toFixed(1);
  if (command.command === 'export') {
    const header = await exportDataDir(dataDir, command.file);
    process.stdout.write(
      `exported ${dataDir} to ${command.file} in ${seconds()} s: ${header.documents} documents, ` +
        `${header.chunks} chunks at indexVersion ${header.indexVersion}, embedded with ${header.encoder}\n`,
    );
    return 0;
  }
  if (command.command === 'restore') {
    const manifest = await restoreDataDir(command.file, dataDir);
    process.stdout.write(
      `restored ${command.file} into ${dataDir} in ${seconds()} s: indexVersion ${manifest.seq}, ` +
        `${savedPart(manifest.indexesSeq, manifest.seq)}\n`,
    );
    return 0;
  }
  const { manifest, passedOver } = await backupDataDir(dataDir, command.file);
  const bytes = manifest.files.reduce((sum, file) => sum + file.bytes, 0);
  process.stdout.write(
    `backed up ${dataDir} to ${command.file} in ${seconds()} s (${bytes} bytes): indexVersion ${manifest.seq}, ` +
      `${savedPart(manifest.indexesSeq, manifest.seq)}\n`,
  );
  for (const reason of passedOver) process.stdout.write(`  passed over ${reason}\n`);
  return 0;
}

function savedPart(indexesSeq: number, seq: number): string {
  if (indexesSeq === 0) return 'no saved indexes (built from the store at start)';
  const after = seq - indexesSeq;
  return `saved indexes at ${indexesSeq}${after > 0 ? ` (the ${after} writes after them replayed at start)` : ''}`;
}
