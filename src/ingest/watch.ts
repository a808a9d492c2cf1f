import { stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { within } from '../content/index.js';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Corpus } from '../corpus/index.js';
import { cannotRead, type DocumentParser } from '../documents/index.js';
import { folderFiles, isFolder, parseFile, type FolderFile } from './document-files.js';
import { IngestRun, Progress, type IngestOptions } from './ingest.js';
import { isRejection } from './sources.js';

/** A file as last seen: its path, and the stat that says whether it changed. */
export interface Seen extends FolderFile {
  readonly mtimeMs: number;
  readonly size: number;
}

export interface WatchOptions extends IngestOptions {
  /** The folders and document files watched (JSON Lines are read once, by the first ingest). */
  readonly paths: readonly string[];
  readonly parser: DocumentParser;
  /** How often the folders are looked at again. */
  readonly intervalMs: number;
  /** Stops the watch (SIGINT, SIGTERM) once the changes in hand are written. */
  readonly signal: AbortSignal;
}

export interface WatchSummary {
  added: number;
  deleted: number;
  rejected: number;
}

/**
 * `rcp-server ingest --watch` (docs/documents.md): after the first ingest, the folders and document files named are
 * looked at every `intervalMs`, by name, size and modification time. A new or changed file is read once it has kept
 * its size and time from one look to the next (a file still being copied is not read half-written), and written
 * through the same path as ingest (unchanged content is no write); a file gone is deleted from the corpus, by its id.
 * `baseline` is what the folders held before the first ingest read them, so a change made meanwhile is found too.
 */
export async function watchSources(
  corpus: Corpus,
  baseline: ReadonlyMap<string, Seen>,
  options: WatchOptions,
  out: NodeJS.WritableStream,
): Promise<WatchSummary> {
  const summary: WatchSummary = { added: 0, deleted: 0, rejected: 0 };
  const seen = new Map(baseline);
  /** Files found changed at the last look, as they were then: read when the next look finds them the same. */
  const pending = new Map<string, Seen>();
  const reported = new Set<string>();
  while (!options.signal.aborted) {
    await sleep(options.intervalMs, undefined, { signal: options.signal }).catch(() => undefined);
    if (options.signal.aborted) break;
    const look = await scanSources(options.paths);
    reportUnreadable(look.unreadable, reported, out);
    // A file under a folder that could not be read this time is not gone: its document stays as it was.
    const unseen = (file: Seen) => !look.unreadable.some(({ path }) => within(file.path, path));
    const gone = [...seen.values()].filter((file) => !look.files.has(file.id) && unseen(file)).map((file) => file.id);
    for (const id of [...pending.keys()]) if (!look.files.has(id)) pending.delete(id);
    const ready: Seen[] = [];
    for (const file of look.files.values()) {
      if (same(file, seen.get(file.id))) pending.delete(file.id);
      else if (same(file, pending.get(file.id))) ready.push(file);
      else pending.set(file.id, file);
    }
    if (gone.length > 0) summary.deleted += await deleteGone(corpus, gone, seen, out);
    if (ready.length > 0) await writeChanged(corpus, ready, options, out, summary);
    for (const file of ready) {
      seen.set(file.id, file);
      pending.delete(file.id);
    }
  }
  return summary;
}

async function deleteGone(corpus: Corpus, gone: string[], seen: Map<string, Seen>, out: NodeJS.WritableStream) {
  const { deleted } = await corpus.delete(gone);
  for (const id of gone) {
    seen.delete(id);
    out.write(`watch: deleted ${id}\n`);
  }
  return deleted;
}

/** Says once that a path could not be read (and again if it recovers and fails later). */
function reportUnreadable(unreadable: readonly Unreadable[], reported: Set<string>, out: NodeJS.WritableStream): void {
  const now = new Set(unreadable.map(({ path }) => path));
  for (const path of reported) if (!now.has(path)) reported.delete(path);
  for (const { path, reason } of unreadable) {
    if (reported.has(path)) continue;
    reported.add(path);
    out.write(`watch: ${path}: ${reason}; the documents under it are kept as they were\n`);
  }
}

async function writeChanged(
  corpus: Corpus,
  files: readonly Seen[],
  options: WatchOptions,
  out: NodeJS.WritableStream,
  summary: WatchSummary,
): Promise<void> {
  const run = new IngestRun(corpus, options, new Progress(files.length, out));
  for (const file of files) {
    const item = await parseFile(file, options.parser);
    if (isRejection(item)) out.write(`watch: rejected ${item.origin}: ${item.reason}\n`);
    await run.take(item);
  }
  await run.finish();
  summary.added += run.added;
  summary.rejected += run.rejectedCount;
  const written = files.filter((file) => !run.rejected.some((rejection) => rejection.origin === file.id));
  if (run.added > 0) {
    const names =
      written
        .slice(0, 10)
        .map((file) => file.id)
        .join(', ') + (written.length > 10 ? ', …' : '');
    out.write(
      `watch: wrote ${run.added} changed document${run.added === 1 ? '' : 's'} (${names}; ${run.chunks} chunks)\n`,
    );
  }
}

function same(file: Seen, before: Seen | undefined): boolean {
  return before !== undefined && before.mtimeMs === file.mtimeMs && before.size === file.size;
}

/** A path a look could not read, and why. */
interface Unreadable {
  readonly path: string;
  readonly reason: string;
}

/**
 * The document files the paths hold now, by id (folders walked; a single document file by its name), and the paths
 * that could not be read this time (a folder that cannot be listed, a file that cannot be looked at): not gone.
 */
export async function scanSources(
  paths: readonly string[],
): Promise<{ files: Map<string, Seen>; unreadable: Unreadable[] }> {
  const files = new Map<string, Seen>();
  const unreadable: Unreadable[] = [];
  for (const path of paths) {
    if (/\.jsonl?$/i.test(path)) continue;
    const folder = await isFolder(path).catch((error: unknown) => {
      unreadable.push({ path, reason: cannotRead(error) });
      return undefined;
    });
    if (folder === undefined) continue;
    const found = folder ? folderFiles(path) : [{ id: basename(path), path }];
    for await (const file of found) {
      if ('reason' in file) unreadable.push({ path: file.origin, reason: file.reason });
      if (!('path' in file)) continue;
      const info = await stat(file.path).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOENT') unreadable.push({ path: file.path, reason: cannotRead(error) });
        return undefined;
      });
      if (info?.isFile() === true) files.set(file.id, { ...file, mtimeMs: info.mtimeMs, size: info.size });
    }
  }
  return { files, unreadable };
}
