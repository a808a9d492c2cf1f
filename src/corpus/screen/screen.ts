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
export const SCREEN_VERSION = 1;

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
 * The bound on one call: ~100 ms of one core, and some tens of megabytes for its words while it runs.
 */
export const MAX_SCREENED = 1024 * 1024;

/** Screens `text` (its first MAX_SCREENED characters). */
export function screenText(text: string): Screen {
  const read = text.length > MAX_SCREENED ? text.slice(0, MAX_SCREENED) : text;
  const hidden = findHidden(read);
  // Hidden characters are read past (NFKC folds full-width and other look-alike letters): "ig\u200Bnore" is "ignore".
  const visible = hidden.count === 0 ? read : withoutHidden(read);
  const folded = visible.normalize('NFKC');
  const weights = new Map<Signal, number>(matchPhrases(folded, wordsOf(folded)));
  raise(weights, 'role-marker', markerWeight(folded));
  raise(weights, 'hidden-characters', hiddenWeight(hidden));
  raise(weights, 'encoded-payload', payloadWeight(folded, hidden));
  return screenOf(weights);
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
