import { describe, expect, it } from 'vitest';
import { TimeSlice } from '../../../src/protocol/time-slice.js';
import { AnswerBudget } from '../../../src/retrieval/answer-budget.js';
import { buildHits, reportUsage, type UsageFacts } from '../../../src/retrieval/answer.js';
import { fakeContext, scored } from './fake-corpus.js';

const PAGE = scored([1, 0.9], [2, 0.8], [3, 0.7]);
/** A hit per label with a body of `size` characters; label 2 has been deleted. */
const build = (size: number) => (hit: { label: number }) =>
  hit.label === 2 ? undefined : { id: `d#${hit.label}`, text: 'x'.repeat(size) };

describe('§15.5 building hits within the answer caps', () => {
  it('builds each hit in order, leaving out those deleted since recall', async () => {
    const hits = await buildHits(
      PAGE,
      build(10),
      { maxResponseBytes: 10_000, answers: new AnswerBudget(10_000) },
      new TimeSlice(),
    );
    expect(hits.map((hit) => hit.id)).toEqual(['d#1', 'd#3']);
  });

  it.each([
    { why: 'an answer past maxResponseBytes is -32013', maxResponseBytes: 1_500, inFlight: 1e9, code: -32013 },
    { why: 'hit bytes past the shared budget are -32011', maxResponseBytes: 1e9, inFlight: 1_500, code: -32011 },
  ])('$why', async ({ maxResponseBytes, inFlight, code }) => {
    const answers = new AnswerBudget(inFlight);
    const other = answers.open(); // another request holds bytes, so this one may not pass the budget
    other.take(1);
    const limits = { maxResponseBytes, answers };
    await expect(buildHits(PAGE, build(1_000), limits, new TimeSlice())).rejects.toMatchObject({ code });
    other.release();
    // Released on failure too: the whole budget is free again.
    const again = answers.open();
    expect(() => again.take(inFlight)).not.toThrow();
  });

  it('releases its reservation once the hits are built', async () => {
    const answers = new AnswerBudget(3_000);
    await buildHits(PAGE, build(1_000), { maxResponseBytes: 1e9, answers }, new TimeSlice());
    const other = answers.open();
    other.take(1);
    expect(() => answers.open().take(2_999)).not.toThrow();
  });
});

describe('§7.7 usage', () => {
  const FACTS: UsageFacts = {
    hits: 2,
    candidates: 40,
    reranked: 10,
    tokens: undefined,
    notes: [],
    mode: 'hybrid',
    fusedBy: 'rrf',
    started: 1_000,
    scoreScale: 'unbounded',
  };

  it.each([
    { over: {}, usage: { candidates: 40, reranked: 10, latencyMs: 42 } },
    { over: { tokens: 300 }, usage: { candidates: 40, reranked: 10, latencyMs: 42, tokens: 300 } },
    { over: { notes: ['n1'] }, usage: { candidates: 40, reranked: 10, latencyMs: 42, notes: ['n1'] } },
  ])('with $over the usage is $usage', ({ over, usage }) => {
    const scale = { 'x-rcp-server-scoreScale': 'unbounded' };
    expect(reportUsage({ ...FACTS, ...over }, fakeContext(), 1_041.6)).toEqual({ ...usage, ...scale });
  });

  it.each([
    { fusedBy: 'rrf', mode: 'hybrid', line: '2 hits from 40 candidates (hybrid, rrf)' },
    { fusedBy: undefined, mode: 'dense', line: '2 hits from 40 candidates (dense)' },
  ])('§17.1 logs each note at notice, then "$line" at info', ({ fusedBy, mode, line }) => {
    const ctx = fakeContext();
    reportUsage({ ...FACTS, fusedBy, mode, notes: ['a', 'b'] }, ctx, 1_010);
    expect(ctx.reported.logs).toEqual([
      { level: 'notice', message: 'a', data: undefined },
      { level: 'notice', message: 'b', data: undefined },
      { level: 'info', message: line, data: { latencyMs: 10 } },
    ]);
  });
});
