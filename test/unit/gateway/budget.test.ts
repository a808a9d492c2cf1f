import { describe, expect, it } from 'vitest';
import { askedK, engineBudget, engineK } from '../../../src/gateway/federated-hops.js';
import { fakeEngine } from './fake-engine.js';

describe('§16.2 the deadline forwarded to the engines keeps a fusion reserve', () => {
  it.each([
    { why: 'the configured reserve when it is more than 10%', left: 1_000, reserve: 200, budget: 800 },
    { why: '10% when that is more than the configured reserve', left: 10_000, reserve: 200, budget: 9_000 },
    { why: 'rounded down, strictly below what is left', left: 1_000.9, reserve: 100, budget: 900 },
    { why: 'one millisecond is still a budget', left: 51.5, reserve: 50, budget: 1 },
  ])('$why', ({ left, reserve, budget }) => {
    expect(engineBudget(left, reserve)).toBe(budget);
  });

  it.each([
    { why: 'nothing left past the reserve', left: 50, reserve: 50 },
    { why: 'less than the reserve', left: 20.4, reserve: 50 },
    { why: 'a spent deadline', left: 0, reserve: 50 },
  ])('$why is -32014', ({ left, reserve }) => {
    expect(() => engineBudget(left, reserve)).toThrow(expect.objectContaining({ code: -32014 }) as Error);
  });
});

describe('§16.2 the k each engine is asked for', () => {
  it.each([
    { method: 'rrf', k: 10, asked: 10 },
    { method: 'weighted', k: 10, asked: 10 },
    { method: 'convex', k: 10, asked: 10 },
    { method: 'shards', k: 10, asked: 20 },
  ] as const)('$method asks $asked for k=$k', ({ method, k, asked }) => {
    expect(askedK(method, k)).toBe(asked);
  });

  it.each([
    { why: 'no maxK advertised: as asked', capabilities: { retrieve: {} }, k: 20 },
    { why: 'clamped to the advertised maxK', capabilities: { retrieve: { maxK: 5 } }, k: 5 },
    { why: 'a maxK above what is asked leaves it', capabilities: { retrieve: { maxK: 100 } }, k: 20 },
    { why: 'a maxK that is not a number is ignored', capabilities: { retrieve: { maxK: '5' } }, k: 20 },
  ])('$why', ({ capabilities, k }) => {
    expect(engineK(fakeEngine('a', { capabilities }), 20)).toBe(k);
  });

  it('an engine not reached yet is asked for as many as asked', () => {
    expect(engineK(fakeEngine('a', {}, false), 20)).toBe(20);
  });
});
