import type { TSchema } from '@sinclair/typebox';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ErrorResponse,
  LogNotification,
  ProgressNotification,
  SuccessResponse,
} from '../../src/protocol/schemas/envelope.js';
import { RESULTS, resultSchemaFor } from '../../src/protocol/schemas/results.js';
import { ACCEPTED, REJECTED } from '../fixtures/frame-cases.js';
import { frameViolation } from '../helpers/schema.js';
import { arbitraryOf, mutate, mutation } from './arbitrary.js';
import { normative, normativeViolation, ref } from './normative.js';

/**
 * The project's schemas (src/protocol/schemas, written from the spec's text) and the normative rcp-1.0.json accept
 * exactly the same frames, on a generated sample of every kind a server emits: a response to each method of §7 (and
 * to a vendor method, §6.2), an error, progress (§9) and log (§17.1) notifications, and batch replies (§11). Each
 * frame is drawn from either schema, then changed at random places: members deleted, replaced by values of every
 * JSON type and by words of the spec's vocabularies, or added (unknown ones, `_meta`, envelope members).
 *
 * What tells the kinds apart is kept: a notification keeps its method (the server emits only these two; any other
 * `notifications/*` name is a frame the normative schema admits for a client and this server never sends), and a
 * response never gains a `method` (that would make it a request, which a server does not send).
 */
type Schema = Record<string, unknown>;
const VENDOR_METHOD = 'x-acme/search';
const OURS = {} as Schema;
const UPSTREAM = normative as unknown as Schema;

/** The normative schema's result definition for each method, read from its ResultFor binding. */
function normativeResult(method: string): Schema {
  const binding = (normative.$defs.ResultFor!.allOf as Schema[]).find(
    (clause) => ((clause.if as Schema).properties as Record<string, Schema>).method!.const === method,
  );
  return binding === undefined
    ? { type: 'object' }
    : (((binding.then as Schema).properties as Record<string, Schema>).result as Schema);
}

const success = (result: Schema): Schema => ({
  type: 'object',
  required: ['jsonrpc', 'id', 'result'],
  properties: { jsonrpc: { const: '2.0' }, id: ref('RequestId'), result },
});

interface Kind {
  readonly name: string;
  /** The method the frame answers, for its result's shape. */
  readonly method?: string;
  readonly frames: fc.Arbitrary<unknown>;
}

/** Frames of one kind, drawn from our schema or from the normative one. */
const either = (ours: TSchema, theirs: Schema) =>
  fc.oneof(arbitraryOf(ours as unknown as Schema, OURS), arbitraryOf(theirs, UPSTREAM));

const METHODS = [...Object.keys(RESULTS), VENDOR_METHOD];
const KINDS: Kind[] = [
  ...METHODS.map((method) => ({
    name: `result of ${method}`,
    method,
    frames: either(SuccessResponse(resultSchemaFor(method)!), success(normativeResult(method))),
  })),
  { name: 'error', frames: either(ErrorResponse, normative.$defs.JsonRpcError!) },
  { name: 'notifications/progress', frames: either(ProgressNotification, normative.$defs.ProgressNotification!) },
  { name: 'notifications/log', frames: either(LogNotification, normative.$defs.LogNotification!) },
];
const MEMBERS = fc.oneof(...KINDS.map((kind) => kind.frames));
KINDS.push({ name: 'batch reply', frames: fc.array(MEMBERS, { minLength: 0, maxLength: 3 }) });

/** The members that tell a frame's kind: a notification's method; in a batch, each member's. */
const fixed = (path: (string | number)[]) => path.at(-1) === 'method';

const changed = (kind: Kind) =>
  fc
    .tuple(kind.frames, fc.array(mutation, { maxLength: 2 }))
    .map(([frame, changes]) => changes.reduce((value, change) => mutate(value, change, fixed), frame));

/** Each side's verdict: accepted, or why not. */
function verdicts(frame: unknown, method: string | undefined) {
  return { ours: frameViolation(frame, method), normative: normativeViolation(frame, method) };
}

describe('the project schemas accept exactly what rcp-1.0.json accepts', () => {
  it.each(KINDS.map((kind) => [kind.name, kind] as const))('%s', (_name, kind) => {
    fc.assert(
      fc.property(changed(kind), (frame) => {
        const { ours, normative: theirs } = verdicts(frame, kind.method);
        expect({ oursAccepts: ours === undefined, ours, normativeAccepts: theirs === undefined, theirs }).toMatchObject(
          { oursAccepts: theirs === undefined },
        );
      }),
      { numRuns: 1000 },
    );
  });

  it('the sample holds frames both accept and frames both reject, of every kind', () => {
    for (const kind of KINDS) {
      const sample = fc.sample(changed(kind), { numRuns: 300, seed: 42 });
      const accepted = sample.filter((frame) => normativeViolation(frame, kind.method) === undefined).length;
      expect.soft(accepted, `${kind.name}: accepted`).toBeGreaterThan(0);
      expect.soft(sample.length - accepted, `${kind.name}: rejected`).toBeGreaterThan(0);
    }
  });

  it.each(ACCEPTED)('rcp-1.0.json admits too: %s', (_name, frame, method) => {
    expect(normativeViolation(frame, method)).toBeUndefined();
  });

  it.each(REJECTED)('rcp-1.0.json refuses too: %s', (_name, frame, method) => {
    expect(normativeViolation(frame, method)).toBeDefined();
  });
});
