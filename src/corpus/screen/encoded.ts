/**
 * Encoded payloads (docs/trust.md, §15.2): long runs of base64 or hex that decode to readable text. One pass finds
 * the runs; each is decoded (at most MAX_DECODED bytes of all of them) and handed back as text for the phrase rules,
 * so a payload weighs what its decoded words do. Hashes, keys and binary data decode to bytes that are not text, and
 * are let be.
 */

/** The shortest run read as a payload: 24 base64 characters are 18 bytes, three short words. */
const MIN_BASE64 = 24;
const MIN_HEX = 32;
/** Bytes decoded of one text, all runs together; and runs decoded. */
const MAX_DECODED = 64 * 1024;
const MAX_RUNS = 64;
/** The share of a decoding's bytes that must be printable ASCII (or whitespace) for it to be read as text. */
const PRINTABLE = 0.9;

const isBase64 = (c: number) =>
  (c >= 0x41 && c <= 0x5a) ||
  (c >= 0x61 && c <= 0x7a) ||
  (c >= 0x30 && c <= 0x39) ||
  c === 0x2b ||
  c === 0x2f ||
  c === 0x2d ||
  c === 0x5f;
const isHex = (c: number) => (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);

/** The readable texts that base64 and hex runs of `text` decode to (bounded: MAX_RUNS, MAX_DECODED). */
export function decodedPayloads(text: string): string[] {
  const found: string[] = [];
  let budget = MAX_DECODED;
  for (let at = 0; at < text.length && found.length < MAX_RUNS && budget > 0;) {
    if (!isBase64(text.charCodeAt(at))) {
      at++;
      continue;
    }
    let end = at;
    while (end < text.length && isBase64(text.charCodeAt(end))) end++;
    const run = text.slice(at, Math.min(end, at + Math.ceil((budget * 4) / 3)));
    at = end;
    const decoded = decodeRun(run);
    if (decoded === undefined) continue;
    budget -= decoded.length;
    found.push(decoded);
  }
  return found;
}

/** A run's decoding as text: hex when it is all hex digits, else base64; undefined when short or not text. */
function decodeRun(run: string): string | undefined {
  let hex = run.length >= MIN_HEX && run.length % 2 === 0;
  for (let i = 0; hex && i < run.length; i++) hex = isHex(run.charCodeAt(i));
  if (!hex && (run.length < MIN_BASE64 || !looksEncoded(run))) return undefined;
  const bytes = hex
    ? Buffer.from(run, 'hex')
    : Buffer.from(run, run.includes('-') || run.includes('_') ? 'base64url' : 'base64');
  let printable = 0;
  for (const byte of bytes)
    if ((byte >= 0x20 && byte < 0x7f) || byte === 0x0a || byte === 0x0d || byte === 0x09) printable++;
  return bytes.length > 0 && printable / bytes.length >= PRINTABLE ? bytes.toString('latin1') : undefined;
}

/**
 * Whether a run of base64 characters is likely an encoding rather than a word or an identifier: both cases of letters
 * and no long stretch of lower case (an English word, a snake_case or kebab-case name).
 */
function looksEncoded(run: string): boolean {
  let upper = 0;
  let lower = 0;
  let stretch = 0;
  let longest = 0;
  for (let i = 0; i < run.length; i++) {
    const c = run.charCodeAt(i);
    const isLower = c >= 0x61 && c <= 0x7a;
    if (isLower) lower++;
    if (c >= 0x41 && c <= 0x5a) upper++;
    stretch = isLower ? stretch + 1 : 0;
    longest = Math.max(longest, stretch);
  }
  return upper > 0 && lower > 0 && longest < 12;
}
