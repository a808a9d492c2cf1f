import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cosineSimilarity, decodeF32Base64, dotProduct, encodeF32Base64 } from '../../../src/protocol/vectors.js';

describe('§7.3.1 f32-base64 vectors', () => {
  it('§7.3.1 is little-endian binary32, padded base64', () => {
    // 1.0f is 0x3F800000: little-endian bytes 00 00 80 3F.
    expect(encodeF32Base64([1])).toBe(Buffer.from([0x00, 0x00, 0x80, 0x3f]).toString('base64'));
    expect(encodeF32Base64([1, -2])).toBe('AACAPwAAAMA=');
  });

  it('§7.3.1 round-trips any float32 vector exactly', () => {
    fc.assert(
      fc.property(fc.float32Array({ noDefaultInfinity: true, noNaN: true, maxLength: 64 }), (vector) => {
        expect(decodeF32Base64(encodeF32Base64(vector), vector.length, 'v')).toEqual(vector);
      }),
    );
  });

  it('§7.3.1 rejects a blob of the wrong length, or not base64, with -32602 naming the field', () => {
    const blob = encodeF32Base64([1, 2, 3]);
    expect(() => decodeF32Base64(blob, 4, 'vectors.0')).toThrow(
      expect.objectContaining({ code: -32602, data: expect.objectContaining({ field: 'vectors.0' }) }),
    );
    expect(() => decodeF32Base64('not*base64', 1, 'v')).toThrow(expect.objectContaining({ code: -32602 }));
    expect(() => decodeF32Base64('AACAPw', 1, 'v')).toThrow(expect.objectContaining({ code: -32602 }));
  });
});

describe('similarity of two vectors (dense recall, exact search, MMR)', () => {
  it.each([
    { a: [1, 0], b: [1, 0], dot: 1, cosine: 1, why: 'the same direction' },
    { a: [1, 0], b: [-2, 0], dot: -2, cosine: -1, why: 'opposite directions, whatever the lengths' },
    { a: [3, 4], b: [4, -3], dot: 0, cosine: 0, why: 'orthogonal' },
    { a: [2, 0], b: [3, 3], dot: 6, cosine: Math.SQRT1_2, why: '45 degrees apart' },
    { a: [0, 0], b: [1, 1], dot: 0, cosine: 0, why: 'a zero vector scores 0, never NaN' },
    { a: [1, 1, 1], b: [1, 1], dot: 2, cosine: 2 / Math.sqrt(6), why: 'components past the shorter count as 0' },
  ])('$why', ({ a, b, dot, cosine }) => {
    expect(dotProduct(a, b)).toBeCloseTo(dot, 12);
    expect(cosineSimilarity(a, b)).toBeCloseTo(cosine, 12);
    expect(cosineSimilarity(b, a)).toBeCloseTo(cosine, 12);
  });
});
