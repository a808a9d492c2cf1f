import { createReadStream } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, extname, join, relative } from 'node:path';
import { createInterface } from 'node:readline';
import type { CorpusDocument } from '../backend/ports.js';

/**
 * What `rcp-server ingest` reads: JSON Lines in BEIR form (`{"_id", "title", "text", "metadata"?}`, `id` accepted
 * too), and folders of `.txt` and `.md` files (id = the path under the folder). A BEIR title is kept in
 * `meta.title` (the situating context for `--contextual`) and, as BEIR evaluations do, put before the text.
 */
export interface SourceDocument extends CorpusDocument {
  readonly id: string;
  /** Where it came from, for error messages: `corpus.jsonl:12`, `notes/a.md`. */
  readonly origin: string;
}

export class SourceError extends Error {
  override name = 'SourceError';
}

interface BeirLine {
  _id?: unknown;
  id?: unknown;
  title?: unknown;
  text?: unknown;
  metadata?: unknown;
}

function fromBeir(line: BeirLine, origin: string): SourceDocument {
  const id = line._id ?? line.id;
  if (typeof id !== 'string' && typeof id !== 'number') throw new SourceError(`${origin}: no "_id" or "id"`);
  if (typeof line.text !== 'string') throw new SourceError(`${origin}: no "text"`);
  const title = typeof line.title === 'string' && line.title.trim() !== '' ? line.title.trim() : undefined;
  const metadata =
    typeof line.metadata === 'object' && line.metadata !== null ? (line.metadata as Record<string, unknown>) : {};
  return {
    id: String(id),
    text: title === undefined ? line.text : `${title}\n\n${line.text}`,
    meta: title === undefined ? metadata : { ...metadata, title },
    origin,
  };
}

async function* jsonLines(path: string): AsyncGenerator<SourceDocument> {
  let number = 0;
  for await (const line of createInterface({ input: createReadStream(path), crlfDelay: Infinity })) {
    number += 1;
    if (line.trim() === '') continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      throw new SourceError(`${path}:${number}: not JSON`);
    }
    yield fromBeir(parsed as BeirLine, `${basename(path)}:${number}`);
  }
}

async function* textFiles(root: string, dir = root): AsyncGenerator<SourceDocument> {
  const entries = (await readdir(dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name));
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* textFiles(root, path);
    else if (entry.isFile() && ['.txt', '.md'].includes(extname(entry.name).toLowerCase())) {
      const text = await readFile(path, 'utf8');
      const id = relative(root, path);
      const heading = /^#\s+(.+)$/m.exec(text)?.[1]?.trim();
      yield { id, text, meta: { title: heading ?? basename(entry.name, extname(entry.name)), path: id }, origin: id };
    }
  }
}

export async function* readSources(paths: readonly string[]): AsyncGenerator<SourceDocument> {
  for (const path of paths) {
    const info = await stat(path).catch(() => undefined);
    if (info === undefined) throw new SourceError(`${path}: no such file or directory`);
    if (info.isDirectory()) yield* textFiles(path);
    else if (/\.jsonl?$/i.test(path)) yield* jsonLines(path);
    else throw new SourceError(`${path}: expected a .jsonl file or a folder of .txt/.md files`);
  }
}

/** How many documents the sources hold (for progress and ETA): lines of JSON Lines, matching files of folders. */
export async function countSources(paths: readonly string[]): Promise<number> {
  let count = 0;
  for await (const document of readSources(paths)) if (document.id !== '') count += 1;
  return count;
}
