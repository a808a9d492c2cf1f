import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { MethodRegistry } from '../../../src/protocol/registry.js';
import { compileParams, fieldOf } from '../../../src/protocol/validation.js';

describe('method registry', () => {
  it('advertises a capability exactly when a method for it is registered', () => {
    const registry = new MethodRegistry();
    expect(registry.capabilities()).toEqual({});
    registry.register(
      { method: 'embed', params: Type.Object({}), handler: () => ({ vectors: [] }) },
      { dimension: 4, identity: 'x' },
    );
    expect(registry.capabilities()).toEqual({ embed: { dimension: 4, identity: 'x' } });
    // A caller cannot mutate the advertised set through the copy it got.
    (registry.capabilities().embed as Record<string, unknown>).dimension = 9;
    expect(registry.capabilities()).toEqual({ embed: { dimension: 4, identity: 'x' } });
  });

  it('refuses the always-served methods, unknown names, duplicates, and features that gate methods', () => {
    const registry = new MethodRegistry();
    const def = (method: string) => ({ method, params: Type.Object({}), handler: () => ({}) });
    expect(() => registry.register(def('ping'), {})).toThrow();
    expect(() => registry.register(def('frobnicate'), {})).toThrow();
    registry.register(def('x-acme/thing'), {});
    expect(() => registry.register(def('x-acme/thing'), {})).toThrow(/twice/);
    expect(() => registry.advertise('retrieve', {})).toThrow();
    expect(registry.advertise('streaming', {}).capabilities()).toHaveProperty('streaming');
  });
});

describe('§12.1 params validation', () => {
  const validate = compileParams(
    Type.Object({
      k: Type.Integer({ minimum: 1 }),
      filter: Type.Optional(Type.Object({ year: Type.Integer() })),
      'a/b': Type.Optional(Type.String()),
    }),
  );
  it.each([
    [{}, 'k'],
    [{ k: '5' }, 'k'],
    [{ k: 0 }, 'k'],
    [{ k: 1, filter: { year: 'x' } }, 'filter.year'],
    [{ k: 1, 'a/b': 3 }, 'a/b'],
    [5, 'params'],
  ])('reports the first offending field of %j as %s', (params, field) => {
    expect(() => validate(params)).toThrow(
      expect.objectContaining({ code: -32602, data: expect.objectContaining({ field }) }),
    );
  });
  it('passes valid params through untouched (no coercion, unknown members kept)', () => {
    expect(validate({ k: 3, extra: true })).toEqual({ k: 3, extra: true });
  });
  it('fieldOf joins JSON pointers with dots', () => {
    expect(fieldOf({ instancePath: '/rerank/topN', keyword: 'type', params: {}, schemaPath: '' })).toBe('rerank.topN');
  });
});
