import { describe, expect, it } from 'vitest';
import { conformanceLevel, negotiate } from '../../../src/protocol/lifecycle.js';

describe('§7.1 §14 lifecycle rules', () => {
  it('§7.1 negotiates min(client, server) and fails only below the floor', () => {
    expect(negotiate(1)).toBe(1);
    expect(negotiate(9)).toBe(1);
    expect(() => negotiate(0)).toThrow(expect.objectContaining({ code: -32002 }));
    expect(() => negotiate(-3)).toThrow(expect.objectContaining({ code: -32002 }));
  });

  it('§14 claims a level only when the capability set can prove it', () => {
    expect(conformanceLevel({})).toBeUndefined();
    expect(conformanceLevel({ streaming: {}, 'x-test': {} })).toBeUndefined();
    expect(conformanceLevel({ embed: { dimension: 512, identity: 'i' } })).toBe('L0');
    const l1 = { retrieve: { modes: ['dense', 'sparse', 'hybrid'] }, filter: { fields: {} }, citations: {} };
    expect(conformanceLevel({ retrieve: { modes: ['dense'] }, filter: {}, citations: {} })).toBe('L0');
    expect(conformanceLevel(l1)).toBe('L1');
    expect(conformanceLevel({ ...l1, rerank: { methods: [] }, streaming: {}, pagination: {} })).toBe('L2');
  });
});
