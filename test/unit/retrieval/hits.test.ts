import { describe, expect, it } from 'vitest';
import { bodyOf, buildHit, documentIdOf, hitId, trustOf, type HitShape } from '../../../src/retrieval/hits.js';
import { documentOfHitId } from '../../../src/retrieval/units.js';
import { fakeCorpus, scored } from './fake-corpus.js';

const corpus = fakeCorpus(
  [
    { docId: 'guide', ordinal: 0, text: 'first part', vector: [0.5, 0.25] },
    { docId: 'guide', ordinal: 1, text: 'second part' },
    { docId: 'note', ordinal: 0, text: 'a note' },
  ],
  {
    guide: {
      text: 'first part second part',
      meta: { source: 'handbook', title: 'The Guide', uri: 'https://example.org/guide' },
      origin: 'operator',
    },
    note: { meta: { lang: 'en' }, origin: 'client' },
  },
  new Set([]),
);
const TRUST = { handbook: 'trusted', forum: 'trusted', wiki: 'community' } as const;
const INJECTION = { threshold: 0.5, sanitize: false };
const shape = (over: Partial<HitShape> = {}): HitShape => ({
  unit: 'chunk',
  trust: TRUST,
  injection: INJECTION,
  ...over,
});

describe('hit ids', () => {
  it.each([
    { label: 1, unit: 'chunk' as const, id: 'guide#1' },
    { label: 1, unit: 'document' as const, id: 'guide' },
    { label: 9, unit: 'chunk' as const, id: '' }, // deleted since recall: never emitted
  ])('label $label as a $unit is "$id"', ({ label, unit, id }) => {
    expect(hitId(corpus, label, unit)).toBe(id);
  });

  it('documentIdOf names the chunk’s document, "" once deleted', () => {
    expect([documentIdOf(corpus, 2), documentIdOf(corpus, 9)]).toEqual(['note', '']);
  });
});

describe('§7.7.2 bodies', () => {
  it.each([
    { label: 1, unit: 'chunk' as const, body: 'second part' },
    { label: 1, unit: 'document' as const, body: 'first part second part' },
    { label: 2, unit: 'document' as const, body: 'a note' }, // no stored document text: the chunk's
    { label: 9, unit: 'chunk' as const, body: '' },
  ])('label $label as a $unit: "$body"', ({ label, unit, body }) => {
    expect(bodyOf(corpus, label, unit)).toBe(body);
  });
});

describe('§15.2 trust', () => {
  it.each([
    { source: 'handbook', origin: 'operator' as const, level: 'trusted' },
    { source: 'handbook', origin: 'client' as const, level: 'community' }, // client text is never trusted
    { source: 'wiki', origin: 'client' as const, level: 'community' },
    { source: 'unknown', origin: 'operator' as const, level: 'untrusted' },
    { source: 'toString', origin: 'operator' as const, level: 'untrusted' }, // own keys only
  ])('$source written by $origin is $level', ({ source, origin, level }) => {
    expect(trustOf(TRUST, source, origin)).toBe(level);
  });
});

describe('§7.7 Hit shape', () => {
  it('a chunk hit: id, score, unit, scores, meta, citation with offsets, chunk, trust, text', () => {
    const [hit] = scored([1, 0.75]);
    expect(buildHit(corpus, hit!, shape())).toEqual({
      id: 'guide#1',
      score: 0.75,
      unit: 'chunk',
      level: 0,
      scores: { dense: 0.75 },
      meta: { source: 'handbook', title: 'The Guide', uri: 'https://example.org/guide' },
      citation: { source: 'handbook', start: 100, end: 111, title: 'The Guide', uri: 'https://example.org/guide' },
      chunk: { docId: 'guide', index: 1 },
      trust: { level: 'trusted', score: 1, injectionSuspected: false },
      text: 'second part',
    });
  });

  it.each([
    { over: { includeText: false }, text: undefined, vector: undefined },
    { over: { includeVectors: true }, text: 'first part', vector: [0.5, 0.25] },
    { over: { unit: 'document' as const }, text: 'first part second part', vector: undefined },
  ])('includes per $over', ({ over, text, vector }) => {
    const hit = buildHit(corpus, scored([0, 1])[0]!, shape(over));
    expect(hit?.text).toEqual(text);
    expect(hit?.vector).toEqual(vector);
  });

  it('a document hit is named by its document', () => {
    expect(buildHit(corpus, scored([1, 1])[0]!, shape({ unit: 'document' }))).toMatchObject({
      id: 'guide',
      unit: 'document',
    });
  });

  it('without a source in meta the citation names the document; no title or uri unless given', () => {
    const hit = buildHit(corpus, scored([2, 1])[0]!, shape());
    expect(hit?.citation).toEqual({ source: 'note', start: 0, end: 6 });
    expect(hit?.trust).toEqual({ level: 'untrusted', score: 0.6, injectionSuspected: false });
  });

  it('a chunk deleted since recall builds no hit', () => {
    const gone = fakeCorpus([{ docId: 'd', ordinal: 0, text: 'x' }], {}, new Set([0]));
    expect(buildHit(gone, scored([0, 1])[0]!, shape())).toBeUndefined();
  });
});

describe('§7.16 the document a hit id names, whatever its unit', () => {
  it.each([
    ['guide#3', 'guide'],
    ['guide#3:10-40', 'guide'],
    ['guide#p2', 'guide'],
    ['guide', 'guide'],
    ['a#b#4', 'a#b'],
  ])('%s names %s', (id, document) => {
    expect(documentOfHitId(id)).toBe(document);
  });
});
