/**
 * `npm run bench -- documents` (docs/documents.md): documents per second for each format, read from files made here
 * by Debian's pandoc and LibreOffice from the same Markdown (RCP_BENCH_DOCUMENTS documents, default 40, each a title
 * and four sections of three SciFact abstracts), against plain text of the same words in the same run:
 *
 * 1. read alone: the parser process (src/documents) over every file, one process, as ingest uses it;
 * 2. `rcp-server ingest --chunk --contextual` as a process: reading, chunking, embedding and indexing.
 *
 * A format whose tool is missing here is left out, saying so.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig, parserLimitsOf } from '../src/config/index.js';
import { DocumentParser } from '../src/documents/index.js';
import { runCommand } from '../test/helpers/children.js';
import { corpus } from './scifact.js';

const DOCUMENTS = Number(process.env.RCP_BENCH_DOCUMENTS ?? 40);
type Format = 'txt' | 'md' | 'html' | 'docx' | 'pdf';

/** The Markdown sources: SciFact abstracts under headings, one document each. */
function sources(): string[] {
  const abstracts = corpus();
  return Array.from({ length: DOCUMENTS }, (_, d) => {
    const parts = [`# Collected abstracts ${d + 1}`];
    for (let s = 0; s < 4; s++) {
      parts.push(`## Section ${s + 1}`);
      for (let p = 0; p < 3; p++) parts.push(abstracts[(d * 12 + s * 3 + p) % abstracts.length]!.text);
    }
    return parts.join('\n\n');
  });
}

function has(tool: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** One folder per format, the same documents in each; the formats that could be made. */
function makeFolders(work: string): Format[] {
  const md = join(work, 'md');
  mkdirSync(md);
  sources().forEach((text, i) => writeFileSync(join(md, `doc-${i}.md`), text));
  const made: Format[] = ['md'];
  mkdirSync(join(work, 'txt'));
  for (const name of readdirSync(md)) {
    // Plain text of the same words: the headings' marks dropped.
    const text = readFileSync(join(md, name), 'utf8').replace(/^#+ /gm, '');
    writeFileSync(join(work, 'txt', name.replace(/\.md$/, '.txt')), text);
  }
  made.unshift('txt');
  if (!has('pandoc')) return noteMissing(made, 'pandoc: html, docx and pdf');
  for (const format of ['html', 'docx'] as const) {
    mkdirSync(join(work, format));
    for (const name of readdirSync(md)) {
      const out = join(work, format, name.replace(/\.md$/, `.${format}`));
      const title = ['--metadata', `title=${name}`];
      execFileSync('pandoc', [join(md, name), ...(format === 'html' ? ['-s', ...title] : []), '-o', out]);
    }
    made.push(format);
  }
  if (!has('soffice')) return noteMissing(made, 'soffice: pdf');
  mkdirSync(join(work, 'pdf'));
  const docx = readdirSync(join(work, 'docx')).map((name) => join(work, 'docx', name));
  execFileSync('soffice', ['--headless', '--convert-to', 'pdf', '--outdir', join(work, 'pdf'), ...docx], {
    stdio: 'ignore',
  });
  made.push('pdf');
  return made;
}

function noteMissing(made: Format[], what: string): Format[] {
  console.log(`  (no ${what} here: those formats are left out)`);
  return made;
}

/** Documents per second read alone, through one parser process (its start excluded: one file read first). */
async function readRate(folder: string): Promise<number> {
  const parser = new DocumentParser(parserLimitsOf(defaultConfig()));
  const files = readdirSync(folder).map((name) => join(folder, name));
  await parser.parseFile(files[0]!, { name: files[0] });
  const started = performance.now();
  for (const file of files) await parser.parseFile(file, { name: file });
  parser.close();
  return files.length / ((performance.now() - started) / 1000);
}

/** Documents per second through `rcp-server ingest --chunk --contextual`, as it reports them. */
async function ingestRate(folder: string, data: string): Promise<{ rate: number; chunks: number }> {
  const run = await runCommand(['ingest', '--data', data, '--chunk', '--contextual', folder]);
  const summary = /ingested (\d+) documents \((\d+) chunks\) .* \(([\d.]+) docs\/s\)/.exec(run.stdout);
  if (run.code !== 0 || summary === null) throw new Error(`ingest ${folder}: ${run.stdout}${run.stderr}`);
  return { rate: Number(summary[3]), chunks: Number(summary[2]) };
}

export async function benchDocuments(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'rcp-bench-documents-'));
  try {
    console.log(`documents: ${DOCUMENTS} documents per format, each 4 sections of 3 SciFact abstracts`);
    const formats = makeFolders(work);
    const rows: { format: Format; read: number; ingest: number; chunks: number }[] = [];
    for (const format of formats) {
      const read = await readRate(join(work, format));
      const { rate, chunks } = await ingestRate(join(work, format), join(work, `data-${format}`));
      rows.push({ format, read, ingest: rate, chunks });
    }
    const text = rows[0]!;
    console.log('  format   read alone docs/s (× text)   ingest --chunk docs/s (× text)   chunks');
    for (const row of rows) {
      console.log(
        `  ${row.format.padEnd(6)} ${row.read.toFixed(1).padStart(10)} (${(row.read / text.read).toFixed(2)}×)` +
          `${row.ingest.toFixed(1).padStart(22)} (${(row.ingest / text.ingest).toFixed(2)}×)${String(row.chunks).padStart(16)}`,
      );
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
