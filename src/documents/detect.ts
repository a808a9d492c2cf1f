import { extname } from 'node:path';
import { bomEncoding } from './decode.js';
import { DocumentRefusal, type DocumentFormat } from './parsed.js';

/** What is known of a file besides its bytes: its name (for its extension) and a declared media type (§4.8). */
export interface DocumentHint {
  readonly name?: string | undefined;
  readonly mediaType?: string | undefined;
}

/** Bytes looked at for a signature, and for a NUL that says "binary" (as git and grep do). */
const SNIFF_BYTES = 8 * 1024;

const TEXT_EXTENSIONS: Readonly<Record<string, DocumentFormat>> = {
  '': 'text',
  '.txt': 'text',
  '.text': 'text',
  '.md': 'markdown',
  '.markdown': 'markdown',
  '.html': 'html',
  '.htm': 'html',
  '.xhtml': 'html',
};

/** Media types a Content block may declare (§4.8), by format. */
const MEDIA_TYPES: Readonly<Record<string, DocumentFormat>> = {
  'application/pdf': 'pdf',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
  'text/html': 'html',
  'application/xhtml+xml': 'html',
  'text/markdown': 'markdown',
  'text/x-markdown': 'markdown',
  'text/plain': 'text',
};

export const DOCUMENT_MEDIA_TYPES = Object.keys(MEDIA_TYPES);

/**
 * The format of a file, by its content first: a PDF or an Office file is known by its signature whatever its name
 * (a report saved without an extension, a .docx renamed .txt). Text is HTML when it reads as HTML, Markdown when it
 * has front matter or its name or media type says so, plain text otherwise. Anything else is refused, saying what it
 * looks like.
 */
export function detectFormat(bytes: Uint8Array, hint: DocumentHint = {}): DocumentFormat {
  const head = Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.length, SNIFF_BYTES));
  const declared = declaredFormat(hint);
  const binary = binaryFormat(head, declared);
  if (binary !== undefined) return binary;
  // UTF-16 text is full of NULs; its byte order mark says it is text.
  const bom = bomEncoding(head);
  if (bom === undefined && head.includes(0)) {
    throw new DocumentRefusal(`binary, not a document format read here${kindOf(head)}`);
  }
  if (declared === 'pdf' || declared === 'docx') throw new DocumentRefusal(`declared ${declared}, but is text`);
  const start = new TextDecoder(bom ?? 'latin1')
    .decode(head.subarray(0, 2048))
    .replace(/^\uFEFF|^\xEF\xBB\xBF/, '')
    .trimStart()
    .toLowerCase();
  if (/^<(!doctype html|html[\s>]|head[\s>]|body[\s>])/.test(start) || declared === 'html') return 'html';
  if (declared === 'markdown' || /^---\r?\n/.test(start)) return 'markdown';
  return 'text';
}

function binaryFormat(head: Buffer, declared: DocumentFormat | undefined): DocumentFormat | undefined {
  // A PDF's header may follow up to 1 KB of other bytes, as readers allow; a file declared text must begin with it
  // (a note that mentions %PDF-1.7 is a note).
  const text = declared !== undefined && declared !== 'pdf' && declared !== 'docx';
  if (text ? head.subarray(0, 5).equals(PDF) : head.subarray(0, 1024).includes(PDF)) return 'pdf';
  // A zip is read as a .docx; the parser process refuses one that holds no Word document (its listing is read there).
  if (head.subarray(0, 4).equals(ZIP)) return 'docx';
  if (head.subarray(0, 8).equals(OLE)) {
    throw new DocumentRefusal('an OLE compound file: a legacy .doc, or an encrypted Office document (not read)');
  }
  return undefined;
}

const PDF = Buffer.from('%PDF-');
const ZIP = Buffer.from([0x50, 0x4b, 0x03, 0x04]);
const OLE = Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]);

/** The format a name or media type declares, if it declares one. */
function declaredFormat(hint: DocumentHint): DocumentFormat | undefined {
  const type = hint.mediaType?.split(';', 1)[0]?.trim().toLowerCase();
  if (type !== undefined && type !== '' && Object.hasOwn(MEDIA_TYPES, type)) return MEDIA_TYPES[type];
  if (hint.name === undefined) return undefined;
  const extension = extname(hint.name).toLowerCase();
  if (extension === '.pdf') return 'pdf';
  if (extension === '.docx') return 'docx';
  return Object.hasOwn(TEXT_EXTENSIONS, extension) ? TEXT_EXTENSIONS[extension] : undefined;
}

/** Whether a folder's file is one to read: a format declared by its name, or no extension (its content decides). */
export function isDocumentName(name: string): boolean {
  return !name.startsWith('.') && declaredFormat({ name }) !== undefined;
}

/** A few common signatures, so that a refusal says what the file seems to be. */
function kindOf(head: Buffer): string {
  const signatures: [string, Buffer][] = [
    ['a PNG image', Buffer.from([0x89, 0x50, 0x4e, 0x47])],
    ['a JPEG image', Buffer.from([0xff, 0xd8, 0xff])],
    ['a gzip archive', Buffer.from([0x1f, 0x8b])],
    ['an ELF executable', Buffer.from([0x7f, 0x45, 0x4c, 0x46])],
  ];
  const hit = signatures.find(([, magic]) => head.subarray(0, magic.length).equals(magic));
  return hit === undefined ? '' : ` (${hit[0]})`;
}
