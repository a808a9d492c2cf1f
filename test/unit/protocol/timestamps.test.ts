import { describe, expect, it } from 'vitest';
import { validateMetadata } from '../../../src/corpus/metadata.js';
import { isTimestamp } from '../../../src/protocol/timestamps.js';
import { compileFilter, OPERATORS } from '../../../src/retrieval/filter.js';

const FIELDS = { published: 'date' } as const;
const LIMITS = { maxDepth: 8, maxNodes: 64 };
const METADATA_LIMITS = { maxBytes: 65_536, maxDepth: 8 };

const written = (value: unknown) => () =>
  validateMetadata({ published: value }, FIELDS, 'documents.0.meta', METADATA_LIMITS);
const filtered = (value: unknown) => () =>
  compileFilter({ field: 'published', op: 'gte', value }, FIELDS, OPERATORS, LIMITS);

describe('§4.6 timestamps in date fields (§8): one rule for what a write stores and a filter compares', () => {
  it.each([
    { value: '2017-06-12', why: 'an ISO 8601 date' },
    { value: '2017-06-12T00:00:00Z', why: 'an RFC 3339 date-time' },
    { value: '2017-06-12T08:30:00.250+02:00', why: 'a date-time with fraction and offset' },
    { value: 1_497_225_600_000, why: 'integer milliseconds since the Unix epoch' },
    { value: -86_400_000, why: 'epoch milliseconds before 1970' },
  ])('§4.6 accepts $why, on write and in a filter', ({ value }) => {
    expect(isTimestamp(value)).toBe(true);
    expect(written(value)).not.toThrow();
    expect(filtered(value)).not.toThrow();
  });

  it.each([
    { value: 'June 12, 2017', why: 'a date in words (Date.parse reads it, §4.6 does not name it)' },
    { value: '2017', why: 'a bare year' },
    { value: '2017-13-45', why: 'an impossible date' },
    { value: 1.5, why: 'fractional milliseconds (§4.6: an integer count)' },
    { value: Number.MAX_VALUE, why: 'a number beyond the safe integers' },
    { value: true, why: 'a boolean' },
  ])('§4.6 rejects $why with -32602, on write and in a filter', ({ value }) => {
    expect(isTimestamp(value)).toBe(false);
    expect(written(value)).toThrow(
      expect.objectContaining({ code: -32602, data: expect.objectContaining({ field: 'documents.0.meta.published' }) }),
    );
    expect(filtered(value)).toThrow(
      expect.objectContaining({ code: -32602, data: expect.objectContaining({ field: 'filter.published' }) }),
    );
  });

  it('§4.6 compares both encodings as instants: a stored epoch-ms date matches an ISO filter value, and back', () => {
    const instant = Date.parse('2024-06-01T00:00:00Z');
    const sinceIso = compileFilter({ field: 'published', op: 'gte', value: '2024-06-01' }, FIELDS, OPERATORS, LIMITS);
    const sinceEpoch = compileFilter({ field: 'published', op: 'gte', value: instant }, FIELDS, OPERATORS, LIMITS);
    expect(sinceIso({ published: instant })).toBe(true);
    expect(sinceIso({ published: instant - 1 })).toBe(false);
    expect(sinceEpoch({ published: '2024-06-01T00:00:00Z' })).toBe(true);
    expect(sinceEpoch({ published: '2024-05-31T23:59:59Z' })).toBe(false);
  });
});
