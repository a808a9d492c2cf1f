import { describe, expect, it } from 'vitest';
import { retrieveCapability } from '../../../src/gateway/federated-retrieve.js';
import { fakeEngine } from './fake-engine.js';

const engine = (id: string, retrieve?: unknown) =>
  fakeEngine(id, { capabilities: retrieve === undefined ? {} : { retrieve } });

describe('§16.4 the gateway retrieve capability', () => {
  it.each([
    { why: 'no engine: maxK 1, no modes', engines: [], capability: { maxK: 1 } },
    {
      why: 'the largest maxK and the union of modes, in first-seen order',
      engines: [engine('a', { maxK: 50, modes: ['dense'] }), engine('b', { maxK: 200, modes: ['sparse', 'dense'] })],
      capability: { maxK: 200, modes: ['dense', 'sparse'] },
    },
    {
      why: 'an engine without retrieve counts for nothing',
      engines: [engine('a', { maxK: 50 }), engine('b')],
      capability: { maxK: 50 },
    },
    {
      why: 'a maxK that is not a number counts as 1',
      engines: [engine('a', { maxK: '500' })],
      capability: { maxK: 1 },
    },
    {
      why: 'an engine not reached yet counts for nothing',
      engines: [fakeEngine('a', {}, false)],
      capability: { maxK: 1 },
    },
  ])('$why', ({ engines, capability }) => {
    expect(retrieveCapability(engines)).toEqual(capability);
  });
});
