import { htmlText, utf8Text } from './decode.js';
import { parseDocx } from './docx.js';
import { parseHtml } from './html.js';
import { parseMarkdown, parseText } from './markdown.js';
import type { DocumentFormat, ParsedDocument } from './parsed.js';
import { parsePdf } from './pdf.js';

/** What one parse may make and unpack. */
export interface ParseBounds {
  readonly maxTextBytes: number;
  readonly maxUnpackedBytes: number;
}

/** A file of a known format to its text and metadata (run in a parser process: parser-process.ts). */
export async function parseBytes(
  bytes: Uint8Array,
  format: DocumentFormat,
  bounds: ParseBounds,
): Promise<ParsedDocument> {
  switch (format) {
    case 'pdf':
      return parsePdf(bytes, bounds.maxTextBytes);
    case 'docx':
      return parseDocx(bytes, bounds.maxTextBytes, bounds.maxUnpackedBytes);
    case 'html':
      return parseHtml(htmlText(bytes), bounds.maxTextBytes);
    case 'markdown':
      return parseMarkdown(utf8Text(bytes));
    case 'text':
      return parseText(utf8Text(bytes));
  }
}
