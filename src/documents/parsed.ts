/**
 * What a parser makes of a file (docs/documents.md): the document's text, in the one form the corpus reads structure
 * from (corpus/outline.ts), and its metadata.
 *
 * - A heading is a line of its own, written as Markdown writes one: `#` to `######` by level, a space, its title.
 * - A page break is a form feed (`\f`, as pdftotext writes one) on a line of its own: page N starts after the
 *   (N-1)th of them. Only paginated formats (PDF) hold any.
 * - Paragraphs are separated by a blank line.
 *
 * So every chunk stays a verbatim slice of the stored text, and a chunk's heading path and page are read back from
 * the text before it.
 */
export interface ParsedDocument {
  readonly text: string;
  /** Metadata the file itself gives: `title`, `format`, `pages` (paginated formats), an author, front matter. */
  readonly meta: Record<string, unknown>;
}

/** The formats read (detect.ts finds which a file is). */
export type DocumentFormat = 'pdf' | 'docx' | 'html' | 'markdown' | 'text';

/** Why a file is no document here: damaged, encrypted, too large, of a format not read. One line, for summaries. */
export class DocumentRefusal extends Error {
  override name = 'DocumentRefusal';
}

export const PAGE_BREAK = '\n\f\n';

/** A heading line of `level` (1-6), its title on one line. */
export function headingLine(level: number, title: string): string {
  return `${'#'.repeat(Math.min(6, Math.max(1, level)))} ${oneLine(title)}`;
}

/** Text on one line: runs of white space (line breaks, form feeds included) made one space. */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/**
 * A paragraph as one line: its white space folded, and a line that would read as a heading (`# 1 rated`) or open a
 * code fence (`~~~`, which would hide every heading and page break after it) escaped as Markdown escapes it
 * (`\# 1 rated`), so that only headings are headings and only code is code.
 */
export function proseLine(text: string): string {
  const line = oneLine(text);
  return /^(#{1,6}(\s|$)|`{3}|~{3})/.test(line) ? `\\${line}` : line;
}

/**
 * Preformatted text (code) as a fenced block, kept as written: a fence longer than any run of backticks inside it,
 * and form feeds made spaces, so nothing in it reads as a heading or a page break.
 */
export function fencedBlock(text: string): string {
  const body = text
    .replace(/\r\n?/g, '\n')
    .replace(/\f/g, ' ')
    .replace(/^\n+|\s+$/g, '');
  const longest = (body.match(/`+/g) ?? []).reduce((most, run) => Math.max(most, run.length), 0);
  const fence = '`'.repeat(Math.max(3, longest + 1));
  return `${fence}\n${body}\n${fence}`;
}

/** Blocks (paragraphs, headings, fenced code) joined by blank lines, empty ones left out: what every parser hands on. */
export function joinBlocks(blocks: readonly string[]): string {
  return blocks.filter((block) => block.trim() !== '').join('\n\n');
}
