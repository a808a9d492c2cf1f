import { describe, expect, it } from 'vitest';
import { accessFor, capabilityFor, METHODS, rateClassOf } from '../../../src/protocol/method-table.js';

describe('the method table: one declaration per method, read by every layer', () => {
  it('§7.1, §7.2, §7.12, §7.15 the lifecycle is always served, open to any key and never rate-limited', () => {
    for (const method of ['initialize', 'info', 'ping', 'shutdown', 'notifications/cancel']) {
      expect([capabilityFor(method), accessFor(method), rateClassOf(method)]).toEqual([
        undefined,
        'lifecycle',
        undefined,
      ]);
    }
  });

  it('§15.3 writes are what changes the server for everyone; §15.5 each method draws from its bucket', () => {
    const table = Object.keys(METHODS).map((method) => [method, accessFor(method), rateClassOf(method) ?? '-']);
    expect(table).toEqual([
      ['initialize', 'lifecycle', '-'],
      ['info', 'lifecycle', '-'],
      ['ping', 'lifecycle', '-'],
      ['shutdown', 'lifecycle', '-'],
      ['embed', 'read', 'models'],
      ['embed/sparse', 'read', 'models'],
      ['embed/multi', 'read', 'models'],
      ['rerank', 'read', 'models'],
      ['retrieve', 'read', 'reads'],
      ['query/transform', 'read', 'reads'],
      ['graph', 'read', 'reads'],
      ['index/add', 'write', 'writes'],
      ['index/delete', 'write', 'writes'],
      ['catalog/list', 'read', 'reads'],
      ['feedback', 'read', 'reads'],
      ['memory/build', 'write', 'reads'],
      ['memory/recall', 'read', 'reads'],
    ]);
  });

  it('§6.2 a vendor method is gated by its vendor key and is a read; an unknown name has no capability', () => {
    expect([capabilityFor('x-acme/boost'), accessFor('x-acme/boost'), rateClassOf('x-acme/boost')]).toEqual([
      'x-acme',
      'read',
      'reads',
    ]);
    expect(capabilityFor('no/such')).toBeUndefined();
    expect(capabilityFor('index/add')).toBe('index');
  });
});
