import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { defaultConfig, parserLimitsOf } from '../../src/config/index.js';
import { DocumentParser } from '../../src/documents/index.js';
import { BoundedLines, type Line } from '../../src/ingest/lines.js';
import { countSources, readSources, type SourceItem } from '../../src/ingest/sources.js';

/** The pieces `rcp-server ingest` reads with, in process: line splitting over any read boundaries, and line rejects. */
function split(
  chunks: readonly string[],
  maxLineBytes: number,
): { number: number; text?: string; oversized?: number }[] {
  const lines = new BoundedLines(maxLineBytes);
  const out: Line[] = [];
  for (const chunk of chunks) out.push(...lines.push(Buffer.from(chunk)));
  out.push(...lines.end());
  return out.map((line) =>
    'bytes' in line
      ? { number: line.number, text: line.bytes.toString() }
      : { number: line.number, oversized: line.oversized },
  );
}

describe('BoundedLines', () => {
  it.each([
    {
      name: 'one read',
      chunks: ['a\nbb\n'],
      lines: [
        { number: 1, text: 'a' },
        { number: 2, text: 'bb' },
      ],
    },
    {
      name: 'a line across reads',
      chunks: ['a', 'b', 'c\nd'],
      lines: [
        { number: 1, text: 'abc' },
        { number: 2, text: 'd' },
      ],
    },
    {
      name: 'blank lines keep their numbers',
      chunks: ['a\n\n\nb\n'],
      lines: [1, 2, 3, 4].map((n) => ({ number: n, text: ['a', '', '', 'b'][n - 1] })),
    },
    {
      name: 'CRLF is left to the reader',
      chunks: ['a\r\nb'],
      lines: [
        { number: 1, text: 'a\r' },
        { number: 2, text: 'b' },
      ],
    },
    { name: 'a line of exactly the bound', chunks: ['abcd\n'], lines: [{ number: 1, text: 'abcd' }] },
    {
      name: 'a longer line, across reads, is reported once with its length and the next line is whole',
      chunks: ['ok\nabc', 'defgh', 'ij\nnext'],
      lines: [
        { number: 1, text: 'ok' },
        { number: 2, oversized: 10 },
        { number: 3, text: 'next' },
      ],
    },
    { name: 'an oversized last line without a newline', chunks: ['abcdef'], lines: [{ number: 1, oversized: 6 }] },
  ])('$name', ({ chunks, lines }) => {
    expect(split(chunks, 4)).toEqual(lines);
  });

  it('keeps a UTF-8 character split across reads whole', () => {
    const bytes = Buffer.from('é\n');
    const lines = new BoundedLines(8);
    const out = [...lines.push(bytes.subarray(0, 1)), ...lines.push(bytes.subarray(1))];
    expect(out).toEqual([{ number: 1, bytes: Buffer.from('é') }]);
  });
});

describe('readSources: a bad line is rejected as that line, and reading goes on', () => {
  const work = mkdtempSync(join(tmpdir(), 'rcp-ingest-lines-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));
  const limits = { maxDocumentBytes: 16, maxMetadataBytes: 2 };
  // JSON Lines never reach it: no parser process is started.
  const parser = new DocumentParser({ ...parserLimitsOf(defaultConfig()), maxTextBytes: 16 });

  it('lists what is wrong with each line, numbered as in the file', async () => {
    const file = join(work, 'c.jsonl');
    const lines = [
      '{"_id": "a", "text": "first"}',
      '',
      'not json',
      '[1, 2]',
      '{"text": "no id"}',
      '{"_id": "b"}',
      `{"_id": "long", "text": "${'x'.repeat(5000)}"}`,
      '{"_id": "c", "title": "T", "text": "last"}\r',
    ];
    writeFileSync(file, Buffer.concat([Buffer.from(`${lines.join('\n')}\n`), Buffer.from([0xff, 0x0a])]));
    const items: SourceItem[] = [];
    for await (const item of readSources([file], limits, parser)) items.push(item);
    expect(items).toEqual([
      { id: 'a', text: 'first', meta: {}, origin: 'c.jsonl:1' },
      { origin: 'c.jsonl:3', reason: 'not JSON' },
      { origin: 'c.jsonl:4', reason: 'not a JSON object' },
      { origin: 'c.jsonl:5', reason: 'no "_id" or "id"' },
      { origin: 'c.jsonl:6', reason: 'no "text"' },
      {
        origin: 'c.jsonl:7',
        reason: expect.stringMatching(/^a line of 5027 bytes exceeds the 4204-byte limit for one line$/),
      },
      { id: 'c', text: 'T\n\nlast', meta: { title: 'T' }, origin: 'c.jsonl:8' },
      { origin: 'c.jsonl:9', reason: 'not text (invalid UTF-8)' },
    ]);
    expect(await countSources([file], limits)).toBe(items.length);
  });
});
