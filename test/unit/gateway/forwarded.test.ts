import { describe, expect, it } from 'vitest';
import { forwardedRetrieve, type Hop } from '../../../src/gateway/federated-hops.js';

const HOP: Hop = { gateway: 'g1', federation: { depth: 3, path: ['g0'] }, budget: 800, caller: 'alice' };

describe('§16.2 what an engine is sent', () => {
  it.each([
    {
      why: 'the client params with the engine k, the forwarded deadline, one hop less and the gateway on the path',
      params: { query: 'q', k: 10, filter: { year: 2020 } },
      meta: {},
      sent: {
        query: 'q',
        k: 5,
        filter: { year: 2020 },
        _meta: { deadlineMs: 800, federation: { depth: 2, path: ['g0', 'g1'] } },
      },
    },
    {
      why: 'the client _meta kept, less its progressToken; its deadline and federation replaced',
      params: { query: 'q', k: 10 },
      meta: { progressToken: 'p', logLevel: 'debug', deadlineMs: 5_000, federation: { depth: 9, path: [] } },
      sent: {
        query: 'q',
        k: 5,
        _meta: { logLevel: 'debug', deadlineMs: 800, federation: { depth: 2, path: ['g0', 'g1'] } },
      },
    },
    {
      why: 'a _meta in the params is replaced by the one built from the request meta',
      params: { query: 'q', k: 10, _meta: { stale: true } },
      meta: { fresh: true },
      sent: {
        query: 'q',
        k: 5,
        _meta: { fresh: true, deadlineMs: 800, federation: { depth: 2, path: ['g0', 'g1'] } },
      },
    },
  ])('$why', ({ params, meta, sent }) => {
    expect(forwardedRetrieve(params, meta, 5, HOP)).toEqual(sent);
  });

  it('§15.6 scopes sessionId and idempotencyKey by the caller', () => {
    const params = { query: 'q', k: 10, sessionId: 's1' };
    const meta = { idempotencyKey: 'i1' };
    const alice = forwardedRetrieve(params, meta, 5, HOP);
    const bob = forwardedRetrieve(params, meta, 5, { ...HOP, caller: 'bob' });
    expect(alice.sessionId).toMatch(/^[0-9a-f]{64}$/);
    expect(alice.sessionId).not.toBe(bob.sessionId);
    const keyOf = (sent: Record<string, unknown>) => (sent._meta as Record<string, unknown>).idempotencyKey;
    expect(keyOf(alice)).toMatch(/^[0-9a-f]{64}$/);
    expect(keyOf(alice)).not.toBe(keyOf(bob));
  });
});
