import { describe, expect, it } from 'vitest';
import { serialize, serializedOnce, serializeReply } from '../../../src/protocol/frames.js';

/** §15.5 the answer cap: sizes are measured once and reported exactly; oversized members become -32013. */
describe('serializeReply', () => {
  const ok = (id: number, text: string) => ({ jsonrpc: '2.0', id, result: { text } });

  it.each([
    { name: 'one answer', reply: ok(1, 'héllo ✓') },
    { name: 'a batch', reply: [ok(1, 'a'), ok(2, 'ünïcode ✓✓'), ok(3, 'c')] },
  ])('reports the exact UTF-8 size of $name', ({ reply }) => {
    const { text, bytes } = serializeReply(reply, 4096);
    expect(bytes).toBe(Buffer.byteLength(text));
    expect(JSON.parse(text)).toEqual(reply);
  });

  it('replaces the largest members of a batch over the cap with -32013, the rest kept, within the cap', () => {
    const reply = [ok(1, 'x'.repeat(3000)), ok(2, 'small'), ok(3, 'y'.repeat(2000))];
    const { text, bytes } = serializeReply(reply, 4096);
    expect(bytes).toBe(Buffer.byteLength(text));
    expect(bytes).toBeLessThanOrEqual(4096);
    const members = JSON.parse(text) as { id: number; error?: { code: number } }[];
    expect(members.map((m) => m.error?.code)).toEqual([-32013, undefined, undefined]);
  });
});

describe('serializedOnce', () => {
  it('a result answered unchanged is written as plain JSON would write it, under each id, and can no longer change', () => {
    const result = serializedOnce({ protocolVersion: 1, server: { name: 'rcp-server ✓' }, capabilities: { ping: {} } });
    const reply = [1, 'two', 3].map((id) => ({ jsonrpc: '2.0', id, result }));
    const { text, bytes } = serializeReply(reply, 1 << 20);
    expect(text).toBe(JSON.stringify(reply));
    expect(bytes).toBe(Buffer.byteLength(text));
    expect(Object.isFrozen(result)).toBe(true);
    // Within the cap like any other answer: over it, -32013.
    expect((JSON.parse(serializeReply(reply[0], 40).text) as { error: { code: number } }).error.code).toBe(-32013);
  });
});

/** §4.6: NaN and Infinity are not JSON; a frame that holds one is sent with a finite sentinel in its place. */
describe('serialize', () => {
  const sentinels = {
    frame: { score: Infinity, low: -Infinity, nan: NaN, vector: [0.5, NaN, -Infinity], kept: 0.25, absent: null },
    sent: { score: Number.MAX_VALUE, low: -Number.MAX_VALUE, nan: 0, vector: [0.5, 0, -Number.MAX_VALUE], kept: 0.25 },
  };

  it('§4.6 substitutes ±Number.MAX_VALUE for ±Infinity and 0 for NaN, at any depth', () => {
    const text = serialize({ jsonrpc: '2.0', id: 1, result: sentinels.frame });
    expect(JSON.parse(text)).toEqual({ jsonrpc: '2.0', id: 1, result: { ...sentinels.sent, absent: null } });
  });

  it('§4.6 an answer serialized under the cap gets the same sentinels', () => {
    const { text } = serializeReply([{ jsonrpc: '2.0', id: 1, result: sentinels.frame }], 4096);
    expect(JSON.parse(text)).toEqual([{ jsonrpc: '2.0', id: 1, result: { ...sentinels.sent, absent: null } }]);
  });

  it('leaves a frame of finite numbers exactly as JSON.stringify writes it', () => {
    const frame = { jsonrpc: '2.0', id: 1, result: { vectors: [[0.1, -2e-308, 1.5e308]], nothing: null } };
    expect(serialize(frame)).toBe(JSON.stringify(frame));
  });
});
