import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeF32Base64, encodeF32Base64 } from '../../src/protocol/vectors.js';

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
