import { describe, expect, it } from 'vitest';
import type { ChunkBody } from '../../../src/corpus/index.js';
import { TimeSlice } from '../../../src/protocol/time-slice.js';
import { focusPage, PASSAGE_CHARS, PIECES_PER_ANSWER, QUOTE_CHARS } from '../../../src/retrieval/focus.js';
import { scored } from './fake-corpus.js';

/** A corpus of given chunks whose analyzer lower-cases words (the real one stems too: see the wire tests). */
function corpusOf(chunks: ChunkBody[]) {
  return {
    getChunk: (label: number) => chunks[label],
    termWeights: (text: string) =>
      Promise.resolve(
        new Map(
          text
            .toLowerCase()
            .match(/[a-z]+/g)
            ?.map((word) => [word, 1] as const) ?? [],
        ),
      ),
  };
}
const chunkOf = (text: string, start = 0, label = 0): ChunkBody => ({
  label,
  docId: 'd',
  ordinal: label,
  text,
  context: '',
  start,
  end: start + text.length,
});
const focus = async (chunks: ChunkBody[], query: string) =>
  focusPage(
    scored(...chunks.map((chunk) => [chunk.label, 1] as [number, number])),
    query,
    corpusOf(chunks),
    new TimeSlice(),
  );

describe('the focus of a hit: its quote and its passage', () => {
  it('quotes the sentence holding the rarest query terms, in document offsets', async () => {
    const text = 'Cats sleep a lot. Cats hunt mice at dawn. Dogs bark.';
    const [got] = (await focus([chunkOf(text, 100)], 'cats hunt mice')).values();
    expect(got?.quote).toEqual({ text: 'Cats hunt mice at dawn.', start: 118, end: 141 });
  });

  it('rarity is counted among the answer’s sentences: a term every sentence holds weighs least', async () => {
    const chunks = [chunkOf('Water is wet. Water and salt.', 0, 0), chunkOf('Water flows. Salt water is dense.', 0, 1)];
    const quotes = [...(await focus(chunks, 'water salt')).values()].map((f) => f.quote?.text);
    expect(quotes).toEqual(['Water and salt.', 'Salt water is dense.']);
  });

  it('no quote when no sentence holds a query term; the passage is then the first window', async () => {
    const [got] = (await focus([chunkOf('One. Two. Three. Four.')], 'zebra')).values();
    expect(got?.quote).toBeUndefined();
    expect(got?.passage.text).toBe('One. Two. Three.');
  });

  it('a passage is at most 3 sentences and PASSAGE_CHARS; a quote a piece of at most QUOTE_CHARS, cut at a word', async () => {
    const long = `Zebra ${'stripes '.repeat(100)}end.`;
    const text = `A. B. ${long} C. D.`;
    const [got] = (await focus([chunkOf(text)], 'zebra')).values();
    expect(got!.quote!.text.length).toBeLessThanOrEqual(QUOTE_CHARS);
    expect(got!.quote!.text).toMatch(/^Zebra( stripes)+$/);
    expect(got!.passage.text.length).toBeLessThanOrEqual(PASSAGE_CHARS);
    expect(got!.passage.text).toContain(got!.quote!.text);
  });

  it('a text with no sentence end is cut into pieces: the passage stays within PASSAGE_CHARS', async () => {
    const [got] = (await focus([chunkOf(`${'word '.repeat(3000)}zebra`)], 'zebra')).values();
    expect(got!.passage.text.length).toBeLessThanOrEqual(PASSAGE_CHARS);
    expect(got!.quote!.text.length).toBeLessThanOrEqual(QUOTE_CHARS);
  });

  it('the piece holding the match is quoted, not the start of a long sentence', async () => {
    const [got] = (await focus([chunkOf(`${'filler words here '.repeat(40)}the zebra grazes.`)], 'zebra')).values();
    expect(got!.quote!.text).toContain('zebra');
  });

  it('a form feed ends a sentence: a quote never runs onto the next page', async () => {
    const [got] = (await focus([chunkOf('First page text\fsecond page zebra here.')], 'zebra')).values();
    expect(got!.quote).toEqual({ text: 'second page zebra here.', start: 16, end: 39 });
  });

  it('no cut splits a surrogate pair: every piece is well-formed UTF-16', async () => {
    const text = `x${'😀'.repeat(20_000)}`;
    const [got] = (await focus([chunkOf(text)], 'x')).values();
    // A lone surrogate is a high half not followed by a low one, or a low half not after a high one.
    const lone = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
    for (const span of [got!.passage, got!.quote!]) expect(span.text).not.toMatch(lone);
  });

  it('an answer analyses at most PIECES_PER_ANSWER pieces, however small its sentences', async () => {
    const tiny = 'Zq qv. '.repeat(2_400);
    const chunks = Array.from({ length: 40 }, (_, label) => chunkOf(tiny, 0, label));
    let analysed = 0;
    const corpus = corpusOf(chunks);
    const counting = { ...corpus, termWeights: (text: string) => (analysed++, corpus.termWeights(text)) };
    const page = scored(...chunks.map((chunk) => [chunk.label, 1] as [number, number]));
    const got = await focusPage(page, 'zq', counting, new TimeSlice());
    expect(analysed).toBeLessThanOrEqual(PIECES_PER_ANSWER + 1);
    expect(got.size).toBe(40);
    // Hits past the budget get their chunk's opening, still within the passage bound, and no quote.
    for (const focus of got.values()) expect(focus.passage.text.length).toBeLessThanOrEqual(PASSAGE_CHARS);
    expect(got.get(39)?.quote).toBeUndefined();
  });

  it('a deleted chunk has no focus', async () => {
    const chunks = [chunkOf('Kept.')];
    const got = await focusPage(scored([0, 1], [5, 1]), 'kept', corpusOf(chunks), new TimeSlice());
    expect([...got.keys()]).toEqual([0]);
  });
});
