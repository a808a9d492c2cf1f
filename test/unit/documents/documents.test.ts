import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import JSZip from 'jszip';
import { afterAll, describe, expect, it } from 'vitest';
import { headingPathAt, outlineOf, pageAt } from '../../../src/corpus/index.js';
import { DocumentParser, type ParserLimits } from '../../../src/documents/index.js';
import { track, until } from '../../helpers/children.js';

/**
 * Documents read as docs/documents.md says, from files made by real tools (test/fixtures/documents/make.sh: pandoc,
 * LibreOffice, ghostscript), each in a real parser process.
 */
const FIXTURES = fileURLToPath(new URL('../../fixtures/documents/', import.meta.url));
const fixture = (name: string) => readFileSync(FIXTURES + name);

const LIMITS: ParserLimits = {
  maxFileBytes: 64 * 1024 * 1024,
  maxTextBytes: 1024 * 1024,
  maxMetadataBytes: 64 * 1024,
  maxUnpackedBytes: 256 * 1024 * 1024,
  timeoutMs: 60_000,
  // Under the TypeScript sources a parser process loads pdf.js through tsx's loader, which costs it ~400 MiB (built,
  // ~100 MiB); the memory bound has a test of its own below.
  maxMemoryMb: 1024,
  processes: 1,
};
const parsers: DocumentParser[] = [];
function parserOf(limits: Partial<ParserLimits> = {}): DocumentParser {
  const parser = new DocumentParser({ ...LIMITS, ...limits });
  parsers.push(parser);
  return parser;
}
afterAll(() => parsers.forEach((parser) => parser.close()));
const parser = parserOf();

/** The heading path and page of the first occurrence of `words` in a parsed text. */
function placeOf(text: string, words: string) {
  const at = text.indexOf(words);
  expect(at, words).toBeGreaterThanOrEqual(0);
  const outline = outlineOf(text);
  return { headings: headingPathAt(outline, at), page: pageAt(outline, at) };
}

describe('documents: files of the formats people keep, made by real tools', () => {
  it('Markdown: front matter is metadata, headings kept as written, a # in fenced code is no heading', async () => {
    const { text, meta } = await parser.parse(fixture('guide.md'), { name: 'guide.md' });
    expect(meta).toEqual({
      title: 'Field Guide to Ferns',
      author: 'A. Botanist',
      tags: ['ferns', 'plants'],
      format: 'markdown',
    });
    expect(text.startsWith('# Field Guide to Ferns\n')).toBe(true);
    expect(placeOf(text, 'acid soil').headings).toEqual(['Field Guide to Ferns', 'Habitat', 'Soil']);
    expect(placeOf(text, 'carried by the wind').headings).toEqual(['Field Guide to Ferns', 'Reproduction']);
    expect(outlineOf(text).headings.map((heading) => heading.title)).not.toContain(
      'not a heading: a comment in a code block',
    );
  });

  it('Word (pandoc): Heading styles are headings, title and author come from its core properties', async () => {
    const { text, meta } = await parser.parse(fixture('guide.docx'), { name: 'guide.docx' });
    expect(meta).toMatchObject({ title: 'Field Guide to Ferns', author: 'A. Botanist', format: 'docx' });
    expect(placeOf(text, 'acid soil').headings).toEqual(['Field Guide to Ferns', 'Habitat', 'Soil']);
    expect(text).toContain('Spores form in sori on the underside of fronds');
  });

  it('HTML (pandoc, with a nav, a script and a footer around it): the main content alone, code fenced', async () => {
    const { text, meta } = await parser.parse(fixture('guide.html'), { name: 'guide.html' });
    expect(meta).toMatchObject({ title: 'Field Guide to Ferns', format: 'html' });
    for (const furniture of ['Shop the newsletter', 'tracking pixel', 'Cookie banner'])
      expect(text).not.toContain(furniture);
    expect(placeOf(text, 'acid soil').headings).toEqual(['Field Guide to Ferns', 'Habitat', 'Soil']);
    expect(text).toMatch(/```\n# not a heading: a comment in a code block\nls fronds\/\n```/);
    expect(placeOf(text, 'ls fronds').headings).toEqual(['Field Guide to Ferns', 'Habitat', 'Soil']);
  });

  it('PDF (LibreOffice, three pages): every page kept apart, headings found by size, title and author', async () => {
    const { text, meta } = await parser.parse(fixture('paged.pdf'), { name: 'paged.pdf' });
    expect(meta).toEqual({ title: 'Pond Life Handbook', author: 'C. Naturalist', format: 'pdf', pages: 3 });
    expect(outlineOf(text).breaks).toHaveLength(2);
    expect(placeOf(text, 'Dragonfly nymphs')).toMatchObject({ page: 1 });
    expect(placeOf(text, 'great diving beetle')).toEqual({
      headings: expect.arrayContaining(['Water Beetles']),
      page: 2,
    });
    expect(placeOf(text, 'tadpoles hatch')).toEqual({ headings: expect.arrayContaining(['Frogs']), page: 3 });
    // A paragraph's lines are one line: a sentence is never cut by the page's line breaks.
    expect(text).toContain('before they climb a reed and moult into adults.');
  });

  it('reads by content, not by name: a PDF named .txt is a PDF; a PNG, an OLE file, a zip are refused saying what they are', async () => {
    expect((await parser.parse(fixture('paged.pdf'), { name: 'notes.txt' })).meta.format).toBe('pdf');
    expect((await parser.parse(fixture('guide.docx'), { name: 'scan' })).meta.format).toBe('docx');
    const refused = (bytes: Buffer, name: string) => parser.parse(bytes, { name });
    await expect(
      refused(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]), 'a.txt'),
    ).rejects.toThrow(/binary, not a document format read here \(a PNG image\)/);
    const ole = Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1, 0, 0]);
    await expect(refused(ole, 'old.doc')).rejects.toThrow(/a legacy \.doc, or an encrypted Office document/);
    const notWord = new JSZip().file('notes.txt', 'a zip of other things');
    const zip = await notWord.generateAsync({ type: 'nodebuffer' });
    await expect(refused(zip, 'x.docx')).rejects.toThrow(/a zip archive that holds no Word document/);
    await expect(refused(Buffer.from('PK\x03\x04not a zip at all'), 'y.docx')).rejects.toThrow(/a damaged zip archive/);
    await expect(refused(Buffer.from('plain words'), 'x.pdf')).rejects.toThrow(/declared pdf, but is text/);
  });
});

describe('documents: hostile files are refused with their reason, bounded in time and memory', () => {
  it('an encrypted PDF, a scan with no text layer, a damaged PDF', async () => {
    await expect(parser.parse(fixture('encrypted.pdf'), { name: 'e.pdf' })).rejects.toThrow(
      /an encrypted PDF \(it needs a password\)/,
    );
    await expect(parser.parse(fixture('scan.pdf'), { name: 's.pdf' })).rejects.toThrow(/a PDF with no text layer/);
    const cut = fixture('paged.pdf').subarray(0, 9000);
    await expect(parser.parse(cut, { name: 'cut.pdf' })).rejects.toThrow(/a damaged PDF/);
  });

  it('a zip bomb named .docx stops costing at the unpack bound', async () => {
    const bounded = parserOf({ maxUnpackedBytes: 16 * 1024 * 1024 });
    await expect(bounded.parse(fixture('bomb.docx'), { name: 'bomb.docx' })).rejects.toThrow(
      /unpacks past 16777216 bytes \(a zip bomb/,
    );
  });

  it('50 MB of nested tags reads in linear time (nesting is bounded), and its text is kept', async () => {
    const nested = Buffer.from(`<html><body>${'<div>'.repeat(10_000_000)}deep text`);
    const started = performance.now();
    const { text } = await parser.parse(nested, { name: 'nested.html' });
    expect(text).toBe('deep text');
    // Quadratic in its depth it took over a minute; linear, about a second. The bound is the parse timeout's.
    expect(performance.now() - started).toBeLessThan(LIMITS.timeoutMs);
  });

  it('a parse past its time or its memory is stopped, says so, and the next file gets a fresh parser', async () => {
    const slow = parserOf({ timeoutMs: 1 });
    await expect(slow.parse(fixture('paged.pdf'), { name: 'p.pdf' })).rejects.toThrow(
      /took longer than 1 ms to read \(stopped\)/,
    );
    // The zip bomb within the unpack bound: what mammoth then makes of 64 MiB of zeros passes 200 MiB.
    const small = parserOf({ maxMemoryMb: 200 });
    await expect(small.parse(fixture('bomb.docx'), { name: 'bomb.docx' })).rejects.toThrow(/needed more than 200 MiB/);
    expect((await small.parse(fixture('guide.md'), { name: 'guide.md' })).meta.title).toBe('Field Guide to Ferns');
  });

  it('a caller that gives up stops its parse', async () => {
    const controller = new AbortController();
    const parsing = parser.parse(fixture('paged.pdf'), { name: 'p.pdf' }, controller.signal);
    controller.abort(new Error('client went away'));
    await expect(parsing).rejects.toThrow(/client went away/);
    expect((await parser.parse(fixture('guide.md'), { name: 'guide.md' })).meta.format).toBe('markdown');
  });
});

describe('documents: what a second hostile round found', () => {
  const html = (body: string) =>
    Buffer.from(`<!doctype html><html><head><title>T</title></head><body>${body}</body></html>`);

  it('a paragraph that reads as a code fence is escaped: the headings and pages after it stay found', async () => {
    const { text } = await parser.parse(
      html('<h1>Alpha</h1><p>~~~~~~</p><p>```</p><h2>Beta</h2><p>beta words</p>'),
      {},
    );
    expect(placeOf(text, 'beta words').headings).toEqual(['Alpha', 'Beta']);
    expect(text).toContain('\\~~~~~~');
  });

  it('front matter cannot say where a file comes from (trust, §15.2) or that it has pages', async () => {
    const md = Buffer.from(
      '---\ntitle: Evil\nsource: handbook\npages: 7\nformat: pdf\npath: x\nuri: https://a\nkept: yes\n---\nBody.',
    );
    expect((await parser.parse(md, { name: 'evil.md' })).meta).toEqual({
      title: 'Evil',
      kept: 'yes',
      format: 'markdown',
    });
  });

  it('a note that mentions %PDF-1.7 is a note; UTF-16 text and HTML with a byte order mark are text', async () => {
    const note = Buffer.from('# PDF notes\n\nEvery PDF file starts with the header %PDF-1.7 and a comment.');
    expect((await parser.parse(note, { name: 'pdfnotes.md' })).meta.format).toBe('markdown');
    const utf16 = (text: string) => Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);
    const page = await parser.parse(utf16('<html><body><h1>Wide</h1><p>wide text</p></body></html>'), {
      name: 'w.html',
    });
    expect(page.text).toBe('# Wide\n\nwide text');
    expect((await parser.parse(utf16('plain wide words'), { name: 'w.txt' })).text).toBe('plain wide words');
  });

  it('YAML aliases that multiply a value are refused in the parser, not sent back to the server', async () => {
    const value = 'x'.repeat(10_000);
    const keys = Array.from({ length: 99 }, (_, i) => `k${i}: *b`).join('\n');
    const md = Buffer.from(`---\nbase: &b "${value}"\n${keys}\n---\nBody.`);
    await expect(parser.parse(md, { name: 'aliases.md' })).rejects.toThrow(
      /its metadata of \d+ bytes is over the 65536-byte limit/,
    );
    const long = Buffer.from(
      `---\n${Array.from({ length: 30_000 }, (_, i) => `key${i}: ${i}`).join('\n')}\n---\nBody.`,
    );
    await expect(parser.parse(long, { name: 'keys.md' })).rejects.toThrow(
      /front matter of \d+ characters is over the metadata limit/,
    );
  });

  it('the main content is what a role="main" element holds, and nothing after it', async () => {
    const page = html('<div role="main"><p>the article itself</p></div><div><p>related links after it</p></div>');
    expect((await parser.parse(page, {})).text).toBe('the article itself');
  });

  it('a page declaring UTF-16 in a meta tag is read as UTF-8; an SVG title is not the page title', async () => {
    const page = html('<meta charset="utf-16"><svg><title>INJECTED</title></svg><p>plain words</p>');
    const { text, meta } = await parser.parse(page, {});
    expect(text).toBe('plain words');
    expect(meta.title).toBe('T');
  });

  it('a .docx whose core properties are a pathological string is read in linear time', async () => {
    const zip = await JSZip.loadAsync(fixture('guide.docx'));
    zip.file('docProps/core.xml', '<dc:title'.repeat(400_000));
    const docx = await zip.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE' });
    const quick = parserOf({ timeoutMs: 20_000 });
    const { meta } = await quick.parse(docx, { name: 'redos.docx' });
    // Its title from its first heading: core properties this size are not searched.
    expect(meta).toMatchObject({ format: 'docx', title: 'Field Guide to Ferns' });
  });
});

describe('documents: a parser process never outlives its parent', () => {
  /** The pid of `parent`'s child, from /proc (Linux). */
  const childOf = (parent: number) =>
    readdirSync('/proc')
      .filter((name) => /^\d+$/.test(name))
      .find((pid) => statOf(Number(pid))?.ppid === parent);
  /** A process's state and parent from /proc/PID/stat; undefined once it is gone. */
  function statOf(pid: number): { state: string; ppid: number; cpuMs: number } | undefined {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
        .replace(/^.*\) /s, '')
        .split(' ');
      // utime and stime, in clock ticks of 10 ms.
      return { state: fields[0]!, ppid: Number(fields[1]), cpuMs: 10 * (Number(fields[11]) + Number(fields[12])) };
    } catch {
      return undefined;
    }
  }
  const dead = (pid: number) => ['Z', 'X', undefined].includes(statOf(pid)?.state);

  it.runIf(process.platform === 'linux')(
    'even in the middle of a parse that never yields (killed with kill -9)',
    async () => {
      // A page of a few million paragraphs: htmlparser2 reads it in one synchronous stretch of seconds.
      const script = `
      import { DocumentParser } from ${JSON.stringify(new URL('../../../src/documents/index.ts', import.meta.url).href)};
      const parser = new DocumentParser({ maxFileBytes: 1 << 28, maxTextBytes: 1 << 28, maxMetadataBytes: 65536,
        maxUnpackedBytes: 1 << 28, timeoutMs: 600000, maxMemoryMb: 8192, processes: 1 });
      const started = performance.now();
      await parser.parse(Buffer.from('<html><body>' + '<p>a '.repeat(6_000_000)), { name: 'big.html' });
      console.log('parsed in', Math.round(performance.now() - started));
      parser.close();`;
      const run = () =>
        spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
          stdio: ['ignore', 'pipe', 'inherit'],
        });
      // The same parse with its parent alive: how long it takes here, now.
      const alive = track(run());
      let said = '';
      alive.stdout.on('data', (chunk: Buffer) => (said += chunk.toString()));
      await new Promise((resolve) => alive.once('close', resolve));
      const parseMs = Number(/parsed in (\d+)/.exec(said)?.[1]);
      expect(parseMs).toBeGreaterThan(1000);
      // Killed while its parser works: the parser, left with no parent, stops at once, not when its parse is done.
      const parent = track(run());
      let child: string | undefined;
      await until(() => (child = childOf(parent.pid!)) !== undefined, 'a parser process');
      const childPid = Number(child);
      // Well into the parse: a third of its time spent (its start, reading the file, is not a third of it).
      await until(() => (statOf(childPid)?.cpuMs ?? 0) > parseMs / 3, 'the parser at work');
      parent.kill('SIGKILL');
      const killed = performance.now();
      await until(() => dead(childPid), 'the parser ended');
      expect(performance.now() - killed).toBeLessThan(parseMs / 2);
    },
  );
});
