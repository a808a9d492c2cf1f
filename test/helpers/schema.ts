import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { threadId } from 'node:worker_threads';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { EmittedFrame } from '../../src/protocol/schemas/envelope.js';
import { resultSchemaFor } from '../../src/protocol/schemas/results.js';

/**
 * Every frame the server emits is checked against the project's own schemas (src/protocol/schemas), written from the
 * spec; `npm run test:conformance` proves they accept what the normative rcp-1.0.json accepts, and checks the frames
 * this suite saw against that schema too when RCP_RECORD_FRAMES names a folder to record them in.
 */
// Strict, less strictRequired: `required` inside if/then/anyOf names members the enclosing object declares.
const ajv = new Ajv2020({ allErrors: true, strict: true, strictRequired: false, allowUnionTypes: true });
addFormats.default(ajv);
const validateFrame = ajv.compile(EmittedFrame);
const byMethod = new Map<string, ValidateFunction | undefined>();

function resultValidator(method: string): ValidateFunction | undefined {
  if (!byMethod.has(method)) {
    const schema = resultSchemaFor(method);
    byMethod.set(method, schema === undefined ? undefined : ajv.compile(schema));
  }
  return byMethod.get(method);
}

/**
 * Why `frame` (one message or a batch reply) is not a frame this server may emit — for `method`, the method of the
 * request it answers, when known — or undefined when it is one.
 */
export function frameViolation(frame: unknown, method?: string): string | undefined {
  if (!validateFrame(frame)) return `frame: ${ajv.errorsText(validateFrame.errors)}`;
  const result = (frame as { result?: unknown }).result;
  if (method === undefined || result === undefined) return undefined;
  const validate = resultValidator(method);
  if (validate === undefined) return `result: '${method}' is not an RCP method (§7) nor an x-<vendor>/ one (§6.2)`;
  return validate(result) ? undefined : `result of ${method}: ${ajv.errorsText(validate.errors)}`;
}

/** Further checks every emitted frame goes through: the conformance suite adds the normative schema's. */
type FrameCheck = (frame: unknown, method: string | undefined) => void;
const checks: FrameCheck[] = [];

export function alsoCheckFrames(check: FrameCheck): void {
  checks.push(check);
}

/** RCP_RECORD_FRAMES=DIR records every frame, one NDJSON file per test worker, for the conformance suite to read. */
const LOG = process.env.RCP_RECORD_FRAMES;
if (LOG !== undefined) {
  mkdirSync(LOG, { recursive: true });
  const file = join(LOG, `frames-${process.pid}-${threadId}.ndjson`);
  alsoCheckFrames((frame, method) => appendFileSync(file, `${JSON.stringify({ method, frame })}\n`));
}

/** Throws unless `frame` is a frame this server may emit (§4, §7, §9, §11, §17.1). */
export function assertValidFrame(frame: unknown, method?: string): void {
  const violation = frameViolation(frame, method);
  if (violation !== undefined) throw new Error(`${violation}\n${JSON.stringify(frame)}`);
  for (const check of checks) check(frame, method);
}
