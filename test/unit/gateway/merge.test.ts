import { describe, expect, it } from 'vitest';
import { mergeAnswers, noAnswerError } from '../../../src/gateway/federated-answers.js';
import { RpcError } from '../../../src/protocol/errors.js';
import { fakeEngine } from './fake-engine.js';

const A = fakeEngine('a', { capabilities: { retrieve: { scoreFloor: 0 } }, weight: 2 });
const B = fakeEngine('b');
const REQUIRED = fakeEngine('r', { required: true });
const ok = (value: Record<string, unknown>): PromiseSettledResult<Record<string, unknown>> => ({
  status: 'fulfilled',
  value,
});
const failed = (reason: unknown): PromiseSettledResult<Record<string, unknown>> => ({ status: 'rejected', reason });
const hit = (id: string) => ({ id, score: 1 });
const DOWN = RpcError.backendUnavailable('link down', 1000);

describe('§16.2 merging the engine answers', () => {
  it.each([
    {
      why: 'every answer becomes a list with its weight and scoreFloor; candidates count every hit',
      engines: [A, B],
      settled: [ok({ hits: [hit('1'), hit('2')] }), ok({ hits: [hit('3')] })],
      merged: {
        lists: [
          { engine: 'a', weight: 2, hits: [hit('1'), hit('2')], scoreFloor: 0 },
          { engine: 'b', weight: 1, hits: [hit('3')], scoreFloor: undefined },
        ],
        candidates: 3,
        notes: [],
        degraded: [],
      },
    },
    {
      why: 'a failed engine is skipped, named in the notes and in degraded',
      engines: [A, B],
      settled: [failed(DOWN), ok({ hits: [hit('3')] })],
      merged: {
        lists: [{ engine: 'b', weight: 1, hits: [hit('3')], scoreFloor: undefined }],
        candidates: 1,
        notes: ['engine a skipped: -32010 backend unavailable'],
        degraded: [{ engine: 'a', code: -32010, message: 'backend unavailable' }],
      },
    },
    {
      why: "an engine's own notes are kept, prefixed with its id, in engine order",
      engines: [A, B],
      settled: [ok({ hits: [], usage: { notes: ['one', 2] } }), failed(DOWN)],
      merged: {
        lists: [{ engine: 'a', weight: 2, hits: [], scoreFloor: 0 }],
        candidates: 0,
        notes: ['a: one', 'a: 2', 'engine b skipped: -32010 backend unavailable'],
        degraded: [{ engine: 'b', code: -32010, message: 'backend unavailable' }],
      },
    },
    {
      why: 'hits that are not objects and answers without hits are dropped',
      engines: [A, B],
      settled: [ok({ hits: [hit('1'), 'x', null, [1]] }), ok({ hits: 'none' })],
      merged: {
        lists: [
          { engine: 'a', weight: 2, hits: [hit('1')], scoreFloor: 0 },
          { engine: 'b', weight: 1, hits: [], scoreFloor: undefined },
        ],
        candidates: 1,
        notes: [],
        degraded: [],
      },
    },
  ])('$why', ({ engines, settled, merged }) => {
    expect(mergeAnswers(engines, settled)).toEqual(merged);
  });

  it('docs/architecture.md §6 a failure that is not an RpcError is a defect, not a skipped engine: thrown on as it is', () => {
    const bug = new TypeError('boom');
    expect(() => mergeAnswers([A, B], [ok({ hits: [hit('1')] }), failed(bug)])).toThrow(bug);
    expect(() => noAnswerError([failed(DOWN), failed(bug)], ['n1'])).toThrow(bug);
  });

  it.each([
    { why: 'alone', engines: [REQUIRED], settled: [failed(DOWN)] },
    { why: 'after an optional one that failed', engines: [A, REQUIRED], settled: [failed(DOWN), failed(DOWN)] },
    { why: 'beside one that answered', engines: [A, REQUIRED], settled: [ok({ hits: [] }), failed(DOWN)] },
  ])('a required engine that failed fails the query with its own error: $why', ({ engines, settled }) => {
    expect(() => mergeAnswers(engines, settled)).toThrow(DOWN);
  });
});

describe('§16.2 nothing answered', () => {
  const invalid = (field: string) => RpcError.invalidParams(field, 'bad');
  it.each([
    {
      why: 'every engine refusing the request the same way is that refusal',
      settled: [failed(invalid('k')), failed(invalid('k'))],
      code: -32602,
      detail: undefined,
    },
    {
      why: 'different refusals are -32010 with the notes',
      settled: [failed(invalid('k')), failed(RpcError.optionUnsupported('filter', true))],
      code: -32010,
      detail: 'every engine failed: n1; n2',
    },
    {
      why: 'retryable failures are -32010 with the notes',
      settled: [failed(DOWN), failed(DOWN)],
      code: -32010,
      detail: 'every engine failed: n1; n2',
    },
    { why: 'no engine at all is -32010', settled: [], code: -32010, detail: 'every engine failed: n1; n2' },
  ])('$why', ({ settled, code, detail }) => {
    const error = noAnswerError(settled, ['n1', 'n2']);
    expect(error.code).toBe(code);
    if (detail !== undefined) expect(error.data).toMatchObject({ detail, retryAfterMs: 1000 });
  });
});
