import { htmlText, textOf } from './decode.js';
import { parseDocx } from './docx.js';
import { parseHtml } from './html.js';
import { parseMarkdown, parseText } from './markdown.js';
import { DocumentRefusal, type DocumentFormat, type ParsedDocument } from './parsed.js';
import { parsePdf } from './pdf.js';

/** What one parse may make and unpack. */
export interface ParseBounds {
  readonly maxTextBytes: number;
  readonly maxMetadataBytes: number;
  readonly maxUnpackedBytes: number;
}

/**
 * A file of a known format to its text and metadata (run in a parser process: parser-process.ts). Its metadata is
 * bounded here, so that no more than a document may hold comes back to the server (YAML aliases multiply a value).
 */
export async function parseBytes(
  bytes: Uint8Array,
  format: DocumentFormat,
  bounds: ParseBounds,
): Promise<ParsedDocument> {
  const document = await parsed(bytes, format, bounds);
  const metaBytes = Buffer.byteLength(JSON.stringify(document.meta));
  if (metaBytes > bounds.maxMetadataBytes) {
    throw new DocumentRefusal(`its metadata of ${metaBytes} bytes is over the ${bounds.maxMetadataBytes}-byte limit`);
  }
  return document;
}

async function parsed(bytes: Uint8Array, format: DocumentFormat, bounds: ParseBounds): Promise<ParsedDocument> {
  switch (format) {
    case 'pdf':
      return parsePdf(bytes, bounds.maxTextBytes);
    case 'docx':
      return parseDocx(bytes, bounds.maxTextBytes, bounds.maxUnpackedBytes);
    case 'html':
      return parseHtml(htmlText(bytes), bounds.maxTextBytes);
    case 'markdown':
      return parseMarkdown(textOf(bytes), bounds.maxMetadataBytes);
    case 'text':
      return parseText(textOf(bytes));
  }
}
