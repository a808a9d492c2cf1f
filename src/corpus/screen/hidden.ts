/**
 * Hidden characters (docs/trust.md): code points a reader of the text does not see, by which text can carry
 * instructions past a human reviewer (§15.2) — zero-width characters, Unicode tag characters, bidi overrides.
 * One pass over the text, no regular expression.
 */

/** What one pass found: how many hidden characters, of which tags and bidi controls, and the tags' ASCII. */
export interface HiddenFound {
  readonly count: number;
  readonly tags: number;
  readonly bidi: number;
  /** The ASCII that tag characters (U+E0020-U+E007E) spell, at most MAX_TAG_TEXT characters. */
  readonly tagText: string;
}

/** The most ASCII kept of a text's tag characters (screened as text: tags-only smuggling is short). */
const MAX_TAG_TEXT = 4096;

const isBidiControl = (c: number) => (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
const isTag = (c: number) => c >= 0xe0000 && c <= 0xe007f;
const isAsciiLetter = (c: number | undefined) =>
  c !== undefined && ((c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a));
/** Right-to-left letters (Hebrew, Arabic, Syriac, Thaana, NKo and their presentation forms), where LRM/RLM belong. */
const isRtl = (c: number) =>
  (c >= 0x0590 && c <= 0x08ff) || (c >= 0xfb1d && c <= 0xfdff) || (c >= 0xfe70 && c <= 0xfeff);

/**
 * Whether the code point at `i` of `points` is hidden. ZWNJ and ZWJ (U+200C, U+200D) and the variation selectors
 * (U+FE00-U+FE0F) belong to Persian, Indic scripts and emoji sequences: hidden only between two ASCII letters
 * (inside a Latin word). LRM and RLM (U+200E,
 * U+200F) belong to right-to-left text: hidden only in a text with no right-to-left letter. U+FEFF is hidden except
 * as the text's first character (a byte-order mark).
 */
function hiddenAt(points: readonly number[], i: number, rtl: boolean): boolean {
  const c = points[i]!;
  if (c === 0x200b || (c >= 0x2060 && c <= 0x2064) || isTag(c) || isBidiControl(c) || isBlank(c)) return true;
  if (c === 0x200c || c === 0x200d || isSelector(c))
    return isAsciiLetter(points[i - 1]) && isAsciiLetter(points[i + 1]);
  if (c === 0x200e || c === 0x200f) return !rtl;
  return c === 0xfeff && i > 0;
}

/**
 * Characters that render as nothing (or a blank) wherever they are: the soft hyphen, the combining grapheme joiner,
 * the Mongolian vowel separator and the Hangul fillers. A word spelled with them inside reads as the word.
 */
const isBlank = (c: number) =>
  c === 0x00ad || c === 0x034f || c === 0x180e || c === 0x115f || c === 0x1160 || c === 0x3164 || c === 0xffa0;
const isSelector = (c: number) => c >= 0xfe00 && c <= 0xfe0f;

/** Whether a code point could be hidden at all (the cheap test that lets plain text through without an array). */
const mayHide = (c: number) =>
  (c >= 0x200b && c <= 0x200f) ||
  (c >= 0x2060 && c <= 0x2064) ||
  c === 0xfeff ||
  isTag(c) ||
  isBidiControl(c) ||
  isBlank(c) ||
  isSelector(c);

/** The text's code points, or undefined when none of them could be hidden (the usual case: nothing allocated). */
function pointsIfAny(text: string): number[] | undefined {
  let any = false;
  for (let i = 0; i < text.length && !any; i++) {
    const unit = text.charCodeAt(i);
    // A tag character is a surrogate pair whose high half is U+DB40.
    any = mayHide(unit) || unit === 0xdb40;
  }
  if (!any) return undefined;
  const points: number[] = [];
  for (const char of text) points.push(char.codePointAt(0)!);
  return points;
}

/** Counts the hidden characters of `text` and reads what its tag characters spell. */
export function findHidden(text: string): HiddenFound {
  const points = pointsIfAny(text);
  if (points === undefined) return { count: 0, tags: 0, bidi: 0, tagText: '' };
  const rtl = points.some(isRtl);
  let count = 0;
  let tags = 0;
  let bidi = 0;
  let tagText = '';
  points.forEach((c, i) => {
    if (!hiddenAt(points, i, rtl)) return;
    count += 1;
    if (isBidiControl(c)) bidi += 1;
    if (!isTag(c)) return;
    tags += 1;
    if (c >= 0xe0020 && c <= 0xe007e && tagText.length < MAX_TAG_TEXT) tagText += String.fromCharCode(c - 0xe0000);
  });
  return { count, tags, bidi, tagText };
}

/**
 * `text` without its hidden characters (those findHidden counts), for `retrieve.injection.sanitize`; the same
 * string when it has none.
 */
export function withoutHidden(text: string): string {
  const points = pointsIfAny(text);
  if (points === undefined) return text;
  const rtl = points.some(isRtl);
  const kept = points.filter((_, i) => !hiddenAt(points, i, rtl));
  if (kept.length === points.length) return text;
  // String.fromCodePoint takes its arguments on the stack: a long text is joined from pieces.
  const pieces: string[] = [];
  for (let at = 0; at < kept.length; at += PIECE) pieces.push(String.fromCodePoint(...kept.slice(at, at + PIECE)));
  return pieces.join('');
}

const PIECE = 8192;
