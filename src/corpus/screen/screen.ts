import { decodedPayloads } from './encoded.js';
import { findHidden, withoutHidden, type HiddenFound } from './hidden.js';
import { markerWeight } from './markers.js';
import { matchPhrases } from './phrases.js';
import { wordsOf } from './words.js';

/**
 * The injection screen (docs/trust.md; §7.7 `Hit.trust`, §15.2): a deterministic, versioned function of a chunk's
 * text that finds text written to instruct its reader. Each kind of signal weighs what its strongest sign does; the
 * kinds combine as independent evidence (1 - Π(1 - w)). `score` is 1 - that: 1, no sign found; lower, more
 * suspicious. Advisory only: absence of a sign is no proof of safety (§15.2).
 */

/** Changes whenever what the screen finds changes: a stored result of another version is screened again. */
export const SCREEN_VERSION = 2;

/** The kinds of sign, in the order a screen lists them (phrases.ts's PhraseKind among them). */
export const SIGNALS = [
  'override',
  'addressed-to-model',
  'role-marker',
  'hidden-characters',
  'encoded-payload',
] as const;

export type Signal = (typeof SIGNALS)[number];

export interface Screen {
  readonly version: number;
  /** In [0, 1]: 1, no sign of injection; lower, more suspicious. */
  readonly score: number;
  /** The kinds of sign found, in a fixed order. */
  readonly signals: readonly Signal[];
}

/**
 * Characters of one text screened: the chunker's chunks are far shorter, a whole document (`unit: "document"`, or a
 * document stored unchunked) at most `index.maxDocumentBytes`, 1 MiB by default; past this the rest is not read.
 */
export const MAX_SCREENED = 1024 * 1024;

/**
 * A text is screened in parts of PART characters, each overlapping the next by OVERLAP (a sign is far shorter, so
 * one that straddles a cut lies whole in one part), and each part's folded (NFKC) form is cut at PART_FOLDED: a
 * character can expand eighteen-fold under NFKC (U+FDFA), and the screen's cost is in what it reads after folding.
 * A part costs some milliseconds of one core, so a sliced screen gives the loop back between parts.
 */
const PART = 32 * 1024;
const OVERLAP = 512;
const PART_FOLDED = 2 * PART;

/** Screens `text` (its first MAX_SCREENED characters) in one go: for a chunk, which is short. */
export function screenText(text: string): Screen {
  const weights = new Map<Signal, number>();
  for (const part of partsOf(text)) for (const [signal, weight] of weighPart(part)) raise(weights, signal, weight);
  return screenOf(weights);
}

/** Screens `text` as screenText does, giving the loop back between parts (`due`: the caller's time slice). */
export async function screenInSlices(text: string, due: () => Promise<void>): Promise<Screen> {
  const weights = new Map<Signal, number>();
  for (const part of partsOf(text)) {
    for (const [signal, weight] of weighPart(part)) raise(weights, signal, weight);
    await due();
  }
  return screenOf(weights);
}

/** The overlapping parts a text is screened in; a cut never splits a surrogate pair. */
function* partsOf(text: string): Generator<string> {
  const end = Math.min(text.length, MAX_SCREENED);
  for (let start = 0; start < end; ) {
    let stop = Math.min(end, start + PART);
    if (stop < end && isHighSurrogate(text.charCodeAt(stop - 1))) stop--;
    yield text.slice(start, stop);
    if (stop >= end) return;
    start = Math.max(start + 1, stop - OVERLAP);
    if (isLowSurrogate(text.charCodeAt(start))) start++;
  }
}

const isHighSurrogate = (unit: number) => unit >= 0xd800 && unit <= 0xdbff;
const isLowSurrogate = (unit: number) => unit >= 0xdc00 && unit <= 0xdfff;

/** The weight of each kind of sign in one part. */
function weighPart(read: string): Map<Signal, number> {
  const hidden = findHidden(read);
  // Hidden characters are read past (NFKC folds full-width and other look-alike letters): "ig\u200Bnore" is "ignore".
  const visible = hidden.count === 0 ? read : withoutHidden(read);
  const folded = visible.normalize('NFKC').slice(0, PART_FOLDED);
  const weights = new Map<Signal, number>(matchPhrases(folded, wordsOf(folded)));
  raise(weights, 'role-marker', markerWeight(folded));
  raise(weights, 'hidden-characters', hiddenWeight(hidden));
  raise(weights, 'encoded-payload', payloadWeight(folded, hidden));
  return weights;
}

function raise(weights: Map<Signal, number>, signal: Signal, weight: number): void {
  if (weight > (weights.get(signal) ?? 0)) weights.set(signal, weight);
}

/** A weight counts as a sign from this on (weaker ones still lower the score, but name no signal). */
const SIGN = 0.2;

function screenOf(weights: ReadonlyMap<Signal, number>): Screen {
  let clean = 1;
  for (const weight of weights.values()) clean *= 1 - weight;
  const signals = SIGNALS.filter((signal) => (weights.get(signal) ?? 0) >= SIGN);
  return { version: SCREEN_VERSION, score: Math.round(clean * 1000) / 1000, signals };
}

/**
 * Hidden characters: any tag character is smuggling (ASCII spelled in invisible code points); a bidi override
 * reorders what a reviewer sees. Zero-width characters weigh by how many, but alone stay under the default
 * threshold: scraped text carries them (SciFact has an abstract with five stray LRMs); with the words they hide
 * (read past them by the phrase rules) a passage is suspected.
 */
function hiddenWeight({ count, tags, bidi }: HiddenFound): number {
  if (tags > 0) return 0.9;
  if (bidi > 0) return 0.55;
  if (count >= 8) return 0.45;
  if (count >= 3) return 0.35;
  return count > 0 ? 0.2 : 0;
}

/** Encoded payloads, and tag characters' ASCII: what they decode to, weighed by the phrase and marker rules. */
function payloadWeight(text: string, hidden: HiddenFound): number {
  let weight = 0;
  const decoded = decodedPayloads(text);
  if (hidden.tagText !== '') decoded.push(hidden.tagText);
  for (const payload of decoded) {
    const words = wordsOf(payload);
    let found = markerWeight(payload);
    for (const w of matchPhrases(payload, words).values()) found = Math.max(found, w);
    // Readable text hidden in an encoding is itself a mild sign; with instructions in it, a strong one.
    weight = Math.max(weight, found > 0 ? Math.min(0.95, found + 0.15) : words.words.length >= 3 ? 0.2 : 0);
  }
  return weight;
}
