import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { outsidePath, SCHEMA } from './outside.js';

/**
 * The normative schema (rcp-1.0.json, from outside the repository: RCP_SCHEMA, set by the suite's global setup), and
 * the check the spec's harnesses make with it: the frame against the root (a message or a batch), and a result
 * against `ResultFor` once the method it answers is known (§14.4).
 */
export const SCHEMA_PATH = outsidePath(SCHEMA);

export interface NormativeSchema {
  $id: string;
  $defs: Record<string, Record<string, unknown>>;
}
export const normative = JSON.parse(readFileSync(SCHEMA_PATH, 'utf8')) as NormativeSchema;

export const ajv = new Ajv2020({ allErrors: true, strict: false, allowUnionTypes: true });
addFormats.default(ajv);
ajv.addSchema(normative);
const validateRoot = ajv.getSchema(normative.$id)!;
const validateResultFor = ajv.compile({ $ref: `${normative.$id}#/$defs/ResultFor` });

/** A `$ref` to one of the normative schema's definitions. */
export const ref = (name: string) => ({ $ref: `${normative.$id}#/$defs/${name}` });

/** Why `frame` violates the normative schema (for `method`, when known), or undefined when it does not. */
export function normativeViolation(frame: unknown, method?: string): string | undefined {
  if (!validateRoot(frame)) return `rcp-1.0.json: ${ajv.errorsText(validateRoot.errors)}`;
  const result = (frame as { result?: unknown }).result;
  if (method === undefined || result === undefined || validateResultFor({ method, result })) return undefined;
  return `ResultFor ${method}: ${ajv.errorsText(validateResultFor.errors)}`;
}
