import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { BodyBudget, BodyRefusal, receiveBody } from '../../../src/transport/body.js';

/** `text` sent through a real stream in pieces of `piece` bytes. */
function sent(text: string, piece: number): PassThrough {
  const stream = new PassThrough();
  const bytes = Buffer.from(text);
  setImmediate(() => {
    for (let at = 0; at < bytes.length; at += piece) stream.write(bytes.subarray(at, at + piece));
    stream.end();
  });
  return stream;
}

/** An object of `count` keys: `{"k0":0,"k1":0,...}`, each key weighing 4 values and each comma 1 (§15.5). */
const keys = (count: number) =>
  JSON.stringify(Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${i}`, 0])));

describe('receiveBody (§15.5)', () => {
  const limits = { maxBytes: 1 << 20, maxTokens: 1024 };

  it('counts a body from its first byte once it is long enough to hold too many values', async () => {
    // 210 keys weigh 1,050 (> 1,024). Counting starts past 256 bytes (1,024 / 4), at the 17th piece of 16 bytes; the
    // ~150 the first pieces weigh must be counted too, or the body would pass at ~900.
    const budget = new BodyBudget(1 << 20);
    const refused = await receiveBody(sent(keys(210), 16), undefined, limits, budget).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(BodyRefusal);
    expect((refused as BodyRefusal).reason).toBe('too-many-values');
    expect(budget.held).toBe(0);
  });

  it('keeps a body whose values stay within the cap, in one piece or many', async () => {
    const text = keys(200); // 200 keys weigh 1,000
    for (const piece of [7, 64, text.length]) {
      const budget = new BodyBudget(1 << 20);
      const body = await receiveBody(sent(text, piece), undefined, limits, budget);
      expect(body.toString()).toBe(text);
      expect(budget.held).toBe(0);
    }
  });
});
