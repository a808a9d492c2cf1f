/**
 * The part of a text a tokenizer needs to read when only the first `maxTokens` tokens are kept (an encoder's input is
 * truncated to its window anyway): `maxTokens` × `UNITS_PER_TOKEN` UTF-16 units, never splitting a surrogate pair.
 * Tokenizing a 15 MB text to keep 128 tokens would hold the event loop for seconds; this bounds the work per text.
 *
 * 64 units per token is beyond any WordPiece or SentencePiece piece here. What it can change is only a text whose
 * first `maxTokens` tokens span more than that (a run of unknown characters merged into one token, or many words over
 * WordPiece's 100-character limit): such a text is read up to the bound.
 */
export const UNITS_PER_TOKEN = 64;

export function readablePrefix(text: string, maxTokens: number): string {
  const limit = maxTokens * UNITS_PER_TOKEN;
  if (text.length <= limit) return text;
  const last = text.charCodeAt(limit - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? limit - 1 : limit);
}
