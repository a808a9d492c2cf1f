import type { UriFetcher } from '../content/index.js';
import { RpcError } from '../protocol/errors.js';
import type { TextInput } from '../protocol/schemas/params.js';

/** How many uris one request may have in flight at once (§15.5: bounded fan-out). */
const FETCH_CONCURRENCY = 8;

/**
 * §4.8 Content blocks (declared in protocol/schemas/params.ts). This server is text-only (no `modalities` advertised,
 * so `["text"]`): a bare string and a `text` block are the same thing; any other block type is -32005, a text block
 * without `text` is -32602. A `text` block — or a `blob` of a `text/*` type — may instead point at its text with
 * `uri`, which is dereferenced only under the operator's fetch policy (§15.5; off by default: -32602).
 *
 * Reads the text of inputs; `field` names them in errors (`inputs.2`, the validator's dotted style).
 */
export class ContentReader {
  constructor(private readonly fetcher: UriFetcher) {}

  async text(input: TextInput, field: string, signal: AbortSignal): Promise<string> {
    if (typeof input === 'string') return input;
    if (input.uri !== undefined) {
      if (input.data !== undefined || input.text !== undefined) {
        throw RpcError.invalidParams(`${field}.uri`, 'a block carries its body inline or by uri, never both (§4.8)');
      }
      const textual = input.type === 'text' || (input.type === 'blob' && /^text\//i.test(input.mimeType ?? ''));
      if (!textual) throw RpcError.optionUnsupported(`${field}.type`, input.type);
      return this.fetcher.fetchText(input.uri, `${field}.uri`, signal);
    }
    if (input.type !== 'text') throw RpcError.optionUnsupported(`${field}.type`, input.type);
    if (typeof input.text !== 'string') throw RpcError.invalidParams(`${field}.text`, 'a text block must carry text');
    return input.text;
  }

  async texts(inputs: readonly TextInput[], field: string, signal: AbortSignal): Promise<string[]> {
    const texts: string[] = [];
    for (let start = 0; start < inputs.length; start += FETCH_CONCURRENCY) {
      const slice = inputs.slice(start, start + FETCH_CONCURRENCY);
      texts.push(...(await Promise.all(slice.map((input, i) => this.text(input, `${field}.${start + i}`, signal)))));
    }
    return texts;
  }

  /** A query (a string, a block or blocks, joined by newlines) bounded to `maxChars` (§15.5): longer is -32602. */
  async query(query: TextInput | readonly TextInput[], maxChars: number, signal: AbortSignal): Promise<string> {
    const text =
      typeof query === 'string'
        ? query
        : Array.isArray(query)
          ? (await this.texts(query, 'query', signal)).join('\n')
          : await this.text(query as TextInput, 'query', signal);
    if (text.length > maxChars) {
      throw RpcError.invalidParams('query', `${text.length} characters exceed the limit of ${maxChars}`);
    }
    return text;
  }
}
