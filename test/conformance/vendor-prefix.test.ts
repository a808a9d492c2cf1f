import { describe, expect, it } from 'vitest';
import { unprefixedFields } from './vendor-prefix.js';

/** §6.2 the check itself: it names an unprefixed field outside the spec, and lets vendor and spec names by. */
describe('§6.2 the vendor-prefix check', () => {
  const answer = (result: object) => ({ jsonrpc: '2.0', id: 1, result });
  const hit = { id: 'a#0', score: 1, citation: { source: 'a' } };

  it('names a field outside the spec that lacks the prefix, wherever it is', () => {
    expect(unprefixedFields(answer({ hits: [{ ...hit, quote: 'q' }] }), 'retrieve')).toEqual([
      'retrieve:/result/hits/0/quote',
    ]);
    expect(unprefixedFields(answer({ scores: [1], extra: 1 }), 'rerank')).toEqual(['rerank:/result/extra']);
    const error = { jsonrpc: '2.0', id: 1, error: { code: -32602, message: 'm', data: { where: 'x' } } };
    expect(unprefixedFields(error, 'retrieve')).toEqual(['retrieve:/error/data/where']);
  });

  it('lets x- names, _meta, open objects, the spec prose names and the deprecated ones by', () => {
    const citation = { source: 'a', 'x-rcp-server-quote': { text: 't', start: 0, end: 1 } };
    const vendor = { ...hit, citation, meta: { anything: 1 }, scores: { dense: 1 } };
    expect(unprefixedFields(answer({ hits: [vendor], _meta: { x: 1 } }), 'retrieve')).toEqual([]);
    expect(unprefixedFields(answer({ scores: [1], usage: {}, results: [] }), 'rerank')).toEqual([]);
  });
});
