import type { Dirent } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { basename, extname, join, relative } from 'node:path';
import { cannotRead, isDocumentName, type DocumentParser, type ParsedDocument } from '../documents/index.js';
import type { SourceItem, SourceRejection } from './sources.js';

/**
 * Folders of documents (docs/documents.md): every file whose name declares a format read here (.pdf, .docx, .html,
 * .md, .txt, …) or declares none, read by its content through the document parser, its id the path under the folder
 * it was found in. Hidden files and folders are left; a file of any other name is a `skipped` item (counted, never a
 * failure). Links are followed to files, never into folders (a cycle would never end).
 */
export interface FolderFile {
  readonly id: string;
  readonly path: string;
}

/** The document files under `root`, in name order; a folder that cannot be listed is a rejection. */
export async function* folderFiles(root: string, dir = root): AsyncGenerator<FolderFile | SourceItem> {
  const entries = await listFolder(dir);
  if (!Array.isArray(entries)) {
    yield entries;
    return;
  }
  for (const entry of entries) {
    if (entry.name.startsWith('.')) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* folderFiles(root, path);
    else if (isDocumentName(entry.name)) yield { id: relative(root, path), path };
    else yield { origin: relative(root, path), skipped: extname(entry.name).toLowerCase() };
  }
}

async function listFolder(dir: string): Promise<Dirent[] | SourceRejection> {
  try {
    const entries = await readdir(dir, { withFileTypes: true });
    return entries.sort((a, b) => a.name.localeCompare(b.name));
  } catch (error) {
    return { origin: dir, reason: cannotRead(error) };
  }
}

/** How many document files a folder holds (for progress), found without reading any. */
export async function countFolderFiles(root: string): Promise<number> {
  let count = 0;
  for await (const item of folderFiles(root)) if ('path' in item || 'reason' in item) count += 1;
  return count;
}

/**
 * The documents of files, parsed `ahead` at a time (the parser's processes kept busy while the corpus writes) and
 * handed on in order; a file that is no document is a rejection saying why.
 */
export async function* parsedInOrder(
  files: AsyncIterable<FolderFile | SourceItem>,
  parser: DocumentParser,
  ahead: number,
): AsyncGenerator<SourceItem> {
  const pending: Promise<SourceItem>[] = [];
  for await (const file of files) {
    pending.push('path' in file ? parseFile(file, parser) : Promise.resolve(file));
    if (pending.length > ahead) yield await pending.shift()!;
  }
  while (pending.length > 0) yield await pending.shift()!;
}

export async function parseFile(file: FolderFile, parser: DocumentParser): Promise<SourceItem> {
  try {
    return documentOf(file, await parser.parseFile(file.path, { name: file.path }));
  } catch (error) {
    return { origin: file.id, reason: (error as Error).message };
  }
}

/** A parsed file as a document: its own title, else its file name; `path` its id. */
function documentOf(file: FolderFile, parsed: ParsedDocument): SourceItem {
  const name = basename(file.path);
  const title = typeof parsed.meta.title === 'string' ? parsed.meta.title : basename(name, extname(name));
  const meta = { ...parsed.meta, title, path: file.id };
  return { id: file.id, text: parsed.text, meta, origin: file.id, file: file.path };
}

/** Whether `path` is a folder (else a file); undefined when it does not exist. */
export async function isFolder(path: string): Promise<boolean | undefined> {
  try {
    return (await stat(path)).isDirectory();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}
