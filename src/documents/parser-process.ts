import { parseBytes, type ParseBounds } from './parse.js';
import { DocumentRefusal, type DocumentFormat, type ParsedDocument } from './parsed.js';

/**
 * A parser process's entry (parser-pool.ts starts it): one request at a time over IPC, answered with the document
 * or the reason it is none. It ends with its parent: a server killed outright leaves no parser behind.
 */
export interface ParseRequest {
  readonly bytes: Uint8Array;
  readonly format: DocumentFormat;
  readonly bounds: ParseBounds;
}

export type ParseReply =
  | { readonly ok: true; readonly document: ParsedDocument }
  | { readonly ok: false; readonly refused: boolean; readonly error: string };

process.on('disconnect', () => process.exit(0));
process.on('message', (request: ParseRequest) => {
  void answer(request).then((reply) => process.send?.(reply));
});

async function answer(request: ParseRequest): Promise<ParseReply> {
  try {
    return { ok: true, document: await parseBytes(request.bytes, request.format, request.bounds) };
  } catch (error) {
    const refused = error instanceof DocumentRefusal;
    return { ok: false, refused, error: error instanceof Error ? error.message : String(error) };
  }
}
