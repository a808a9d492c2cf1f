import { Type, type Static } from '@sinclair/typebox';
import { RpcError } from '../protocol/errors.js';

/**
 * §4.8 Content blocks. This server is text-only (no `modalities` advertised, so `["text"]`): a bare string and a
 * `text` block are the same thing; any other block type is -32005, a text block without `text` is -32602.
 */
export const ContentBlock = Type.Object({
  type: Type.String(),
  text: Type.Optional(Type.String()),
  mimeType: Type.Optional(Type.String()),
  data: Type.Optional(Type.String()),
  uri: Type.Optional(Type.String()),
});

export const TextInput = Type.Union([Type.String(), ContentBlock]);
export type TextInput = Static<typeof TextInput>;

/** The text of one input; `field` names it in errors (`inputs.2`, the validator's dotted style). */
export function textOf(input: TextInput, field: string): string {
  if (typeof input === 'string') return input;
  if (input.type !== 'text') throw RpcError.optionUnsupported(`${field}.type`, input.type);
  if (typeof input.text !== 'string') throw RpcError.invalidParams(`${field}.text`, 'a text block must carry text');
  return input.text;
}

export function textsOf(inputs: readonly TextInput[], field: string): string[] {
  return inputs.map((input, i) => textOf(input, `${field}.${i}`));
}

/** A query (a string, a block or blocks, joined by newlines) bounded to `maxChars` (§15.5): longer is -32602. */
export function queryText(query: TextInput | readonly TextInput[], maxChars: number): string {
  const text = typeof query === 'string' ? query : textsOf([query].flat(), 'query').join('\n');
  if (text.length > maxChars) {
    throw RpcError.invalidParams('query', `${text.length} characters exceed the limit of ${maxChars}`);
  }
  return text;
}
