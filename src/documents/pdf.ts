import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import {
  DocumentRefusal,
  PAGE_BREAK,
  headingLine,
  joinBlocks,
  oneLine,
  proseLine,
  type ParsedDocument,
} from './parsed.js';

import type * as PdfJsModule from 'pdfjs-dist/legacy/build/pdf.mjs';

type PdfJs = typeof PdfJsModule;

/** pdf.js, loaded on first use: the module is large, and only a process that reads a PDF pays for it. */
let pdfjs: Promise<PdfJs> | undefined;
const loadPdfJs = () => (pdfjs ??= import('pdfjs-dist/legacy/build/pdf.mjs'));

/** The CMaps pdf.js ships (CJK fonts need them to map glyphs to text), read from its package folder. */
const CMAPS = join(dirname(createRequire(import.meta.url).resolve('pdfjs-dist/package.json')), 'cmaps') + '/';

/** One line of a page as pdf.js lays it out: its text and its largest glyph height. */
interface Line {
  readonly text: string;
  readonly height: number;
  /** A larger gap than a line's above it: a new paragraph starts here. */
  readonly gapBefore: boolean;
}

/**
 * A PDF's text layer, with pdf.js (docs/documents.md): the pages in order, separated by page breaks, so that every
 * chunk knows its page. Headings are found by size: a short line set larger than the body text (the size most of
 * the text is set in) is a heading, its level by rank among the larger sizes. The title is the file's own (Info
 * dictionary), else its first heading. An encrypted file, a damaged one and one with no text layer (a scan: no OCR
 * is done here) are refused, each saying so.
 */
export async function parsePdf(bytes: Uint8Array, maxTextBytes: number): Promise<ParsedDocument> {
  const { getDocument } = await loadPdfJs();
  const task = getDocument({
    // pdf.js takes a plain Uint8Array (a Buffer is refused), and may detach it.
    data: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length),
    isEvalSupported: false,
    disableFontFace: true,
    useSystemFonts: false,
    isOffscreenCanvasSupported: false,
    cMapUrl: CMAPS,
    cMapPacked: true,
    verbosity: 0,
  });
  try {
    const pdf = await task.promise.catch((error: unknown) => {
      throw refusalOf(error);
    });
    const pages: Line[][] = [];
    let chars = 0;
    for (let number = 1; number <= pdf.numPages; number++) {
      const lines = await pageLines(pdf, number);
      chars += lines.reduce((sum, line) => sum + line.text.length, 0);
      if (chars > maxTextBytes) throw new DocumentRefusal(`its text exceeds the ${maxTextBytes}-byte document limit`);
      pages.push(lines);
    }
    const { info } = (await pdf.getMetadata().catch(() => ({ info: {} }))) as { info: Record<string, unknown> };
    return documentOf(pages, info);
  } finally {
    await task.destroy();
  }
}

function refusalOf(error: unknown): DocumentRefusal {
  const name = (error as { name?: string }).name;
  if (name === 'PasswordException') return new DocumentRefusal('an encrypted PDF (it needs a password)');
  return new DocumentRefusal(`a damaged PDF (${(error as Error).message ?? String(error)})`);
}

async function pageLines(pdf: Awaited<ReturnType<PdfJs['getDocument']>['promise']>, number: number): Promise<Line[]> {
  const page = await pdf.getPage(number);
  const content = await page.getTextContent();
  const lines: Line[] = [];
  let text = '';
  let height = 0;
  let y: number | undefined;
  let lastY: number | undefined;
  let lastHeight = 0;
  const endLine = () => {
    if (text.trim() !== '') {
      const gap = lastY !== undefined && y !== undefined ? Math.abs(lastY - y) : 0;
      lines.push({
        text: oneLine(text),
        height,
        gapBefore: lastHeight > 0 && gap > 1.6 * Math.max(lastHeight, height),
      });
      [lastY, lastHeight] = [y, height];
    }
    [text, height, y] = ['', 0, undefined];
  };
  for (const item of content.items) {
    if (!('str' in item)) continue;
    if (item.str !== '') {
      text += item.str;
      height = Math.max(height, item.height);
      y ??= item.transform[5] as number;
    }
    if (item.hasEOL) endLine();
  }
  endLine();
  page.cleanup();
  return lines;
}

/** Pages of lines as text: headings by size, paragraphs by gaps, pages apart. */
function documentOf(pages: readonly Line[][], info: Record<string, unknown>): ParsedDocument {
  const levels = headingLevels(pages.flat());
  let firstHeading: string | undefined;
  const texts = pages.map((lines) => {
    const blocks: string[] = [];
    let paragraph: string[] = [];
    // A paragraph's lines as one line; a line broken after a hyphen joins the next without a space.
    const endParagraph = () => {
      blocks.push(proseLine(paragraph.reduce((text, line) => (/-$/.test(text) ? text + line : `${text} ${line}`), '')));
      paragraph = [];
    };
    for (const line of lines) {
      const level = levels.get(roundSize(line.height));
      if (level !== undefined && isHeadingText(line.text)) {
        endParagraph();
        if (level === 1) firstHeading ??= line.text;
        blocks.push(headingLine(level, line.text));
        continue;
      }
      if (line.gapBefore) endParagraph();
      paragraph.push(line.text);
    }
    endParagraph();
    return joinBlocks(blocks);
  });
  if (texts.every((text) => text === '')) {
    throw new DocumentRefusal('a PDF with no text layer (a scan? no OCR is done here)');
  }
  const title = typeof info.Title === 'string' && oneLine(info.Title) !== '' ? oneLine(info.Title) : firstHeading;
  const author = typeof info.Author === 'string' && oneLine(info.Author) !== '' ? oneLine(info.Author) : undefined;
  return {
    text: texts.join(PAGE_BREAK),
    meta: { ...(title ? { title } : {}), ...(author ? { author } : {}), format: 'pdf', pages: pages.length },
  };
}

const roundSize = (height: number) => Math.round(height * 2) / 2;

/** A heading is short and has a letter in it (a large page number or a rule is none). */
const isHeadingText = (text: string) => text.length <= 200 && /\p{L}/u.test(text);

/**
 * Heading levels by size: the body size is the one most characters are set in; each larger size that sets short
 * lines is a heading level, the largest first (at most six).
 */
function headingLevels(lines: readonly Line[]): Map<number, number> {
  const chars = new Map<number, number>();
  for (const line of lines)
    chars.set(roundSize(line.height), (chars.get(roundSize(line.height)) ?? 0) + line.text.length);
  const body = [...chars.entries()].sort((a, b) => b[1] - a[1])[0]?.[0] ?? 0;
  const larger = [...chars.keys()].filter((size) => size >= body * 1.15).sort((a, b) => b - a);
  return new Map(larger.slice(0, 6).map((size, i) => [size, i + 1]));
}
