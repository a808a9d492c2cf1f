import { Ajv2020, type ErrorObject as AjvError, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { TSchema, Static } from '@sinclair/typebox';
import { RpcError } from './errors.js';
import { nullsAsAbsent } from './null-as-absent.js';

/**
 * One ajv instance for every params schema, compiled once at start-up (docs/architecture.md §7).
 * coerceTypes and removeAdditional stay off: `"k": "5"` is -32602, and unknown members are ignored (§4.6).
 */
const ajv = new Ajv2020({ allErrors: false, strict: true, allowUnionTypes: true, coerceTypes: false });
addFormats.default(ajv);

/** Validates params and returns them as the handler sees them: §4.6 nulls that mean "absent" are gone. */
export type ParamsValidator<T> = (params: unknown) => T;

export function compileParams<S extends TSchema>(schema: S): ParamsValidator<Static<S>> {
  const validate: ValidateFunction = ajv.compile(schema);
  const prune = nullsAsAbsent(schema);
  return (sent: unknown): Static<S> => {
    const params = prune(sent);
    if (validate(params)) return params;
    const first = validate.errors?.[0];
    throw first === undefined ? RpcError.invalidParams('params', 'invalid') : toInvalidParams(first);
  };
}

/** The first ajv error becomes `data.field`, in the spec's dotted form: `/filter/year` -> `filter.year` (§12.1). */
export function fieldOf(error: AjvError): string {
  const segments = error.instancePath.split('/').slice(1).map(unescapePointer);
  const missing =
    error.keyword === 'required' ? (error.params as { missingProperty?: string }).missingProperty : undefined;
  if (missing !== undefined) segments.push(missing);
  return segments.length === 0 ? 'params' : segments.join('.');
}

function toInvalidParams(error: AjvError): RpcError {
  const field = fieldOf(error);
  const message = error.keyword === 'required' ? 'is required' : (error.message ?? 'is invalid');
  return RpcError.invalidParams(field, message);
}

function unescapePointer(segment: string): string {
  return segment.replace(/~1/g, '/').replace(/~0/g, '~');
}

/** -32602 naming `field` unless `text` is well-formed UTF-16 (no lone surrogate), so it round-trips exactly. */
export function requireWellFormed(text: string, field: string): void {
  // In `u` mode a paired surrogate is one code point: only a lone one matches.
  if (/\p{Surrogate}/u.test(text)) {
    throw RpcError.invalidParams(field, 'has a lone surrogate (ill-formed UTF-16): it could not be kept exactly');
  }
}
