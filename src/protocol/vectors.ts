import { RpcError } from './errors.js';

/**
 * §7.3.1 compact vector encoding: `f32-base64` is the vector as little-endian IEEE-754 binary32, concatenated and
 * base64-encoded (RFC 4648 §4, padded). Byte order is little-endian whatever the host, so the wire is reproducible.
 */
export function encodeF32Base64(vector: ArrayLike<number>): string {
  const bytes = Buffer.allocUnsafe(vector.length * 4);
  for (let i = 0; i < vector.length; i++) bytes.writeFloatLE(vector[i]!, i * 4);
  return bytes.toString('base64');
}

/** §7.3.1: a blob of any length other than `dimension × 4` bytes is -32602. */
export function decodeF32Base64(blob: string, dimension: number, field: string): Float32Array {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(blob) || blob.length % 4 !== 0) {
    throw RpcError.invalidParams(field, 'is not padded base64 (RFC 4648 §4)');
  }
  const bytes = Buffer.from(blob, 'base64');
  if (bytes.length !== dimension * 4) {
    throw RpcError.invalidParams(field, `decodes to ${bytes.length} bytes; expected ${dimension} × 4`);
  }
  const vector = new Float32Array(dimension);
  for (let i = 0; i < dimension; i++) vector[i] = bytes.readFloatLE(i * 4);
  return vector;
}

/** The inner product; components past the shorter vector count as 0. */
export function dotProduct(a: ArrayLike<number>, b: ArrayLike<number>): number {
  const n = Math.min(a.length, b.length);
  let sum = 0;
  for (let i = 0; i < n; i++) sum += a[i]! * b[i]!;
  return sum;
}

/** Cosine similarity in [-1, 1]; components past the shorter vector count as 0, and a zero vector scores 0. */
export function cosineSimilarity(a: ArrayLike<number>, b: ArrayLike<number>): number {
  const squares = (v: ArrayLike<number>) => {
    let sum = 0;
    for (let i = 0; i < v.length; i++) sum += v[i]! * v[i]!;
    return sum;
  };
  return dotProduct(a, b) / (Math.sqrt(squares(a) * squares(b)) || 1);
}
