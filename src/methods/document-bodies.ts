import type { UriFetcher } from '../content/index.js';
import type { CorpusDocument } from '../corpus/index.js';
import { DOCUMENT_MEDIA_TYPES, DocumentRefusal, type DocumentParser, type ParsedDocument } from '../documents/index.js';
import { RpcError } from '../protocol/errors.js';
import type { ContentBlock, IndexAddParams } from '../protocol/schemas/params.js';

/**
 * §7.10 document bodies as §4.8 Content blocks (docs/documents.md): a file of a format read here (PDF, Word, HTML,
 * Markdown, text), inline as base64 `data` with its `mimeType`, or by `uri` under the fetch policy (§15.5), is parsed
 * as `rcp-server ingest` parses it, its metadata under the document's own (which wins). A bare string, or a `text`
 * block of plain text, is the text itself. A file that is no document is -32602 on its block, saying why; an image
 * or audio block is -32005 (this server is text-only).
 */
export class DocumentBodies {
  constructor(
    private readonly fetcher: UriFetcher,
    readonly parser: DocumentParser,
  ) {}

  /** Stops the parser processes (the composition's, at close). */
  close(): void {
    this.parser.close();
  }

  /** The documents with their bodies read; `caller` has one file read at a time (parser-pool.ts). */
  async documents(
    documents: IndexAddParams['documents'],
    signal: AbortSignal,
    caller: string,
  ): Promise<readonly CorpusDocument[]> {
    if (documents.every((document) => typeof document.text === 'string')) return documents as CorpusDocument[];
    const out: CorpusDocument[] = [];
    for (const [i, document] of documents.entries()) {
      if (typeof document.text === 'string') {
        out.push({ ...document, text: document.text });
        continue;
      }
      const parsed = await this.#parse(document.text, `documents.${i}.text`, signal, caller);
      out.push({ ...document, text: parsed.text, meta: { ...parsed.meta, ...document.meta } });
    }
    return out;
  }

  async #parse(block: ContentBlock, field: string, signal: AbortSignal, caller: string): Promise<ParsedDocument> {
    if (block.type !== 'text' && block.type !== 'blob') throw RpcError.optionUnsupported(`${field}.type`, block.type);
    const bodies = [block.text, block.data, block.uri].filter((body) => body !== undefined).length;
    if (bodies !== 1) {
      throw RpcError.invalidParams(field, 'a block carries exactly one of text, data or uri (§4.8)');
    }
    const mediaType = block.mimeType;
    if (block.text !== undefined) {
      if (mediaType === undefined || /^text\/plain\b/i.test(mediaType)) return { text: block.text, meta: {} };
      return this.#read(Buffer.from(block.text), { mediaType }, field, signal, caller);
    }
    if (block.data !== undefined) {
      if (mediaType === undefined) throw RpcError.invalidParams(`${field}.mimeType`, 'required with data (§4.8)');
      if (!DOCUMENT_MEDIA_TYPES.includes(mediaType.split(';', 1)[0]!.trim().toLowerCase())) {
        throw RpcError.optionUnsupported(`${field}.mimeType`, mediaType);
      }
      return this.#read(this.#decoded(block.data, `${field}.data`), { mediaType }, field, signal, caller);
    }
    const fetched = await this.fetcher.fetchBytes(block.uri!, `${field}.uri`, signal, DOCUMENT_MEDIA_TYPES);
    const name = new URL(block.uri!).pathname;
    const parsed = await this.#read(
      fetched.bytes,
      { mediaType: mediaType ?? fetched.mediaType, name },
      field,
      signal,
      caller,
    );
    return { text: parsed.text, meta: { ...parsed.meta, uri: block.uri } };
  }

  /** Base64 decoded, its size bounded before a byte is decoded; anything but base64 refused (not skipped over). */
  #decoded(data: string, field: string): Buffer {
    const { maxFileBytes } = this.parser.limits;
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(data)) throw RpcError.invalidParams(field, 'is not base64 (§4.8)');
    if (Math.floor((data.length * 3) / 4) > maxFileBytes + 2) {
      throw RpcError.invalidParams(field, `decodes to more than the ${maxFileBytes}-byte file limit`);
    }
    return Buffer.from(data, 'base64');
  }

  async #read(
    bytes: Buffer,
    hint: { mediaType?: string | undefined; name?: string },
    field: string,
    signal: AbortSignal,
    caller: string,
  ): Promise<ParsedDocument> {
    try {
      return await this.parser.parse(bytes, hint, signal, caller);
    } catch (error) {
      if (error instanceof DocumentRefusal)
        throw RpcError.invalidParams(field, `${error.message}; nothing was written`);
      throw error;
    }
  }
}
