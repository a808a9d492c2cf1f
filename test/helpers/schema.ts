import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

/** The normative schema, read from ../shared (never copied into the project). */
export const SCHEMA_PATH = fileURLToPath(new URL('../../../shared/rcp/schema/rcp-1.0.json', import.meta.url));
export const schema = JSON.parse(readFileSync(SCHEMA_PATH, 'utf8')) as {
  $id: string;
  $defs: Record<string, { anyOf?: { enum?: number[] }[] }>;
};

const ajv = new Ajv2020({ allErrors: true, strict: false, allowUnionTypes: true });
addFormats.default(ajv);
ajv.addSchema(schema);
const validateRoot = ajv.getSchema(schema.$id)!;
const validateResultFor = ajv.compile({ $ref: `${schema.$id}#/$defs/ResultFor` });

/** Throws unless `frame` (one message or a batch reply) validates against the normative schema (§14.4). */
export function assertValidFrame(frame: unknown, method?: string): void {
  if (!validateRoot(frame)) {
    throw new Error(`frame violates rcp-1.0.json: ${ajv.errorsText(validateRoot.errors)}\n${JSON.stringify(frame)}`);
  }
  const result = (frame as { result?: unknown }).result;
  if (method !== undefined && result !== undefined && !validateResultFor({ method, result })) {
    throw new Error(`result of ${method} violates ResultFor: ${ajv.errorsText(validateResultFor.errors)}`);
  }
}
