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

describe('receiveBody: a body of many reads (§15.5)', () => {
  const limits = { maxBytes: 8 << 20, maxTokens: 1 << 22 };

  it('is kept whole and exact whatever its pieces, with or without a declared length, and gives back its charge', async () => {
    const text = JSON.stringify({ texts: Array.from({ length: 3000 }, (_, i) => `text ${i} `.repeat(40)) });
    for (const [piece, declared] of [
      [65_536, text.length],
      [1_000, undefined],
      [text.length, text.length],
    ] as const) {
      const budget = new BodyBudget(64 << 20);
      const body = await receiveBody(sent(text, piece), declared, limits, budget);
      expect(body.equals(Buffer.from(text))).toBe(true);
      expect(budget.held).toBe(0);
    }
  });

  it('charges the shared budget for what it received, never for what it only declared', async () => {
    const stream = new PassThrough();
    const budget = new BodyBudget(64 << 20);
    const receiving = receiveBody(stream, 8 << 20, limits, budget);
    stream.write(Buffer.alloc(1000, 0x20));
    stream.write(Buffer.alloc(1000, 0x20));
    await new Promise((resolve) => setImmediate(resolve));
    expect(budget.held).toBe(2000);
    stream.end(Buffer.from('{}'));
    await receiving.catch(() => undefined);
    expect(budget.held).toBe(0);
  });

  it('is refused busy when the budget cannot hold its growth, and gives back what it held', async () => {
    const budget = new BodyBudget(1 << 20);
    const text = ' '.repeat(3 << 20);
    const refused = await receiveBody(sent(text, 65_536), text.length, limits, budget).catch((e: unknown) => e);
    expect((refused as BodyRefusal).reason).toBe('busy');
    expect(budget.held).toBe(0);
  });
});
