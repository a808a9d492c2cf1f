import { deeperThan } from '../protocol/frames.js';
import { RpcError } from '../protocol/errors.js';
import { isTimestamp } from '../protocol/timestamps.js';

import type { FieldType } from './ports.js';

/** Declared metadata field types (configuration `index.fields`). Undeclared fields are stored as given, untyped. */
export type { FieldType };

const CHECKS: Record<FieldType, (value: unknown) => boolean> = {
  keyword: (v) => typeof v === 'string' || (Array.isArray(v) && v.every((x) => typeof x === 'string')),
  text: (v) => typeof v === 'string',
  int: (v) => Number.isSafeInteger(v),
  float: (v) => typeof v === 'number' && Number.isFinite(v),
  bool: (v) => typeof v === 'boolean',
  date: isTimestamp,
};

/** §15.5 bounds on one document's metadata (`index.maxMetadataBytes`, `index.maxMetadataDepth`). */
export interface MetadataLimits {
  /** Bytes of the metadata object as JSON. */
  readonly maxBytes: number;
  /** Levels of objects and arrays, the metadata object itself being the first. */
  readonly maxDepth: number;
}

/** -32602 with `data.field` (`documents.3.meta.year`) for a declared field of the wrong type. */
export function validateMetadata(
  meta: Record<string, unknown>,
  fields: Readonly<Record<string, FieldType>>,
  field: string,
  limits: MetadataLimits,
): void {
  // §15.5: metadata is kept in memory and returned with every hit, so its size and depth are bounded.
  const bytes = Buffer.byteLength(JSON.stringify(meta));
  if (bytes > limits.maxBytes) {
    throw RpcError.invalidParams(field, `metadata of ${bytes} bytes exceeds the ${limits.maxBytes}-byte limit`);
  }
  if (deeperThan(meta, limits.maxDepth)) {
    throw RpcError.invalidParams(field, `metadata nested deeper than ${limits.maxDepth} levels`);
  }
  for (const [name, value] of Object.entries(meta)) {
    // Own keys only: a field named `__proto__` or `constructor` must not reach Object.prototype.
    const type = Object.hasOwn(fields, name) ? fields[name] : undefined;
    if (type === undefined || value === null) continue;
    if (!CHECKS[type](value)) throw RpcError.invalidParams(`${field}.${name}`, `must be a ${type}`);
  }
}
