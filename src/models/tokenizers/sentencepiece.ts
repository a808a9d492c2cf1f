/**
 * A SentencePiece unigram tokenizer over a `[[piece, score], ...]` vocabulary (id = index), as shipped with
 * Universal Sentence Encoder lite (`../shared/models/use-lite/README.md`):
 * NFKC normalisation, '▁' marking each word boundary (every space, and the start of the text), Viterbi
 * segmentation maximising the summed piece scores, the first `reserved` ids never matched, and consecutive
 * unknown characters merged into one unknown id.
 *
 * Two details are part of the model's contract, because the reference tokenizer behaves so and the golden ids
 * (`golden.json`) depend on them: a character no piece covers becomes the unknown id spanning one code point with
 * a running score of 0 (it "resets" the lattice at that point), and among equal-scoring segmentations the one
 * whose last piece starts later wins.
 */
export type Vocabulary = readonly (readonly [string, number])[];

export const WORD_BOUNDARY = '\u2581';

interface TrieNode {
  children: Map<string, TrieNode>;
  /** The id of the piece that ends here, if one does. */
  id?: number;
}

export interface SentencePieceOptions {
  /** Ids below this are control symbols (`<unk>`, `<s>`, ...) and never produced by matching. */
  reserved: number;
  /** The id emitted for text no piece covers. */
  unknownId: number;
}

export class SentencePieceTokenizer {
  readonly #vocabulary: Vocabulary;
  readonly #options: SentencePieceOptions;
  readonly #root: TrieNode = { children: new Map() };

  constructor(vocabulary: Vocabulary, options: SentencePieceOptions) {
    this.#vocabulary = vocabulary;
    this.#options = options;
    for (let id = options.reserved; id < vocabulary.length; id++) this.#insert(vocabulary[id]![0], id);
  }

  /** The token ids of `text`, in order. */
  encode(text: string): number[] {
    const chars = Array.from(`${WORD_BOUNDARY}${text.normalize('NFKC').replace(/ /g, WORD_BOUNDARY)}`);
    return this.#segment(chars).map((piece) => piece.id);
  }

  /**
   * The token ids of `text` with the characters each stands for: `offsets` holds `[start, end)` per token, in UTF-16
   * units of `text` (not of its normal form). A token's leading word-boundary mark is left out of its span (a token
   * that is only a mark spans the space it replaced; the mark before the first word spans nothing, `[0, 0)`).
   * Undefined when normalising `text` joins characters across the pieces it is mapped in (see {@link alignedChars}).
   */
  encodeWithOffsets(text: string): { ids: number[]; offsets: Uint32Array } | undefined {
    const aligned = alignedChars(text);
    if (aligned === undefined) return undefined;
    const pieces = this.#segment(aligned.chars);
    const offsets = new Uint32Array(pieces.length * 2);
    pieces.forEach(({ from, to }, i) => {
      const first = to - from > 1 && aligned.chars[from] === WORD_BOUNDARY ? from + 1 : from;
      offsets[i * 2] = aligned.starts[first]!;
      offsets[i * 2 + 1] = aligned.ends[to - 1]!;
    });
    return { ids: pieces.map((piece) => piece.id), offsets };
  }

  /** The best segmentation of `chars` (code points): each piece's id and the chars `[from, to)` it covers. */
  #segment(chars: readonly string[]): { id: number; from: number; to: number }[] {
    const n = chars.length;
    // best[e]: the best total score of a segmentation of chars[0, e); last[e]: the id of its final piece,
    // which starts at from[e]. A position no piece reaches keeps the unknown id over one code point.
    const best = new Float64Array(n + 1);
    const last = new Int32Array(n + 1).fill(this.#options.unknownId);
    const from = Int32Array.from({ length: n + 1 }, (_, e) => e - 1);
    const reached = new Uint8Array(n + 1);
    for (let start = 0; start < n; start++) {
      let node: TrieNode | undefined = this.#root;
      for (let end = start; end < n && node !== undefined; end++) {
        node = node.children.get(chars[end]!);
        if (node?.id === undefined) continue;
        const score = this.#vocabulary[node.id]![1] + best[start]!;
        // `>=`: visiting starts in increasing order, a tie goes to the piece that starts later.
        if (reached[end + 1] === 0 || score >= best[end + 1]!) {
          best[end + 1] = score;
          last[end + 1] = node.id;
          from[end + 1] = start;
          reached[end + 1] = 1;
        }
      }
    }
    const pieces: { id: number; from: number; to: number }[] = [];
    for (let end = n; end > 0; end = from[end]!) pieces.push({ id: last[end]!, from: from[end]!, to: end });
    pieces.reverse();
    // Consecutive unknown pieces are one unknown token.
    const unknown = this.#options.unknownId;
    const merged: { id: number; from: number; to: number }[] = [];
    for (const piece of pieces) {
      const previous = merged.at(-1);
      if (piece.id === unknown && previous?.id === unknown) previous.to = piece.to;
      else merged.push(piece);
    }
    return merged;
  }

  #insert(piece: string, id: number): void {
    let node = this.#root;
    for (const char of piece) {
      let child = node.children.get(char);
      if (child === undefined) node.children.set(char, (child = { children: new Map() }));
      node = child;
    }
    node.id ??= id;
  }
}

const ASCII = /^\p{ASCII}*$/u;

/**
 * The characters `encode` reads (the word-boundary mark, then `text` in NFKC with spaces as marks), each with the span
 * of `text` it came from. Normalised a code point at a time, or, where that differs from normalising the whole text
 * (a character composing with the next), a grapheme cluster at a time; undefined where even that differs. ASCII text
 * is its own normal form, one char a unit.
 */
export function alignedChars(text: string): { chars: string[]; starts: Uint32Array; ends: Uint32Array } | undefined {
  const whole = text.normalize('NFKC');
  const units = ASCII.test(text) ? undefined : (unitsOf(text, whole) ?? null);
  if (units === null) return undefined;
  const chars = [WORD_BOUNDARY];
  const starts = [0];
  const ends = [0];
  const add = (normal: string, start: number, end: number): void => {
    for (const char of normal) {
      chars.push(char === ' ' ? WORD_BOUNDARY : char);
      starts.push(start);
      ends.push(end);
    }
  };
  if (units === undefined) for (let i = 0; i < text.length; i++) add(text[i]!, i, i + 1);
  else for (const { normal, start, end } of units) add(normal, start, end);
  return { chars, starts: Uint32Array.from(starts), ends: Uint32Array.from(ends) };
}

interface NormalUnit {
  readonly normal: string;
  readonly start: number;
  readonly end: number;
}

/** `text` cut into code points, else grapheme clusters, each with its NFKC, when they join up to `whole`. */
function unitsOf(text: string, whole: string): NormalUnit[] | undefined {
  const codePoints: NormalUnit[] = [];
  for (let start = 0; start < text.length;) {
    const end = start + (text.codePointAt(start)! > 0xffff ? 2 : 1);
    codePoints.push({ normal: text.slice(start, end).normalize('NFKC'), start, end });
    start = end;
  }
  if (codePoints.map((unit) => unit.normal).join('') === whole) return codePoints;
  const graphemes = [...new Intl.Segmenter(undefined, { granularity: 'grapheme' }).segment(text)].map(
    ({ segment, index }) => ({ normal: segment.normalize('NFKC'), start: index, end: index + segment.length }),
  );
  return graphemes.map((unit) => unit.normal).join('') === whole ? graphemes : undefined;
}
