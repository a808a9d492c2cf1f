import { describe, expect, it } from 'vitest';
import { serializeReply } from '../../src/protocol/frames.js';

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
