import { describe, expect, it } from 'vitest';
import { federatedAnswer } from '../../../src/gateway/federated-answers.js';

const HITS = [{ id: '1', score: 1 }];

describe('§7.7 the federated reply', () => {
  it.each([
    {
      why: 'hits and usage; no notes, no _meta when nothing was skipped',
      hits: HITS,
      facts: { candidates: 4, latencyMs: 12.4, notes: [], degraded: [] },
      reply: { hits: HITS, usage: { candidates: 4, latencyMs: 12 } },
    },
    {
      why: 'notes in usage when any',
      hits: [],
      facts: { candidates: 0, latencyMs: 0.6, notes: ['cycle'], degraded: [] },
      reply: { hits: [], usage: { candidates: 0, latencyMs: 1, notes: ['cycle'] } },
    },
    {
      why: '§16.2 _meta.degraded names each skipped engine',
      hits: HITS,
      facts: {
        candidates: 1,
        latencyMs: 5,
        notes: ['engine b skipped: -32010 backend unavailable'],
        degraded: [{ engine: 'b', code: -32010, message: 'backend unavailable' }],
      },
      reply: {
        hits: HITS,
        usage: { candidates: 1, latencyMs: 5, notes: ['engine b skipped: -32010 backend unavailable'] },
        _meta: { degraded: [{ engine: 'b', code: -32010, message: 'backend unavailable' }] },
      },
    },
  ])('$why', ({ hits, facts, reply }) => {
    const answer = federatedAnswer(hits, facts);
    expect(answer).toEqual(reply);
    // The same key order as before: hits, usage, then _meta.
    expect(Object.keys(answer)).toEqual(Object.keys(reply));
  });
});
