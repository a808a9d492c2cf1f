import JSZip from 'jszip';
import mammoth from 'mammoth';
import { parseHtml } from './html.js';
import { DocumentRefusal, oneLine, type ParsedDocument } from './parsed.js';

/**
 * A Word (.docx) file: mammoth reads its paragraphs with their styles (Heading 1-6 become heading lines) as HTML,
 * which the HTML reader turns into text; its title and author come from its core properties (docProps/core.xml).
 * Images are never decoded.
 *
 * A .docx is a zip archive, and a zip's sizes are what its writer claims: before mammoth inflates anything, every XML
 * part is inflated here once as a stream, counting bytes, and the file is refused at `maxUnpackedBytes` (a zip bomb
 * stops costing at the bound, whatever its headers say).
 */
export async function parseDocx(bytes: Uint8Array, maxTextBytes: number, maxUnpackedBytes: number) {
  let zip: JSZip;
  try {
    zip = await JSZip.loadAsync(bytes, { checkCRC32: false });
  } catch (error) {
    throw new DocumentRefusal(`a damaged zip archive (${(error as Error).message})`);
  }
  if (zip.file('word/document.xml') === null) {
    throw new DocumentRefusal('a zip archive that holds no Word document (word/document.xml)');
  }
  await boundUnpacked(zip, maxUnpackedBytes);
  const core = await zip.file('docProps/core.xml')?.async('string');
  let html: string;
  try {
    const result = await mammoth.convertToHtml(
      { buffer: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length) },
      { convertImage: mammoth.images.imgElement(() => Promise.resolve({ src: '' })), externalFileAccess: false },
    );
    html = result.value;
  } catch (error) {
    throw new DocumentRefusal(`a damaged Word document (${(error as Error).message.split('\n', 1)[0]})`);
  }
  const parsed = parseHtml(html, maxTextBytes);
  // Core properties are a few hundred bytes: a larger part is not searched for them.
  const properties = core === undefined || core.length > CORE_CHARS ? {} : coreProperties(core);
  return {
    text: parsed.text,
    meta: { ...parsed.meta, ...properties, format: 'docx' },
  } satisfies ParsedDocument;
}

/** Inflates every part (media too: the document may name any part as its body), counting; past `max` bytes, refused. */
async function boundUnpacked(zip: JSZip, max: number): Promise<void> {
  let total = 0;
  for (const entry of Object.values(zip.files)) {
    if (entry.dir) continue;
    await new Promise<void>((resolve, reject) => {
      const stream = entry.nodeStream('nodebuffer');
      stream
        .on('data', (chunk: Buffer) => {
          total += chunk.length;
          if (total > max) {
            stream.pause();
            reject(new DocumentRefusal(`unpacks past ${max} bytes (a zip bomb, or a document too large to read)`));
          }
        })
        .on('error', (error: Error) => reject(new DocumentRefusal(`a damaged zip archive (${error.message})`)))
        .on('end', () => resolve());
    });
  }
}

const CORE_CHARS = 64 * 1024;

/** dc:title and dc:creator of the core properties (OPC), when they are set. */
function coreProperties(xml: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, tag] of [
    ['title', 'dc:title'],
    ['author', 'dc:creator'],
  ] as const) {
    const value = new RegExp(`<${tag}(?:\\s[^>]{0,256})?>([^<]{0,4096})</${tag}>`).exec(xml)?.[1];
    if (value !== undefined && oneLine(value) !== '') out[key] = decodeXml(oneLine(value));
  }
  return out;
}

function decodeXml(text: string): string {
  const named: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
  return text.replace(/&(#x[0-9a-f]+|#\d+|amp|lt|gt|quot|apos);/gi, (_, name: string) =>
    name.startsWith('#')
      ? codePoint(/^#x/i.test(name) ? parseInt(name.slice(2), 16) : Number(name.slice(1)))
      : (named[name.toLowerCase()] ?? ''),
  );
}

function codePoint(value: number): string {
  return value >= 0 && value <= 0x10ffff ? String.fromCodePoint(value) : '';
}
