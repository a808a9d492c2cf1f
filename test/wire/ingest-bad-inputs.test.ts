import { spawn } from 'node:child_process';
import {
  appendFileSync,
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/wire.js';
import { track } from '../helpers/children.js';

/**
 * `rcp-server ingest` as an operator runs it, on inputs that used to end the run or slip in as text: each bad file or
 * line is listed as rejected with its reason, everything else is ingested, and memory stays bounded however large an
 * input is. Files are made here; the huge ones are sparse, so they cost no disk.
 */
const WORK = mkdtempSync(join(tmpdir(), 'rcp-ingest-bad-'));
// Removing a mode-000 file needs only its folder to be writable.
afterAll(() => rmSync(WORK, { recursive: true, force: true }));

/** The default `content.documents.maxFileBytes`: the tests run with the default configuration. */
const MAX_FILE_BYTES = 64 * 1024 * 1024;
/** A preload that prints the process's peak resident memory (KiB) as it exits, whatever the exit path. */
const PRINT_MAX_RSS =
  'data:text/javascript,process.on("exit",()=>process.stderr.write(`maxRSS ${process.resourceUsage().maxRSS}\\n`))';

interface Ingested {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** Peak resident memory in bytes. */
  readonly maxRss: number;
  readonly added: number;
  readonly rejected: number;
}

let runs = 0;
function ingest(...paths: string[]): Promise<Ingested> {
  const data = join(WORK, `data-${runs++}`);
  const child = track(
    spawn(process.execPath, ['--import', PRINT_MAX_RSS, 'bin/rcp-server.js', 'ingest', '--data', data, ...paths], {
      cwd: ROOT,
      env: { ...process.env, RCP_LOG_LEVEL: 'warn' },
    }),
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) =>
    child.once('close', (code) => {
      const summary = /ingested (\d+) documents .*; \d+ unchanged, (\d+) rejected/.exec(stdout);
      resolve({
        code,
        stdout,
        stderr,
        maxRss: Number(/maxRSS (\d+)/.exec(stderr)?.[1] ?? NaN) * 1024,
        added: Number(summary?.[1] ?? NaN),
        rejected: Number(summary?.[2] ?? NaN),
      });
    }),
  );
}

/** What the same command costs on a one-line corpus: the bound below is measured from it, not guessed. */
let baselineRss = 0;
beforeAll(async () => {
  writeFileSync(join(WORK, 'tiny.jsonl'), `${JSON.stringify({ _id: 't', text: 'A tiny corpus.' })}\n`);
  const tiny = await ingest(join(WORK, 'tiny.jsonl'));
  expect(tiny.code).toBe(0);
  baselineRss = tiny.maxRss;
  expect(baselineRss).toBeGreaterThan(0);
});
/** Headroom over the baseline: a few line buffers and batches, far below what any of the huge inputs would take. */
const HEADROOM = 128 * 1024 * 1024;

describe('rcp-server ingest survives bad inputs', () => {
  it('lists a binary file and a non-UTF-8 file as rejected, not text, and ingests the text files beside them', async () => {
    const folder = join(WORK, 'mixed');
    mkdirSync(folder);
    writeFileSync(join(folder, 'a.md'), '# Ribosomes\n\nRibosomes translate messenger RNA.\n');
    writeFileSync(
      join(folder, 'image.txt'),
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]),
    );
    writeFileSync(join(folder, 'latin1.md'), Buffer.from('Caf\xe9 au lait, cr\xe8me br\xfbl\xe9e.', 'latin1'));
    writeFileSync(join(folder, 'z.txt'), 'Enzymes lower activation energy.');

    const result = await ingest(folder);
    expect(result).toMatchObject({ code: 1, added: 2, rejected: 2 });
    // Read by its content, whatever its name: a PNG named .txt is no document.
    expect(result.stdout).toMatch(
      /^ {2}rejected image\.txt: binary, not a document format read here \(a PNG image\)$/m,
    );
    expect(result.stdout).toMatch(/^ {2}rejected latin1\.md: not text \(invalid UTF-8\)$/m);
  });

  it('lists files it cannot read with why, and goes on with the rest', async () => {
    const folder = join(WORK, 'unreadable');
    mkdirSync(join(folder, 'real-folder'), { recursive: true });
    writeFileSync(join(folder, 'a.md'), 'Neurons fire action potentials.');
    symlinkSync(join(folder, 'deleted.md'), join(folder, 'gone.md')); // vanished: the link dangles
    symlinkSync(join(folder, 'real-folder'), join(folder, 'folder.txt')); // EISDIR
    writeFileSync(join(folder, 'locked.txt'), 'Locked away from readers.');
    chmodSync(join(folder, 'locked.txt'), 0o000);
    writeFileSync(join(folder, 'z.md'), 'Glia support neurons.');
    // As root, mode 000 does not stop reading; the links above are unreadable for anyone.
    const lockedOut = cannotRead(join(folder, 'locked.txt'));

    const result = await ingest(folder);
    expect(result).toMatchObject({ code: 1, added: lockedOut ? 2 : 3, rejected: lockedOut ? 3 : 2 });
    expect(result.stdout).toMatch(/^ {2}rejected gone\.md: cannot be read \(ENOENT: no such file or directory\)$/m);
    expect(result.stdout).toMatch(/^ {2}rejected folder\.txt: is a directory, not a file$/m);
    if (lockedOut)
      expect(result.stdout).toMatch(/^ {2}rejected locked\.txt: cannot be read \(EACCES: permission denied\)$/m);
  });

  it('rejects a text file over the document limit by its size without reading it, and ingests the files after it', async () => {
    const folder = join(WORK, 'large');
    mkdirSync(folder);
    writeFileSync(join(folder, 'huge.txt'), 'The start of a very large file.\n');
    truncateSync(join(folder, 'huge.txt'), 2.5e9);
    writeFileSync(join(folder, 'later.md'), 'Written after the huge file in name order.');
    writeFileSync(join(WORK, 'after.jsonl'), `${JSON.stringify({ _id: 'after', text: 'A later source.' })}\n`);

    const result = await ingest(folder, join(WORK, 'after.jsonl'));
    expect(result).toMatchObject({ code: 1, added: 2, rejected: 1 });
    expect(result.stdout).toMatch(
      new RegExp(
        `^ {2}rejected huge\\.txt: 2500000000 bytes exceed the ${MAX_FILE_BYTES}-byte file limit \\(not read\\)$`,
        'm',
      ),
    );
    expect(result.maxRss).toBeLessThan(baselineRss + HEADROOM);
  });

  it('rejects one enormous JSON line as that line, in bounded memory, and ingests the lines around it', async () => {
    const file = join(WORK, 'big.jsonl');
    // The first document is longer than the 8 KB sniffed for binary content, so the hole below is read as a line.
    const first = JSON.stringify({ _id: 'first', text: 'Photosynthesis makes sugar from light. '.repeat(300) });
    const head = `${first}\n{"_id": "enormous", "text": "`;
    writeFileSync(file, head);
    const enormous = 2 ** 30; // beyond V8's longest string, and far beyond the memory bound
    truncateSync(file, Buffer.byteLength(head) + enormous);
    const tail = [
      { _id: 'second', text: 'Chlorophyll absorbs red and blue light.' },
      { id: 'third', text: 'Stomata open.' },
    ];
    appendFileSync(file, `"}\n${tail.map((line) => JSON.stringify(line)).join('\n')}\n`);

    const result = await ingest(file);
    expect(result).toMatchObject({ code: 1, added: 3, rejected: 1 });
    const lineBytes = Buffer.byteLength('{"_id": "enormous", "text": "') + enormous + 2;
    expect(result.stdout).toMatch(
      new RegExp(
        `^ {2}rejected big\\.jsonl:2: a line of ${lineBytes} bytes exceeds the \\d+-byte limit for one line$`,
        'm',
      ),
    );
    expect(result.maxRss).toBeLessThan(baselineRss + HEADROOM);
  });
});

function cannotRead(path: string): boolean {
  try {
    readFileSync(path);
    return false;
  } catch {
    return true;
  }
}
