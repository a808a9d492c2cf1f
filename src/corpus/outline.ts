/**
 * The structure a document's text carries (docs/documents.md): its headings, as Markdown writes them, and its page
 * breaks (a form feed, as pdftotext and the PDF reader write them). The chunker cuts sections at both; a hit's
 * heading path and pages are read back from the same outline, so the two always agree.
 *
 * Read line by line in one pass (a line may end `\r\n`): ATX headings (`## Title`), setext headings (a paragraph
 * under `===` or `---`, not a list item's), and nothing inside fenced code (a `# comment` or a form feed there is
 * code). A full CommonMark parse would find the same headings in the documents this server is given, at several
 * times the cost, on every chunked write. Each heading knows its parent, so a position's heading path costs a binary
 * search and its depth, not a walk over every heading before it.
 */
export interface OutlineHeading {
  /** Where the heading's line (or lines, for setext) starts and ends. */
  readonly start: number;
  readonly end: number;
  readonly level: number;
  readonly title: string;
  /** The index of the heading it lies under, -1 for none. */
  readonly parent: number;
}

export interface Outline {
  readonly headings: readonly OutlineHeading[];
  /** Offsets of the page breaks, in order: page N starts after the (N-1)th. None: the text is not paginated. */
  readonly breaks: readonly number[];
}

const ATX = /^ {0,3}(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$/;
const SETEXT = /^ {0,3}(=+|-+)[ \t]*$/;
const FENCE = /^ {0,3}(`{3,}|~{3,})/;
/** A list item or a quote: a `---` under one is a thematic break, not a heading's underline. */
const NOT_PARAGRAPH = /^ {0,3}([-*+>]|\d{1,9}[.)])(\s|$)/;

export function outlineOf(text: string): Outline {
  const reader = new OutlineReader();
  for (let start = 0; start <= text.length;) {
    const newline = text.indexOf('\n', start);
    const end = newline < 0 ? text.length : newline;
    reader.line(text.slice(start, end).replace(/\r$/, ''), start, end);
    if (newline < 0) break;
    start = newline + 1;
  }
  return { headings: reader.headings, breaks: reader.breaks };
}

class OutlineReader {
  readonly headings: OutlineHeading[] = [];
  readonly breaks: number[] = [];
  #fence: string | undefined;
  /** The paragraph being read (a setext underline makes it a heading): where it starts, its lines. */
  #paragraph: { start: number; lines: string[] } | undefined;
  /** Indices of the headings open at the current line, outermost first. */
  readonly #open: number[] = [];

  line(line: string, start: number, end: number): void {
    const fence = FENCE.exec(line)?.[1];
    if (this.#fence !== undefined) {
      if (fence !== undefined && fence[0] === this.#fence[0] && fence.length >= this.#fence.length)
        this.#fence = undefined;
      this.#paragraph = undefined;
      return;
    }
    if (fence !== undefined) {
      this.#fence = fence;
      this.#paragraph = undefined;
      return;
    }
    for (let at = line.indexOf('\f'); at >= 0; at = line.indexOf('\f', at + 1)) this.breaks.push(start + at);
    const atx = ATX.exec(line);
    const setext = atx === null && this.#paragraph !== undefined ? SETEXT.exec(line) : null;
    if (atx !== null) this.#heading(start, end, atx[1]!.length, atx[2]!.trim());
    else if (setext !== null && this.#paragraph !== undefined) {
      const { start: from, lines } = this.#paragraph;
      this.#heading(from, end, setext[1]![0] === '=' ? 1 : 2, lines.map((l) => l.trim()).join(' '));
    }
    const prose = atx === null && setext === null && line.trim() !== '' && !line.includes('\f');
    if (!prose) this.#paragraph = undefined;
    else if (this.#paragraph !== undefined) this.#paragraph.lines.push(line);
    else if (!NOT_PARAGRAPH.test(line)) this.#paragraph = { start, lines: [line] };
  }

  #heading(start: number, end: number, level: number, title: string): void {
    while (this.#open.length > 0 && this.headings[this.#open[this.#open.length - 1]!]!.level >= level) this.#open.pop();
    const parent = this.#open[this.#open.length - 1] ?? -1;
    this.#open.push(this.headings.length);
    this.headings.push({ start, end, level, title, parent });
  }
}

/** The titles of the headings a position lies under, outermost first (`["Methods", "Samples"]`). */
export function headingPathAt(outline: Outline, offset: number): string[] {
  const { headings } = outline;
  // The last heading that starts before `offset`, by binary search; then its parents.
  let low = 0;
  let high = headings.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (headings[middle]!.start < offset) low = middle + 1;
    else high = middle;
  }
  const path: string[] = [];
  for (let at = low - 1; at >= 0; at = headings[at]!.parent) path.push(headings[at]!.title);
  return path.reverse();
}

/** The page (from 1) a position lies on; undefined for a text with no page breaks. */
export function pageAt(outline: Outline, offset: number): number | undefined {
  if (outline.breaks.length === 0) return undefined;
  let low = 0;
  let high = outline.breaks.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (outline.breaks[middle]! < offset) low = middle + 1;
    else high = middle;
  }
  return low + 1;
}
