import { stemmer } from 'stemmer';
import { describe, expect, it } from 'vitest';
import { analyze, analyzeInSlices, RAW_PART_UNITS } from '../../../src/lexical/analyzer.js';
import { Bm25Index } from '../../../src/lexical/bm25.js';
import type { TimeSlice } from '../../../src/protocol/time-slice.js';
import { longestNormalized } from '../../helpers/normalize-spy.js';

/** The analysis of a whole text in one go, as it was: the reference the analysis in parts must equal. */
function wholeAnalysis(text: string, stem: boolean): string[] {
  const terms =
    text
      .normalize('NFKD')
      .replace(/\p{M}+/gu, '')
      .toLowerCase()
      .match(/[\p{L}\p{N}]+/gu) ?? [];
  return stem ? terms.map((term) => stemmer(term)) : terms;
}

/** A time slice that yields to nothing. */
const slice = { due: () => Promise.resolve() } as unknown as TimeSlice;

/** The most one step decomposes: a raw part at 18-fold. */
const STEP_UNITS = RAW_PART_UNITS * 18;

const EXPANDING = '\ufdfa';
/** Characters where a cut could change the analysis: marks, final sigma, expansions, pairs, spaces, case-ignorables. */
const TRICKY = [
  'a',
  'Σ',
  'ς',
  'Ο',
  '\u0301',
  '\u0345',
  'é',
  'İ',
  EXPANDING,
  '㎒',
  'ﬁ',
  '😀',
  '𝐀',
  ' ',
  '\n',
  '.',
  "'",
  '-',
  '1',
  '가',
  '\u00a0',
];

describe('the analyzer works in bounded parts, exactly as on the whole text', () => {
  it('random texts of tricky characters across many parts analyse as the whole does', () => {
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let round = 0; round < 40; round++) {
      const length = Math.floor(random() * 4 * RAW_PART_UNITS);
      const text = Array.from({ length }, () => TRICKY[Math.floor(random() * TRICKY.length)]).join('');
      expect(analyze(text, { stem: round % 2 === 0 })).toEqual(wholeAnalysis(text, round % 2 === 0));
    }
  });

  it('a long run without whitespace decomposes into terms whole (U+FDFA yields four words each)', () => {
    const text = EXPANDING.repeat(3 * RAW_PART_UNITS + 5);
    expect(analyze(text, { stem: false })).toEqual(wholeAnalysis(text, false));
  });

  it('340,000 × U+FDFA is analysed in parts of bounded decomposed length, not in one of 6 million units', async () => {
    const text = EXPANDING.repeat(340_000);
    let terms: string[] = [];
    const longest = await longestNormalized(async () => (terms = await analyzeInSlices(text, { stem: true }, slice)));
    expect(terms.length).toBe(340_000 * 4 - 339_999);
    // Whole, it was one step of 5 s on this machine (1.9 s of it decomposing).
    expect(longest).toBeLessThanOrEqual(STEP_UNITS);
  });

  it('BM25 indexing and embed/sparse weights of 100,000 × U+FDFA decompose in bounded parts', async () => {
    const index = new Bm25Index({ k1: 1.2, b: 0.75, stem: true });
    const text = EXPANDING.repeat(100_000);
    // Before: indexing read parts of 16,384 units, 294,912 once decomposed (260-300 ms each); weights, the whole.
    expect(await longestNormalized(() => index.addInSlices(1, text, slice))).toBeLessThanOrEqual(STEP_UNITS);
    let weights = new Map<string, number>();
    const longest = await longestNormalized(async () => (weights = await index.termWeights(text, 'document', slice)));
    expect(longest).toBeLessThanOrEqual(STEP_UNITS);
    expect([...weights.keys()].sort()).toEqual([...new Set(wholeAnalysis(text, true))].sort());
  });
});
