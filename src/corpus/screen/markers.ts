/**
 * Role markers (docs/trust.md, §15.2): the tokens and headers of chat and instruction templates, by which a passage
 * poses as the system's or the assistant's turn. A marker counts at a line's start (after its indentation and
 * Markdown quote and list marks) or a sentence's; template tokens (`<|im_start|>`, `[INST]`, `<<SYS>>`) wherever
 * they stand, for less when quoted as code (after a backtick, as documentation writes them). Linear: a bounded head
 * of each line and sentence, and indexOf scans.
 */

/** Markers that open a turn (lower-cased), and their weights. */
const TURN_MARKERS: readonly (readonly [string, number])[] = [
  ['system:', 0.6],
  ['system prompt:', 0.7],
  ['system message:', 0.7],
  ['[system]', 0.6],
  ['<system>', 0.6],
  ['</system>', 0.5],
  ['assistant:', 0.5],
  ['[assistant]', 0.5],
  ['### instruction', 0.6],
  ['### system', 0.6],
  ['### response', 0.4],
  ['### input', 0.3],
  ['human:', 0.3],
  ['user:', 0.3],
];

/** Template tokens, wherever they stand (lower-cased). */
const TOKENS = ['[inst]', '[/inst]', '<<sys>>', '<</sys>>'];
const TOKEN_WEIGHT = 0.6;
/** A template token quoted as code: documentation of the template. */
const QUOTED_TOKEN_WEIGHT = 0.3;
/** A `<|name|>` token at a line's start: a turn begins there. */
const TOKEN_AT_LINE_START = 0.75;
/** The longest `<|name|>` token read (`<|start_header_id|>` is 19 characters). */
const MAX_SPECIAL = 32;
/** Characters read of a line or sentence's start. */
const HEAD = 48;

/** The strongest role marker's weight in `text` (0: none). */
export function markerWeight(text: string): number {
  const lower = text.toLowerCase();
  let weight = Math.max(specialTokens(lower), templateTokens(lower));
  for (let at = 0; at < lower.length;) {
    const head = lower.slice(contentStart(lower, at), contentStart(lower, at) + HEAD);
    for (const [marker, w] of TURN_MARKERS) if (w > weight && head.startsWith(marker)) weight = w;
    if (head.startsWith('<|') && isSpecialToken(head, 0)) weight = Math.max(weight, TOKEN_AT_LINE_START);
    at = nextStart(lower, at);
  }
  return weight;
}

/** Where a line's or sentence's content starts: after spaces, tabs and Markdown `>`, `-`, `*` (not `#`). */
function contentStart(text: string, at: number): number {
  let i = at;
  const end = Math.min(text.length, at + HEAD);
  while (i < end && (text[i] === ' ' || text[i] === '\t' || text[i] === '>' || text[i] === '-' || text[i] === '*')) i++;
  return i;
}

/** The start of the next line or sentence after `at` (after a newline, or `.`, `!`, `?` and a space). */
function nextStart(text: string, at: number): number {
  for (let i = at; i < text.length; i++) {
    const c = text[i];
    if (c === '\n') return i + 1;
    if ((c === '.' || c === '!' || c === '?') && text[i + 1] === ' ') return i + 2;
  }
  return text.length;
}

/** The weight of the strongest `[INST]`/`<<SYS>>` token in `text`, less when quoted as code. */
function templateTokens(text: string): number {
  let weight = 0;
  for (const token of TOKENS) {
    for (let at = text.indexOf(token); at !== -1 && weight < TOKEN_WEIGHT; at = text.indexOf(token, at + 1)) {
      weight = Math.max(weight, text[at - 1] === '`' ? QUOTED_TOKEN_WEIGHT : TOKEN_WEIGHT);
    }
  }
  return weight;
}

/** The weight of the strongest `<|name|>` token in `text`, less when quoted as code. */
function specialTokens(text: string): number {
  let weight = 0;
  for (let at = text.indexOf('<|'); at !== -1 && weight < TOKEN_WEIGHT; at = text.indexOf('<|', at + 2)) {
    if (isSpecialToken(text, at)) weight = Math.max(weight, text[at - 1] === '`' ? QUOTED_TOKEN_WEIGHT : TOKEN_WEIGHT);
  }
  return weight;
}

/** Whether `<|` at `at` opens a token of letters, digits and `_` closed by `|>` within MAX_SPECIAL characters. */
function isSpecialToken(text: string, at: number): boolean {
  for (let i = at + 2; i < text.length && i < at + MAX_SPECIAL; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x7c) return i > at + 2 && text[i + 1] === '>';
    const word = (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x5f;
    if (!word) return false;
  }
  return false;
}
