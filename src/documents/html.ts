import { Parser } from 'htmlparser2';
import {
  DocumentRefusal,
  fencedBlock,
  headingLine,
  joinBlocks,
  oneLine,
  proseLine,
  type ParsedDocument,
} from './parsed.js';

/** Elements whose content is never the page's text: scripts and styles, and the page's furniture around its content. */
const SKIPPED = new Set([
  'script',
  'style',
  'noscript',
  'template',
  'svg',
  'math',
  'iframe',
  'object',
  'canvas',
  'select',
  'button',
  'nav',
  'header',
  'footer',
  'aside',
  'form',
  'dialog',
]);

/** ARIA roles of furniture (navigation, banners, sidebars, footers), skipped as their elements are. */
const SKIPPED_ROLES = new Set(['navigation', 'banner', 'complementary', 'contentinfo', 'search', 'menu', 'dialog']);

/** Elements that end a block of text (a paragraph, an item, a cell, a line break). */
const BLOCKS = new Set([
  'p',
  'div',
  'section',
  'article',
  'main',
  'li',
  'ul',
  'ol',
  'dl',
  'dt',
  'dd',
  'tr',
  'table',
  'blockquote',
  'pre',
  'figure',
  'figcaption',
  'br',
  'hr',
  'td',
  'th',
  'caption',
  'address',
  'details',
  'summary',
  'body',
]);

const HEADING = /^h([1-6])$/;

/**
 * An HTML page's main content as text (docs/documents.md): its `<main>` or `<article>` when it has one, else its
 * body, without navigation, headers, footers, sidebars, forms, scripts or styles; headings kept as heading lines,
 * block elements as paragraphs. The title is `<title>`, else the first `<h1>`; `lang` is kept.
 *
 * Read in one pass of htmlparser2's streaming parser, with no tree built: a page of deeply nested tags costs memory
 * in its own size, not in its depth, and no recursion. (A Readability-style extractor scores a full DOM; this keeps
 * its first rules, which decide most pages, at a fraction of the memory.)
 */
export function parseHtml(source: string | Iterable<string>, maxTextBytes: number): ParsedDocument {
  const reader = new PageReader(maxTextBytes);
  const parser = new BoundedParser(reader);
  for (const part of typeof source === 'string' ? [source] : source) parser.write(part);
  parser.end();
  return reader.document();
}

/** Elements open at once at most: deeper tags are dropped, their text kept (Blink's HTML parser stops at 512 too). */
const MAX_DEPTH = 512;

/**
 * htmlparser2's parser with its nesting bounded: it looks through its stack of open elements at every tag, so a page
 * of ten million nested `<div>`s would cost time quadratic in its depth (over a minute for 50 MB). A tag opened past
 * MAX_DEPTH is dropped before the parser sees it.
 */
class BoundedParser extends Parser {
  constructor(private readonly reader: PageReader) {
    super(reader, { decodeEntities: true, lowerCaseTags: true });
  }

  override onopentagname(start: number, endIndex: number): void {
    if (this.reader.depth < MAX_DEPTH) super.onopentagname(start, endIndex);
  }
}

class PageReader {
  /** Depth inside skipped elements (by the parser's own open and close events, so unclosed tags cannot leak). */
  #skip = 0;
  /** Per open element: whether it is skipped furniture, whether it is the page's main content. */
  readonly #stack: { skipped: boolean; main: boolean }[] = [];
  #main = 0;
  #heading: number | undefined;
  /** Depth inside `<pre>`: its text is kept as written, as a fenced block. */
  #pre = 0;
  #inTitle = false;
  #title = '';
  #firstH1: string | undefined;
  #lang: string | undefined;
  #current: string[] = [];
  readonly #body: string[] = [];
  readonly #mainBlocks: string[] = [];
  #bytes = 0;

  /** Elements open now (each open is closed by the parser, a void element at once). */
  depth = 0;

  constructor(private readonly maxTextBytes: number) {}

  onopentagname(): void {
    this.depth += 1;
  }

  onopentag(name: string, attributes: Record<string, string>): void {
    const skipped = SKIPPED.has(name) || SKIPPED_ROLES.has(attributes.role ?? '') || 'hidden' in attributes;
    const main = !skipped && this.#skip === 0 && (name === 'main' || name === 'article' || attributes.role === 'main');
    this.#stack.push({ skipped, main });
    if (skipped) this.#skip += 1;
    if (main) this.#main += 1;
    if (name === 'html' && attributes.lang !== undefined) this.#lang = attributes.lang;
    // The page's own title, not an SVG's or one in other skipped content.
    if (name === 'title' && this.#skip === 0) this.#inTitle = true;
    if (this.#skip > 0) return;
    const level = HEADING.exec(name)?.[1];
    if (this.#pre > 0) {
      if (name === 'br') this.#current.push('\n');
    } else if (level !== undefined) {
      this.#endBlock();
      this.#heading = Number(level);
    } else if (BLOCKS.has(name)) this.#endBlock();
    if (name === 'pre') this.#pre += 1;
  }

  ontext(text: string): void {
    if (this.#inTitle) this.#title += text;
    if (this.#skip > 0 || this.#inTitle) return;
    this.#bytes += text.length;
    if (this.#bytes > this.maxTextBytes * 2) {
      throw new DocumentRefusal(`its text exceeds the ${this.maxTextBytes}-byte document limit`);
    }
    this.#current.push(text);
  }

  onclosetag(name: string): void {
    this.depth -= 1;
    if (name === 'title') this.#inTitle = false;
    const { skipped, main } = this.#stack.pop() ?? { skipped: false, main: false };
    if (skipped) {
      this.#skip -= 1;
      return;
    }
    if (this.#skip > 0) return;
    if (name === 'pre') {
      this.#pre = Math.max(0, this.#pre - 1);
      if (this.#pre === 0) this.#endBlock(true);
    } else if (this.#pre === 0 && (HEADING.test(name) || BLOCKS.has(name))) this.#endBlock();
    if (main) this.#main -= 1;
  }

  #endBlock(preformatted = false): void {
    const text = this.#current.join('');
    this.#current = [];
    let block = preformatted ? fencedBlock(text) : proseLine(text);
    if (this.#heading !== undefined) {
      const title = oneLine(text);
      if (this.#heading === 1) this.#firstH1 ??= title;
      block = title === '' ? '' : headingLine(this.#heading, title);
      this.#heading = undefined;
    }
    if (oneLine(text) === '') return;
    this.#body.push(block);
    if (this.#main > 0) this.#mainBlocks.push(block);
  }

  document(): ParsedDocument {
    this.#endBlock();
    const text = joinBlocks(this.#mainBlocks.length > 0 ? this.#mainBlocks : this.#body);
    if (Buffer.byteLength(text) > this.maxTextBytes) {
      throw new DocumentRefusal(`its text exceeds the ${this.maxTextBytes}-byte document limit`);
    }
    const title = oneLine(this.#title) || this.#firstH1;
    return {
      text,
      meta: { ...(title ? { title } : {}), ...(this.#lang ? { lang: this.#lang } : {}), format: 'html' },
    };
  }
}
