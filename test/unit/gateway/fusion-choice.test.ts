import { describe, expect, it } from 'vitest';
import { alphaOf, fusionFor, sameEncoder } from '../../../src/gateway/federated-answers.js';
import type { EngineHits } from '../../../src/gateway/federated-fusion.js';
import { fakeEngine } from './fake-engine.js';

const list = (engine: string, scoreFloor?: number): EngineHits => ({ engine, weight: 1, hits: [], scoreFloor });
const encoder = (id: string, identity?: unknown) =>
  fakeEngine(id, { capabilities: { retrieve: {}, ...(identity === undefined ? {} : { embed: { identity } }) } });

describe('§16.3 the fusion strategy the engines allow', () => {
  const FLOORS = [list('a', 0), list('b', -1)];
  const SAME = [encoder('a', 'm1'), encoder('b', 'm1')];
  it.each([
    { why: 'rrf is always allowed', configured: 'rrf', lists: [list('a')], engines: SAME, method: 'rrf' },
    {
      why: 'weighted is always allowed',
      configured: 'weighted',
      lists: [list('a')],
      engines: SAME,
      method: 'weighted',
    },
    { why: 'convex with every scoreFloor', configured: 'convex', lists: FLOORS, engines: SAME, method: 'convex' },
    {
      why: 'convex without one scoreFloor is rrf, noted',
      configured: 'convex',
      lists: [list('a', 0), list('b')],
      engines: SAME,
      method: 'rrf',
      note: 'fusion: convex needs scoreFloor from every engine; rrf was used',
    },
    { why: 'shards over one embed.identity', configured: 'shards', lists: FLOORS, engines: SAME, method: 'shards' },
    {
      why: 'shards over two identities is rrf, noted',
      configured: 'shards',
      lists: FLOORS,
      engines: [encoder('a', 'm1'), encoder('b', 'm2')],
      method: 'rrf',
      note: 'fusion: shards needs one embed.identity across engines; rrf was used',
    },
  ] as const)('$why', ({ configured, lists, engines, method, ...rest }) => {
    const note = 'note' in rest ? rest.note : undefined;
    expect(fusionFor(configured, lists, engines)).toEqual(note === undefined ? { method } : { method, note });
  });
});

describe('§15.7 shards of one corpus share an encoder', () => {
  it.each([
    { why: 'one identity', engines: [encoder('a', 'm1'), encoder('b', 'm1')], same: true },
    { why: 'a single engine with an identity', engines: [encoder('a', 'm1')], same: true },
    { why: 'two identities', engines: [encoder('a', 'm1'), encoder('b', 'm2')], same: false },
    { why: 'the first without an identity', engines: [encoder('a'), encoder('b', 'm1')], same: false },
    { why: 'a later one without an identity', engines: [encoder('a', 'm1'), encoder('b')], same: false },
    { why: 'an identity that is not a string', engines: [encoder('a', 1), encoder('b', 1)], same: false },
    { why: 'no engines', engines: [], same: false },
  ])('$why', ({ engines, same }) => {
    expect(sameEncoder(engines)).toBe(same);
  });
});

describe("the request's fusion.alpha", () => {
  it.each([
    { params: {}, alpha: undefined },
    { params: { fusion: { alpha: 0.3 } }, alpha: 0.3 },
    { params: { fusion: { alpha: '0.3' } }, alpha: undefined },
    { params: { fusion: 'convex' }, alpha: undefined },
    { params: { fusion: { alpha: 0 } }, alpha: 0 },
  ])('$params -> $alpha', ({ params, alpha }) => {
    expect(alphaOf(params)).toBe(alpha);
  });
});
