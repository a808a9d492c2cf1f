/**
 * The part of a text a tokenizer needs to read when only the first `maxTokens` tokens are kept (an encoder's input is
 * truncated to its window anyway): at most `maxTokens` × `UNITS_PER_TOKEN` UTF-16 units, counted both before and after
 * Unicode compatibility decomposition, never splitting a surrogate pair. Tokenizing a 15 MB text to keep 128 tokens
 * would hold the event loop for seconds; this bounds the work per text. Tokenizers normalise before they match
 * pieces, and a character may expand 18-fold in doing so (U+FDFA): 8,192 of them were 147,457 pieces and 270 ms of
 * the event loop's time, so the bound is on what the tokenizer reads after normalising (NFKD is the longest form:
 * NFKC and NFC only compose it).
 *
 * 64 units per token is beyond any WordPiece or SentencePiece piece here. What it can change is only a text whose
 * first `maxTokens` tokens span more than that (a run of unknown characters merged into one token, or many words over
 * WordPiece's 100-character limit): such a text is read up to the bound.
 */
export const UNITS_PER_TOKEN = 64;

/** The most UTF-16 units one code point becomes under NFKD (U+FDFA, 18; NFKC the same or fewer). */
export const MAX_EXPANSION = 18;

export function readablePrefix(text: string, maxTokens: number): string {
  const limit = maxTokens * UNITS_PER_TOKEN;
  const end = normalizedEnd(text, 0, wholeCodePoints(text, Math.min(text.length, limit)), limit);
  return end === text.length ? text : text.slice(0, end);
}

/** Raw units normalised at once while measuring (a step costs a few microseconds even at 18-fold expansion). */
const STEP_UNITS = 256;

/**
 * The furthest end in [start, end] whose text from `start` is at most `limit` UTF-16 units after NFKD, never inside a
 * surrogate pair (`end` must not be). NFKD maps each code point on its own and canonical ordering only permutes, so
 * lengths add up over any cut between code points; the work is bounded by `limit`, not by the span's length.
 */
export function normalizedEnd(text: string, start: number, end: number, limit: number): number {
  if ((end - start) * MAX_EXPANSION <= limit) return end;
  let used = 0;
  let at = start;
  while (at < end) {
    const stepEnd = wholeCodePoints(text, Math.min(end, at + STEP_UNITS));
    const size = text.slice(at, stepEnd).normalize('NFKD').length;
    if (used + size > limit) break;
    used += size;
    at = stepEnd;
  }
  // The step that overflowed, a code point at a time.
  while (at < end) {
    const next = at + (isHighSurrogate(text.charCodeAt(at)) && at + 1 < end ? 2 : 1);
    const size = text.slice(at, next).normalize('NFKD').length;
    if (used + size > limit) break;
    used += size;
    at = next;
  }
  return at;
}

/** `end`, or one less when a surrogate pair straddles it. */
export function wholeCodePoints(text: string, end: number): number {
  return end < text.length && end > 0 && isHighSurrogate(text.charCodeAt(end - 1)) ? end - 1 : end;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
