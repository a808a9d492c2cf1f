/**
 * The structure a document's text carries (docs/documents.md): its headings, as Markdown writes them, and its page
 * breaks (a form feed, as pdftotext and the PDF reader write them). The chunker cuts sections at both; a hit's
 * heading path and pages are read back from the same outline, so the two always agree.
 *
 * Read line by line in one pass: ATX headings (`## Title`), setext headings (a line under `===` or `---`), and
 * nothing inside fenced code (a `# comment` there is code). A full CommonMark parse would find the same headings
 * in the documents this server is given, at several times the cost, on every chunked write.
 */
export interface OutlineHeading {
  /** Where the heading's line (or lines, for setext) starts and ends. */
  readonly start: number;
  readonly end: number;
  readonly level: number;
  readonly title: string;
}

export interface Outline {
  readonly headings: readonly OutlineHeading[];
  /** Offsets of the page breaks, in order: page N starts after the (N-1)th. None: the text is not paginated. */
  readonly breaks: readonly number[];
}

const ATX = /^ {0,3}(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$/;
const SETEXT = /^ {0,3}(=+|-+)[ \t]*$/;
const FENCE = /^ {0,3}(`{3,}|~{3,})/;

export function outlineOf(text: string): Outline {
  const headings: OutlineHeading[] = [];
  const breaks: number[] = [];
  let fence: string | undefined;
  let previous: { start: number; text: string } | undefined;
  for (let start = 0; start <= text.length;) {
    const newline = text.indexOf('\n', start);
    const end = newline < 0 ? text.length : newline;
    const line = text.slice(start, end);
    const opened = FENCE.exec(line)?.[1];
    if (fence !== undefined) {
      if (opened !== undefined && opened[0] === fence[0] && opened.length >= fence.length) fence = undefined;
      previous = undefined;
    } else if (opened !== undefined) {
      fence = opened;
      previous = undefined;
    } else {
      for (let at = line.indexOf('\f'); at >= 0; at = line.indexOf('\f', at + 1)) breaks.push(start + at);
      const atx = ATX.exec(line);
      const setext = atx === null && previous !== undefined ? SETEXT.exec(line) : null;
      if (atx !== null) headings.push({ start, end, level: atx[1]!.length, title: atx[2]!.trim() });
      else if (setext !== null && previous !== undefined) {
        headings.push({
          start: previous.start,
          end,
          level: setext[1]![0] === '=' ? 1 : 2,
          title: previous.text.trim(),
        });
      }
      previous =
        atx === null && setext === null && line.trim() !== '' && !line.includes('\f')
          ? { start, text: line }
          : undefined;
    }
    if (newline < 0) break;
    start = newline + 1;
  }
  return { headings, breaks };
}

/** The titles of the headings a position lies under, outermost first (`["Methods", "Samples"]`). */
export function headingPathAt(outline: Outline, offset: number): string[] {
  const path: OutlineHeading[] = [];
  for (const heading of outline.headings) {
    if (heading.start >= offset) break;
    while (path.length > 0 && path[path.length - 1]!.level >= heading.level) path.pop();
    path.push(heading);
  }
  return path.map((heading) => heading.title);
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
