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
    const ids: number[] = [];
    for (let end = n; end > 0; end = from[end]!) ids.push(last[end]!);
    ids.reverse();
    return ids.filter((id, i) => !(id === this.#options.unknownId && ids[i - 1] === this.#options.unknownId));
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
