import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LineSplitter, type LineEvent } from '../../../src/protocol/ndjson.js';

const collect = (splitter: LineSplitter, chunks: Buffer[]): LineEvent[] => [
  ...chunks.flatMap((chunk) => [...splitter.push(chunk)]),
  ...splitter.end(),
];

describe('§5.1 NDJSON line splitting', () => {
  it('§5.1 splits coalesced lines, skips blank lines, strips CR and a BOM', () => {
    const events = collect(new LineSplitter(1024), [
      Buffer.from('\uFEFF{"a":1}\r\n\n  \n{"b":2}\n{"c"'),
      Buffer.from(':3}'),
    ]);
    expect(events).toEqual([
      { kind: 'line', text: '{"a":1}' },
      { kind: 'line', text: '{"b":2}' },
      { kind: 'line', text: '{"c":3}' },
    ]);
  });

  it('§5.1 any split of the byte stream yields the same lines (multi-byte UTF-8 included)', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc
            .string({ unit: 'grapheme', minLength: 1 })
            .filter((s) => !/[\n\r]/.test(s) && s.trim() !== '' && !s.startsWith('\uFEFF')),
          { maxLength: 8 },
        ),
        fc.array(fc.nat(), { maxLength: 10 }),
        (lines, cuts) => {
          const bytes = Buffer.from(lines.map((l) => `${l}\n`).join(''), 'utf8');
          const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
          const chunks = [0, ...points, bytes.length]
            .slice(1)
            .map((end, i, all) => bytes.subarray(i === 0 ? 0 : all[i - 1], end));
          const texts = collect(new LineSplitter(1 << 20), chunks).map((e) => (e.kind === 'line' ? e.text : '?'));
          expect(texts).toEqual(lines.map((l) => l.replace(/\r$/, '')));
        },
      ),
    );
  });

  it('§15.5 an oversized line is reported once and skipped up to its newline; memory stays bounded', () => {
    const splitter = new LineSplitter(10);
    const events = collect(splitter, [
      Buffer.from('x'.repeat(8)),
      Buffer.from('y'.repeat(8)),
      Buffer.from('zzz\n{"ok":1}\n'),
    ]);
    expect(events).toEqual([
      { kind: 'oversized', bytes: 16 },
      { kind: 'line', text: '{"ok":1}' },
    ]);
  });

  it('§15.5 a frame with more JSON values than allowed is reported once and discarded unparsed; the next is whole', () => {
    const splitter = new LineSplitter(1 << 20, 10);
    const many = `{"a":[${Array.from({ length: 20 }, (_, i) => i).join(',')}]}`;
    // Split mid-frame, and with structural characters inside strings that must not count.
    const events = [
      ...splitter.push(Buffer.from(many.slice(0, 9))),
      ...splitter.push(Buffer.from(`${many.slice(9)}\n{"s":"a,b:c{[","t":1}\n`)),
    ];
    expect(events).toEqual([
      { kind: 'too-many-values', tokens: 25 }, // { and [, a key (4) and 19 commas: counted to the end of the piece
      { kind: 'line', text: '{"s":"a,b:c{[","t":1}' },
    ]);
  });
});
