import { spawn } from 'node:child_process';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { deflateSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCommand, track, until, untilLogged } from '../helpers/children.js';
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
  /** A gauge of the server's metrics. */
  const gauge = async (name: string) => {
    const text = await (await fetch(`${server.origin}/metrics`)).text();
    return Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
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

  it('a form feed inside fenced code is no page; a whole document cites itself whole, with all its pages', async () => {
    const markdown = '# Code Doc\n\nSome intro.\n\n## Snippet\n\n```\nx = 1\f\ny = 2\n```\n\nThe fencedword is here.';
    await call('index/add', {
      documents: [{ id: 'code', text: { type: 'text', mimeType: 'text/markdown', text: markdown } }],
      chunk: true,
    });
    const code = (await call('retrieve', { query: 'fencedword', k: 1, mode: 'sparse' })).result?.hits as Hit[];
    expect(code[0]!.chunk['x-rcp-server-headings']).toEqual(['Code Doc', 'Snippet']);
    expect(code[0]!.chunk['x-rcp-server-pages']).toBeUndefined();
    expect(code[0]!.citation.page).toBeUndefined();
    const whole = await call('retrieve', { query: 'tadpoles hatch spring', k: 1, mode: 'sparse', unit: 'document' });
    const hit = (whole.result?.hits as Hit[])[0]!;
    expect(hit.citation).toMatchObject({ source: 'pond', start: 0, end: hit.text.length, page: 1 });
    expect(hit.chunk['x-rcp-server-pages']).toEqual([1, 3]);
    expect(hit.chunk['x-rcp-server-headings']).toBeUndefined();
  });

  it('reads one file of a caller at a time: its next is refused at once (-32011), and others go on', async () => {
    // A PDF whose pages all draw one long content stream: each page costs the reader its whole length.
    const slow = { type: 'blob', mimeType: 'application/pdf', data: slowPdf(12).toString('base64') };
    const reading = call('index/add', { documents: [{ id: 'slow', text: slow }] });
    await until(async () => (await gauge('rcp_documents_reading')) === 1, 'the slow PDF being read');
    const refused = await call('index/add', { documents: [{ id: 'second', text: pdf('paged.pdf') }] });
    expect(refused.error).toMatchObject({ code: -32011 });
    expect(refused.error?.message).toMatch(/rate limited|busy/i);
    const found = await call('retrieve', { query: 'tadpoles', k: 1, mode: 'sparse' });
    expect(found.error).toBeUndefined();
    expect((await reading).error).toBeUndefined();
  });

  it('refuses what it cannot read with why, and writes nothing of the call', async () => {
    const garbled = await call('index/add', {
      documents: [{ text: { type: 'blob', mimeType: 'application/pdf', data: 'aGVsbG8=garbage***' } }],
    });
    expect(garbled.error).toMatchObject({ code: -32602, data: { field: 'documents.0.text.data' } });
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

describe('ids from several folders', () => {
  it('a file at the same path under a second folder is rejected, not written over the first', async () => {
    for (const [folder, text] of [
      ['ca', 'apple orchard blossom'],
      ['cb', 'banana plantation harvest'],
    ] as const) {
      mkdirSync(join(WORK, folder));
      writeFileSync(join(WORK, folder, 'notes.txt'), text);
    }
    const data = join(WORK, 'collide-data');
    const run = await runCommand(['ingest', '--data', data, join(WORK, 'ca'), join(WORK, 'cb')]);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/^ingested 1 documents .* 1 rejected$/m);
    expect(run.stdout).toContain(
      `rejected ${join(WORK, 'cb', 'notes.txt')}: has the id of ${join(WORK, 'ca', 'notes.txt')}`,
    );
    expect((await retrieveStdio(data, 'apple orchard'))[0]?.text).toBe('apple orchard blossom');
  });
});

describe('ingest --watch', () => {
  /** `rcp-server ingest --watch` over `folder`, once it watches; `stop` sends SIGINT and waits for its end. */
  async function startWatch(folder: string, data: string) {
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
    const watcher = {
      child,
      stderr: () => stderr,
      stop: async () => {
        child.kill('SIGINT');
        return { code: await exited, stdout };
      },
    };
    await untilLogged(watcher, /watch: watching/);
    return watcher;
  }

  it('adds new files once settled, writes changed ones, deletes removed ones, and stops on SIGINT', async () => {
    const folder = join(WORK, 'watched');
    const data = join(WORK, 'watch-data');
    mkdirSync(folder);
    writeFileSync(join(folder, 'first.md'), '# First\n\nThe heron stands in the shallows.\n');
    const watcher = await startWatch(folder, data);
    copyFileSync(join(FIXTURES, 'paged.pdf'), join(folder, 'pond.pdf'));
    await untilLogged(watcher, /watch: wrote 1 changed document \(pond\.pdf;/);
    writeFileSync(join(folder, 'first.md'), '# First\n\nThe kingfisher dives from a willow branch.\n');
    await untilLogged(watcher, /watch: wrote 1 changed document \(first\.md;/);
    rmSync(join(folder, 'pond.pdf'));
    await untilLogged(watcher, /watch: deleted pond\.pdf/);
    const { code, stdout } = await watcher.stop();
    expect(code).toBe(0);
    expect(stdout).toMatch(/^watch: 2 written, 1 deleted, 0 rejected$/m);
    expect((await retrieveStdio(data, 'kingfisher willow')).map((hit) => hit.chunk.docId)).toEqual(['first.md']);
    expect(await retrieveStdio(data, 'heron shallows')).toEqual([]);
    expect(await retrieveStdio(data, 'beetle wing cases')).toEqual([]);
  });

  it('keeps the documents of a folder it cannot read for a while, and says so', async () => {
    const folder = join(WORK, 'flaky');
    const data = join(WORK, 'flaky-data');
    mkdirSync(join(folder, 'sub'), { recursive: true });
    writeFileSync(join(folder, 'sub', 'z1.txt'), 'zebra stripes on the savanna');
    writeFileSync(join(folder, 'top.txt'), 'top of the folder');
    const watcher = await startWatch(folder, data);
    // The folder turned into a link to itself: it cannot be looked into (ELOOP), which is not its files gone.
    renameSync(join(folder, 'sub'), join(folder, 'sub-away'));
    symlinkSync(join(folder, 'sub'), join(folder, 'sub'));
    await untilLogged(watcher, /watch: .*sub: cannot be read \(ELOOP.*; the documents under it are kept as they were/);
    rmSync(join(folder, 'sub'));
    renameSync(join(folder, 'sub-away'), join(folder, 'sub'));
    const { code, stdout } = await watcher.stop();
    expect(code).toBe(0);
    expect(stdout).toMatch(/^watch: 0 written, 0 deleted, 0 rejected$/m);
    expect((await retrieveStdio(data, 'zebra stripes'))[0]?.text).toBe('zebra stripes on the savanna');
  });
});

/**
 * A PDF of `pages` pages that all draw one content stream of 100,000 no-op transforms (written here, byte by byte):
 * small to send, slow to read.
 */
function slowPdf(pages: number): Buffer {
  const content = deflateSync(
    Buffer.from(`${'1 0 0 1 0 0 cm\n'.repeat(100_000)}BT /F1 12 Tf 72 700 Td (slowpdf) Tj ET`),
  );
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    `<< /Type /Pages /Count ${pages} /Kids [${Array.from({ length: pages }, (_, i) => `${i + 5} 0 R`).join(' ')}] >>`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
    `<< /Length ${content.length} /Filter /FlateDecode >>`,
    ...Array.from(
      { length: pages },
      () =>
        '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 3 0 R >> >> >>',
    ),
  ];
  const parts: Buffer[] = [Buffer.from('%PDF-1.4\n')];
  const offsets: number[] = [];
  let length = parts[0]!.length;
  objects.forEach((body, i) => {
    offsets.push(length);
    const object =
      i === 3
        ? Buffer.concat([
            Buffer.from(`${i + 1} 0 obj\n${body}\nstream\n`),
            content,
            Buffer.from('\nendstream\nendobj\n'),
          ])
        : Buffer.from(`${i + 1} 0 obj\n${body}\nendobj\n`);
    parts.push(object);
    length += object.length;
  });
  const xref = [
    'xref',
    `0 ${objects.length + 1}`,
    '0000000000 65535 f ',
    ...offsets.map((at) => `${String(at).padStart(10, '0')} 00000 n `),
  ];
  parts.push(
    Buffer.from(
      `${xref.join('\n')}\ntrailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${length}\n%%EOF\n`,
    ),
  );
  return Buffer.concat(parts);
}
