import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RpcError } from '../../src/protocol/errors.js';
import { compileFilter, OPERATORS } from '../../src/retrieval/filter.js';
import { defaultConfig } from '../../src/config/index.js';

/** The server's own filter bounds (§15.5). */
const { maxFilterDepth, maxFilterNodes } = defaultConfig().limits;
const LIMITS = { maxDepth: maxFilterDepth, maxNodes: maxFilterNodes };

/** §8: whatever filter tree arrives, it compiles or fails with -32602/-32005, and a compiled one never throws. */
const FIELDS = { lang: 'keyword', year: 'int', score: 'float', ok: 'bool', when: 'date', body: 'text' } as const;
const field = fc.oneof(fc.constantFrom(...Object.keys(FIELDS)), fc.string({ maxLength: 5 }));
const op = fc.oneof(fc.constantFrom(...OPERATORS), fc.string({ maxLength: 6 }), fc.jsonValue());
const value = fc.oneof(
  fc.jsonValue(),
  fc.array(fc.oneof(fc.string(), fc.integer())),
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
);
const { tree } = fc.letrec<{ tree: unknown }>((tie) => ({
  tree: fc.oneof(
    { depthSize: 'small' },
    fc.record({ field, op, value }, { requiredKeys: [] }),
    fc.record({ and: fc.array(tie('tree'), { maxLength: 3 }) }),
    fc.record({ or: fc.array(tie('tree'), { maxLength: 3 }) }),
    fc.record({ not: tie('tree') }),
    fc.jsonValue(),
  ),
}));
const meta = fc.dictionary(
  fc.constantFrom(...Object.keys(FIELDS), 'other'),
  fc.oneof(fc.jsonValue(), fc.array(fc.string())),
);

describe('filter compiler (fuzzed)', () => {
  it('compiles or answers -32602/-32005; compiled predicates never throw', () => {
    fc.assert(
      fc.property(tree, fc.array(meta, { maxLength: 5 }), (node, metas) => {
        let predicate;
        try {
          predicate = compileFilter(node, FIELDS, OPERATORS, LIMITS);
        } catch (error) {
          expect(error).toBeInstanceOf(RpcError);
          expect([-32602, -32005]).toContain((error as RpcError).code);
          return;
        }
        for (const m of metas) expect(typeof predicate(m)).toBe('boolean');
      }),
      { numRuns: 2000 },
    );
  });

  it('field names that are Object.prototype keys are just unknown fields (-32602), never a crash', () => {
    for (const field of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
      expect(() => compileFilter({ field, op: 'eq', value: 'x' }, FIELDS, OPERATORS, LIMITS)).toThrow(
        expect.objectContaining({ code: -32602 }),
      );
    }
  });

  it('not(p) is the complement of p on any metadata', () => {
    const p = compileFilter({ field: 'year', op: 'gte', value: 2020 }, FIELDS, OPERATORS, LIMITS);
    const notP = compileFilter({ not: { field: 'year', op: 'gte', value: 2020 } }, FIELDS, OPERATORS, LIMITS);
    fc.assert(
      fc.property(meta, (m) => {
        expect(notP(m)).toBe(!p(m));
      }),
      { numRuns: 500 },
    );
  });
});
