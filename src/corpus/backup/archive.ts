import { createHash, type Hash } from 'node:crypto';
import { once } from 'node:events';
import { createReadStream, createWriteStream, fstatSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import tar from 'tar-stream';
import { syncPath } from '../../platform/files.js';
import { StoreError } from '../store/dir-lock.js';
import { isBackupName, MANIFEST, MANIFEST_MAX_BYTES, type BackupFile, type BackupManifest } from './manifest.js';

/** A file to archive under `name`, open (read from its start). */
export interface Source {
  readonly name: string;
  readonly fd: number;
}

/**
 * Writes `sources` and then the manifest (their names, sizes and SHA-256, computed as they are written) into a new tar
 * archive at `to` (ustar, as tar(1) reads it: `tar tvf` lists a backup).
 */
export async function writeArchive(
  to: string,
  sources: readonly Source[],
  manifest: Omit<BackupManifest, 'files'>,
): Promise<BackupManifest> {
  const pack = tar.pack();
  const written = pipeline(pack, createWriteStream(to, { flags: 'wx', mode: 0o600 }));
  const files: BackupFile[] = [];
  try {
    for (const source of sources) files.push(await addEntry(pack, source));
    const full: BackupManifest = { ...manifest, files };
    pack.entry({ name: MANIFEST, mode: 0o600 }, `${JSON.stringify(full, null, 2)}\n`);
    pack.finalize();
    await written;
    return full;
  } catch (error) {
    pack.destroy(error as Error);
    await written.catch(() => undefined);
    throw error;
  }
}

/**
 * One file into the archive, read in blocks by position from its descriptor (which stays the caller's to close: no
 * stream owns it), at the pace the archive is written.
 */
async function addEntry(pack: tar.Pack, { name, fd }: Source): Promise<BackupFile> {
  const { size, mtime } = fstatSync(fd);
  const hash = createHash('sha256');
  const entry = pack.entry({ name, size, mtime, mode: 0o600, type: 'file' });
  const ended = new Promise<void>((resolve, reject) => {
    entry.once('finish', () => resolve());
    entry.once('error', reject);
  });
  ended.catch(() => undefined); // awaited below; an entry failed while this throws is the archive's error, not a stray
  for (let at = 0; at < size;) {
    const block = Buffer.allocUnsafe(Math.min(BLOCK, size - at));
    const read = readSync(fd, block, 0, block.length, at);
    if (read === 0) throw new StoreError(`${name} shrank while it was archived`);
    hash.update(block.subarray(0, read));
    if (!entry.write(block.subarray(0, read))) await once(entry, 'drain');
    at += read;
  }
  entry.end(undefined); // streamx declares its argument required; none is written
  await ended;
  return { name, bytes: size, sha256: hash.digest('hex') };
}

/** Bytes read per block while archiving. */
const BLOCK = 1 << 20;

function hashing(hash: Hash): Transform {
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      done(null, chunk);
    },
  });
}

/** A file of an archive being read: its header, and its bytes as they come. */
type Entry = AsyncIterable<unknown> & { readonly header: tar.Header };

/** What an archive held: each file written into the folder with its size and SHA-256, and the manifest's text. */
export interface Extracted {
  readonly files: ReadonlyMap<string, BackupFile>;
  readonly manifest: string | undefined;
}

/**
 * Writes the files of the archive at `from` into `into` (an empty folder of the caller's), refusing anything a backup
 * does not hold: another name (a path, `..`, a link), a type other than a plain file, a name twice, a manifest over
 * its bound. Nothing is written outside `into`; what it holds is the caller's to remove when this throws.
 */
export async function extractArchive(from: string, into: string): Promise<Extracted> {
  const files = new Map<string, BackupFile>();
  let manifest: string | undefined;
  const extract = tar.extract();
  const reading = pipeline(createReadStream(from), extract);
  try {
    for await (const entry of extract) {
      const { name, type, size = 0 } = entry.header;
      if (type !== 'file' || !isBackupName(name)) {
        throw new StoreError(`${from} holds ${type ?? 'an entry'} '${name}', which no backup holds`);
      }
      if (files.has(name) || (name === MANIFEST && manifest !== undefined)) {
        throw new StoreError(`${from} holds '${name}' twice`);
      }
      if (name === MANIFEST) {
        if (size > MANIFEST_MAX_BYTES)
          throw new StoreError(`${from}: its ${MANIFEST} is over ${MANIFEST_MAX_BYTES} bytes`);
        manifest = (await readAll(entry)).toString('utf8');
        continue;
      }
      files.set(name, await writeEntry(entry, join(into, name)));
    }
    await reading;
  } catch (error) {
    extract.destroy();
    await reading.catch(() => undefined);
    if (error instanceof StoreError) throw error;
    // A system error (a full disk, a folder not writable) is the machine's, not the archive's.
    const system = typeof (error as NodeJS.ErrnoException).code === 'string';
    const reason = (error as Error).message;
    throw new StoreError(system ? `restore stopped: ${reason}` : `${from} is not a whole backup archive: ${reason}`);
  }
  return { files, manifest };
}

async function writeEntry(entry: Entry, path: string): Promise<BackupFile> {
  const hash = createHash('sha256');
  const out = createWriteStream(path, { flags: 'wx', mode: 0o600 });
  await pipeline(entry as AsyncIterable<Buffer>, hashing(hash), out);
  syncPath(path);
  return { name: entry.header.name, bytes: out.bytesWritten, sha256: hash.digest('hex') };
}

async function readAll(entry: AsyncIterable<unknown>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of entry) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
