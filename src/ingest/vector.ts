/**
 * A JSON line's `vector` (docs/corpus.md, "Vectors embedded elsewhere"): a JSON array of numbers, or the §7.3.1
 * `f32-base64` form (little-endian IEEE-754 binary32, concatenated, base64 per RFC 4648 §4). Either way it must hold
 * the encoder's dimension of finite numbers, not all zero; anything else is a one-line reason the line is rejected.
 */
export function parseVector(value: unknown, dimension: number | undefined): Float32Array | { reason: string } {
  const vector =
    typeof value === 'string' ? fromBase64(value) : Array.isArray(value) ? fromNumbers(value) : notAVector();
  if (!(vector instanceof Float32Array)) return vector;
  if (dimension !== undefined && vector.length !== dimension) {
    return { reason: `"vector" has ${vector.length} numbers; the encoder's dimension is ${dimension}` };
  }
  const bad = vector.findIndex((x) => !Number.isFinite(x));
  if (bad !== -1) return { reason: `"vector"[${bad}] is ${vector[bad]}, not a finite float32` };
  if (vector.every((x) => x === 0)) return { reason: '"vector" is all zeros: it has no direction' };
  return vector;
}

function notAVector(): { reason: string } {
  return { reason: '"vector" must be an array of numbers or base64 of little-endian float32 (f32-base64)' };
}

function fromNumbers(values: readonly unknown[]): Float32Array | { reason: string } {
  const vector = new Float32Array(values.length);
  for (const [i, x] of values.entries()) {
    if (typeof x !== 'number') return { reason: `"vector"[${i}] is not a number` };
    // A number beyond float32's range becomes ±Infinity here, and is refused as not finite.
    vector[i] = x;
  }
  return vector;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function fromBase64(text: string): Float32Array | { reason: string } {
  if (!BASE64.test(text) || text.length % 4 !== 0) {
    return { reason: '"vector" is a string but not padded base64 (RFC 4648 §4)' };
  }
  const bytes = Buffer.from(text, 'base64');
  if (bytes.length % 4 !== 0) {
    return { reason: `"vector" decodes to ${bytes.length} bytes, not a whole number of float32s (4 bytes each)` };
  }
  const vector = new Float32Array(bytes.length / 4);
  for (let i = 0; i < vector.length; i++) vector[i] = bytes.readFloatLE(i * 4);
  return vector;
}
