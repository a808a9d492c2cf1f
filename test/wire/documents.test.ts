import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCommand, track, untilLogged } from '../helpers/children.js';
import { startHttpProcess, type ServerProcess } from '../helpers/processes.js';
import { INITIALIZE, ROOT, request } from '../helpers/wire.js';

/**
 * A folder of mixed documents (test/fixtures/documents: made by pandoc, LibreOffice and ghostscript) ingested with
 * one command, then retrieved with page-accurate citations and heading paths (docs/documents.md), over stdio and
 * HTTP; the same files given to index/add as Content blocks (§4.8); `ingest --watch` following a folder.
 */
const FIXTURES = fileURLToPath(new URL('../fixtures/documents/', import.meta.url));
const WORK = mkdtempSync(join(tmpdir(), 'rcp-documents-'));
const DOCS = join(WORK, 'docs');
const DATA = join(WORK, 'data');
afterAll(() => rmSync(WORK, { recursive: true, force: true }));

interface Hit {
  id: string;
  text: string;
  citation: { source: string; page?: number; uri?: string; start: number; end: number };
  chunk: { docId: string; context?: string; 'x-rcp-server-headings'?: string[]; 'x-rcp-server-pages'?: number[] };
  meta: Record<string, unknown>;
}

/** The hits of a lexical retrieve over stdio (`rcp-server serve --stdio`), a real process. */
async function retrieveStdio(dataDir: string, query: string): Promise<Hit[]> {
  const input = [INITIALIZE(1), request(2, 'retrieve', { query, k: 5, mode: 'sparse' })]
    .map((frame) => `${JSON.stringify(frame)}\n`)
    .join('');
  const run = await runCommand(['serve', '--stdio', '--data', dataDir], {}, input);
  expect(run.code, run.stderr).toBe(0);
  const answers = run.stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { id: number; result?: { hits: Hit[] } });
  return answers.find((answer) => answer.id === 2)?.result?.hits ?? [];
}

beforeAll(async () => {
  mkdirSync(join(DOCS, 'handbooks'), { recursive: true });
  for (const name of ['guide.md', 'guide.docx', 'guide.html', 'encrypted.pdf', 'scan.pdf']) {
    copyFileSync(join(FIXTURES, name), join(DOCS, name));
  }
  copyFileSync(join(FIXTURES, 'paged.pdf'), join(DOCS, 'handbooks', 'pond-life.pdf'));
  writeFileSync(join(DOCS, 'photo.png'), 'not a document');
  const run = await runCommand(['ingest', '--data', DATA, '--chunk', '--contextual', DOCS]);
  expect(run.stdout).toMatch(/^ingested 4 documents \(\d+ chunks\) .*; 0 unchanged, 2 rejected$/m);
  expect(run.stdout).toMatch(/^ {2}rejected encrypted\.pdf: an encrypted PDF \(it needs a password\)$/m);
  expect(run.stdout).toMatch(/^ {2}rejected scan\.pdf: a PDF with no text layer/m);
  expect(run.stdout).toMatch(/^ {2}skipped 1 file of no format read here \(\.png 1\)$/m);
  expect(run.code).toBe(1);
});

describe('a folder of mixed documents, ingested with one command', () => {
  it('retrieves a PDF passage with its page and heading path (over stdio)', async () => {
    const hits = await retrieveStdio(DATA, 'great diving beetle bubble of air');
    const hit = hits[0]!;
    expect(hit.chunk.docId).toBe('handbooks/pond-life.pdf');
    expect(hit.text).toContain('great diving beetle carries a bubble of air');
    expect(hit.citation).toMatchObject({ source: 'handbooks/pond-life.pdf', page: 2, title: 'Pond Life Handbook' });
    expect(hit.chunk['x-rcp-server-pages']).toEqual([2, 2]);
    expect(hit.chunk['x-rcp-server-headings']).toContain('Water Beetles');
    expect(hit.chunk.context).toMatch(/^Pond Life Handbook — .*Water Beetles$/);
    expect(hit.meta).toMatchObject({
      format: 'pdf',
      pages: 3,
      author: 'C. Naturalist',
      path: 'handbooks/pond-life.pdf',
    });
    const frogs = (await retrieveStdio(DATA, 'tadpoles hatch spring'))[0]!;
    expect(frogs.citation.page).toBe(3);
  });

  it('Markdown, Word and HTML give the same passage under the same headings, without pages', async () => {
    const hits = await retrieveStdio(DATA, 'acid soil leaf mould');
    const sources = hits.filter((hit) => hit.text.includes('acid soil rich in leaf mould'));
    expect(sources.map((hit) => hit.chunk.docId).sort()).toEqual(['guide.docx', 'guide.html', 'guide.md']);
    for (const hit of sources) {
      expect(hit.chunk['x-rcp-server-headings']).toEqual(['Field Guide to Ferns', 'Habitat', 'Soil']);
      expect(hit.chunk.context).toBe('Field Guide to Ferns — Habitat › Soil');
      expect(hit.citation.page).toBeUndefined();
      // The citation's offsets point at the very text of the hit.
      expect(hit.citation.end - hit.citation.start).toBe(hit.text.length);
    }
    const markdown = sources.find((hit) => hit.chunk.docId === 'guide.md')!;
    expect(markdown.meta).toMatchObject({
      title: 'Field Guide to Ferns',
      tags: ['ferns', 'plants'],
      format: 'markdown',
    });
  });
});

describe('index/add with a document as a Content block (§4.8)', () => {
  let server: ServerProcess;
  beforeAll(async () => {
    server = await startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', join(WORK, 'http-data')], {
      RCP_CONTENT_FETCH_SCHEMES: '["file"]',
      RCP_CONTENT_FETCH_FILE_ROOTS: JSON.stringify([FIXTURES]),
    });
  });
  afterAll(async () => {
    await server?.stop();
  });

  const call = async (method: string, params: object) => {
    const response = await fetch(`${server.origin}/rcp/${method}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });
    return (await response.json()) as {
      result?: Record<string, unknown>;
      error?: { code: number; message: string; data?: { field?: string } };
    };
  };
  const pdf = (name: string) => ({
    type: 'blob',
    mimeType: 'application/pdf',
    data: readFileSync(join(FIXTURES, name)).toString('base64'),
  });

  it('advertises the document formats it reads under index (§6.2)', async () => {
    const answer = await call('initialize', {
      protocolVersion: 1,
      client: { name: 't', version: '1' },
      capabilities: {},
    });
    const index = (answer.result?.capabilities as { index: Record<string, unknown> }).index;
    expect(index['x-rcp-server-documents']).toEqual(
      expect.arrayContaining(['application/pdf', 'text/html', 'text/markdown']),
    );
  });

  it('parses a base64 PDF and a file uri as ingest does; the hits carry pages and the uri', async () => {
    const uri = pathToFileURL(join(FIXTURES, 'guide.docx')).href;
    const added = await call('index/add', {
      documents: [
        { id: 'pond', text: pdf('paged.pdf'), meta: { shelf: 'b' } },
        { id: 'ferns', text: { type: 'blob', uri } },
      ],
      chunk: true,
    });
    expect(added.error).toBeUndefined();
    const retrieved = await call('retrieve', { query: 'tadpoles hatch spring', k: 1, mode: 'sparse' });
    const hit = (retrieved.result?.hits as Hit[])[0]!;
    expect(hit).toMatchObject({ citation: { source: 'pond', page: 3 }, meta: { shelf: 'b', format: 'pdf', pages: 3 } });
    const ferns = await call('retrieve', { query: 'acid soil leaf mould', k: 1, mode: 'sparse' });
    expect((ferns.result?.hits as Hit[])[0]).toMatchObject({
      citation: { source: 'ferns', uri },
      meta: { format: 'docx' },
    });
  });

  it('refuses what it cannot read with why, and writes nothing of the call', async () => {
    const encrypted = await call('index/add', {
      documents: [
        { id: 'ok', text: 'fine' },
        { id: 'e', text: pdf('encrypted.pdf') },
      ],
    });
    expect(encrypted.error).toMatchObject({ code: -32602, data: { field: 'documents.1.text' } });
    expect(encrypted.error?.message).toMatch(/an encrypted PDF \(it needs a password\); nothing was written/);
    const image = await call('index/add', {
      documents: [{ text: { type: 'blob', mimeType: 'image/png', data: 'iVBORw0K' } }],
    });
    expect(image.error).toMatchObject({ code: -32005 });
    const found = await call('retrieve', { query: 'fine', k: 5, mode: 'sparse' });
    expect((found.result?.hits as Hit[]).map((hit) => hit.chunk.docId)).not.toContain('ok');
  });
});

describe('ingest --watch', () => {
  it('adds new files once settled, writes changed ones, deletes removed ones, and stops on SIGINT', async () => {
    const folder = join(WORK, 'watched');
    const data = join(WORK, 'watch-data');
    mkdirSync(folder);
    writeFileSync(join(folder, 'first.md'), '# First\n\nThe heron stands in the shallows.\n');
    const child = track(
      spawn(process.execPath, ['bin/rcp-server.js', 'ingest', '--data', data, '--watch', '--interval', '100', folder], {
        cwd: ROOT,
        env: { ...process.env, RCP_LOG_LEVEL: 'warn' },
      }),
    );
    let stderr = '';
    let stdout = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
    const watcher = { child, stderr: () => stderr };
    await untilLogged(watcher, /watch: watching/);
    copyFileSync(join(FIXTURES, 'paged.pdf'), join(folder, 'pond.pdf'));
    await untilLogged(watcher, /watch: wrote 1 changed document \(pond\.pdf;/);
    writeFileSync(join(folder, 'first.md'), '# First\n\nThe kingfisher dives from a willow branch.\n');
    await untilLogged(watcher, /watch: wrote 1 changed document \(first\.md;/);
    rmSync(join(folder, 'pond.pdf'));
    await untilLogged(watcher, /watch: deleted pond\.pdf/);
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(stdout).toMatch(/^watch: 2 written, 1 deleted, 0 rejected$/m);
    expect((await retrieveStdio(data, 'kingfisher willow')).map((hit) => hit.chunk.docId)).toEqual(['first.md']);
    expect(await retrieveStdio(data, 'heron shallows')).toEqual([]);
    expect(await retrieveStdio(data, 'beetle wing cases')).toEqual([]);
  });
});
