import { describe, expect, it } from 'vitest';
import { federationOf, loopStop, offPath } from '../../../src/gateway/federated-hops.js';
import { fakeEngine } from './fake-engine.js';

describe('§16.2 the federation a query arrives with', () => {
  it.each([
    { why: 'none given: the gateway depth, an empty path', meta: {}, federation: { depth: 3, path: [] } },
    {
      why: 'given: taken as is',
      meta: { federation: { depth: 1, path: ['g1', 'e2'] } },
      federation: { depth: 1, path: ['g1', 'e2'] },
    },
    {
      why: 'a non-integer depth falls back to the gateway depth',
      meta: { federation: { depth: 1.5, path: [] } },
      federation: { depth: 3, path: [] },
    },
    {
      why: 'non-string hops are dropped',
      meta: { federation: { depth: 2, path: ['g1', 7, null, 'e2'] } },
      federation: { depth: 2, path: ['g1', 'e2'] },
    },
    {
      why: 'a federation that is not an object is ignored',
      meta: { federation: 'x' },
      federation: { depth: 3, path: [] },
    },
    { why: 'depth 0 is kept', meta: { federation: { depth: 0 } }, federation: { depth: 0, path: [] } },
  ])('$why', ({ meta, federation }) => {
    expect(federationOf(meta, 3)).toEqual(federation);
  });
});

describe('§16.2 loop detection at the gateway', () => {
  it.each([
    { why: 'a fresh query goes on', federation: { depth: 3, path: [] }, note: undefined },
    { why: 'another gateway on the path goes on', federation: { depth: 2, path: ['g0'] }, note: undefined },
    {
      why: 'this gateway already on the path is a cycle',
      federation: { depth: 2, path: ['g0', 'g1'] },
      note: 'cycle: gateway g1 is already on the path ["g0","g1"]',
    },
    {
      why: 'depth 0 never forwards',
      federation: { depth: 0, path: ['g0'] },
      note: 'hop budget exhausted at gateway g1, which has no index of its own',
    },
    {
      why: 'a cycle is named before an exhausted budget',
      federation: { depth: 0, path: ['g1'] },
      note: 'cycle: gateway g1 is already on the path ["g1"]',
    },
  ])('$why', ({ federation, note }) => {
    expect(loopStop(federation, 'g1')).toBe(note);
  });
});

describe('§16.2 engines already on the path are skipped', () => {
  const engines = [fakeEngine('a'), fakeEngine('b', { name: 'inner-gateway' }), fakeEngine('c', {}, false)];
  it.each([
    { why: 'an empty path keeps every engine', path: [], targets: ['a', 'b', 'c'], notes: [] },
    {
      why: 'by registry id',
      path: ['a'],
      targets: ['b', 'c'],
      notes: ['cycle: engine a is already on the path; skipped'],
    },
    {
      why: 'by server name',
      path: ['inner-gateway'],
      targets: ['a', 'c'],
      notes: ['cycle: engine b is already on the path; skipped'],
    },
    {
      why: 'every one, in engine order',
      path: ['c', 'a', 'b'],
      targets: [],
      notes: [
        'cycle: engine a is already on the path; skipped',
        'cycle: engine b is already on the path; skipped',
        'cycle: engine c is already on the path; skipped',
      ],
    },
    {
      why: 'an engine not reached yet, by registry id',
      path: ['c'],
      targets: ['a', 'b'],
      notes: ['cycle: engine c is already on the path; skipped'],
    },
  ])('$why', ({ path, targets, notes }) => {
    const result = offPath(engines, { depth: 2, path });
    expect(result.targets.map((engine) => engine.id)).toEqual(targets);
    expect(result.notes).toEqual(notes);
  });
});
