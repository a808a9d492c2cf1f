import { RpcError } from './errors.js';

/**
 * §7.3.1 compact vector encoding: `f32-base64` is the vector as little-endian IEEE-754 binary32, concatenated and
 * base64-encoded (RFC 4648 §4, padded). Byte order is little-endian whatever the host, so the wire is reproducible.
 */
export type VectorEncoding = 'json' | 'f32-base64';

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
