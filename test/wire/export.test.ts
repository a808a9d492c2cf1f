import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCommand, seededRandom } from '../helpers/children.js';
import { HAS_POSTGRES, PostgresCluster } from '../helpers/postgres.js';
import { startHttpProcess } from '../helpers/processes.js';

/**
 * `rcp-server export` and `rcp-server ingest` of what it wrote (docs/corpus.md, "Export and import"), as real
 * processes: a chunked corpus moves to another data dir, and to a PostgreSQL store, with its chunks, offsets, contexts
 * and vectors as they were (the encoder not asked), and answers every retrieve as the original does; a file made with
 * another encoder is refused unless its texts are embedded again; a file cut short says so.
 */
const WORK = mkdtempSync(join(tmpdir(), 'rcp-export-'));
afterAll(() => rmSync(WORK, { recursive: true, force: true }));

const WORDS = ['cell', 'protein', 'membrane', 'signal', 'kinase', 'tumour', 'gene', 'enzyme', 'neuron', 'virus'];

/** Markdown files long enough to be chunked, with headings (the contextual option prefixes them). */
function writeNotes(dir: string, n: number): void {
  const next = seededRandom(7);
  const sentence = () => Array.from({ length: 14 }, () => WORDS[Math.floor(next() * WORDS.length)]).join(' ') + '.';
  mkdirSync(dir, { recursive: true });
  for (let i = 0; i < n; i++) {
    const sections = [1, 2, 3].map((s) => `## Part ${s}\n\n${Array.from({ length: 12 }, sentence).join(' ')}`);
    writeFileSync(join(dir, `note-${i}.md`), `# Note ${i}\n\n${sections.join('\n\n')}\n`);
  }
}

type Hit = { id: string; score: number; text?: string; citation?: unknown; meta?: unknown };

async function retrieveAll(data: string, env: NodeJS.ProcessEnv = {}) {
  const server = await startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', data], env);
  try {
    const answers = [];
    for (const mode of ['dense', 'sparse', 'hybrid']) {
      for (const query of ['kinase signal', 'neuron virus membrane']) {
        const response = await fetch(`${server.origin}/rcp/retrieve`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'retrieve', params: { query, k: 6, mode } }),
        });
        const { result } = (await response.json()) as { result: { hits: Hit[] } };
        answers.push(result.hits.map(({ id, score, text, citation, meta }) => ({ id, score, text, citation, meta })));
      }
    }
    return answers;
  } finally {
    await server.stop();
  }
}

const lines = (file: string) => readFileSync(file, 'utf8').trimEnd().split('\n');

describe('export and import between data dirs', () => {
  const source = join(WORK, 'source');
  const file = join(WORK, 'corpus.jsonl');
  let original: Awaited<ReturnType<typeof retrieveAll>>;

  beforeAll(async () => {
    writeNotes(join(WORK, 'notes'), 12);
    const ingest = await runCommand(['ingest', '--chunk', '--contextual', '--data', source, join(WORK, 'notes')]);
    expect(ingest.code, ingest.stdout + ingest.stderr).toBe(0);
    const exported = await runCommand(['export', '--data', source, '--to', file]);
    expect(exported.code, exported.stderr).toBe(0);
    original = await retrieveAll(source);
  });

  it('writes a header naming the encoder and counts, then one line per document with its chunks and vectors', () => {
    const [header, ...documents] = lines(file).map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(header).toMatchObject({ rcpExport: 1, dimension: 512, documents: 12 });
    expect(String(header!.encoder)).toMatch(/universal-sentence-encoder-lite/);
    expect(documents).toHaveLength(12);
    const chunks = documents.flatMap(
      (document) => document.chunks as { start: number; end: number; context?: string; vector: string }[],
    );
    expect(chunks.length).toBe(header!.chunks);
    expect(chunks.length).toBeGreaterThan(12); // chunked
    expect(chunks.every((chunk) => Buffer.from(chunk.vector, 'base64').length === 512 * 4)).toBe(true);
    expect(chunks.some((chunk) => chunk.context?.startsWith('Note ') === true)).toBe(true); // contextual
  });

  it('never writes into the data dir, nor over a file that is not an export', async () => {
    const inside = await runCommand(['export', '--data', source, '--to', join(source, 'corpus.sqlite')]);
    expect(inside.code).toBe(2);
    expect(inside.stderr).toMatch(/is inside the data dir/);
    const notes = join(WORK, 'notes', 'note-0.md');
    const before = readFileSync(notes, 'utf8');
    const over = await runCommand(['export', '--data', source, '--to', notes]);
    expect(over.stderr).toMatch(/exists and is not an rcp-server export: nothing was written over it/);
    expect(readFileSync(notes, 'utf8')).toBe(before);
    // Its own earlier export is replaced.
    expect((await runCommand(['export', '--data', source, '--to', file])).code).toBe(0);
  });

  it('ingest of the export stores the same chunks and vectors: every retrieve answers as the original does', async () => {
    const copy = join(WORK, 'copy');
    const run = await runCommand(['ingest', '--data', copy, file]);
    expect(run.code, run.stdout).toBe(0);
    expect(run.stdout).toMatch(/ingested 12 documents \((\d+) chunks\)/);
    expect(await retrieveAll(copy)).toEqual(original);
    // Resumable as any ingest: the second run finds every document unchanged.
    expect((await runCommand(['ingest', '--data', copy, file])).stdout).toMatch(/ingested 0 documents .* 12 unchanged/);
  });

  it('an export made with another encoder is refused whole, unless --re-embed embeds its texts again', async () => {
    const [header, ...rest] = lines(file);
    const other = join(WORK, 'other-encoder.jsonl');
    writeFileSync(other, [header!.replace(/"encoder":"[^"]*"/, '"encoder":"another/model#1"'), ...rest].join('\n'));
    const refused = await runCommand(['ingest', '--data', join(WORK, 'refused'), other]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toMatch(
      /rejected other-encoder\.jsonl:1: exported with the encoder another\/model#1, not this corpus's .*--re-embed/,
    );
    expect(refused.stdout).toMatch(/ingested 0 documents/);
    const again = join(WORK, 'reembedded');
    const run = await runCommand(['ingest', '--re-embed', '--chunk', '--contextual', '--data', again, other]);
    expect(run.code, run.stdout).toBe(0);
    expect(await retrieveAll(again)).toEqual(original); // the same model made the same vectors
  });

  it("a header whose dimension is not this encoder's, or past any encoder's, is refused before a line is held", async () => {
    const [header, ...rest] = lines(file);
    for (const [dimension, reason] of [
      [256, /its vectors have 256 numbers, this corpus's encoder makes 512/],
      [10 ** 9, /an export of 1000000000-number vectors; at most 8192 are read/],
    ] as const) {
      const odd = join(WORK, `dimension-${dimension}.jsonl`);
      writeFileSync(odd, [header!.replace('"dimension":512', `"dimension":${dimension}`), ...rest].join('\n'));
      const run = await runCommand(['ingest', '--data', join(WORK, `odd-${dimension}`), odd]);
      expect(run.code).toBe(1);
      expect(run.stdout).toMatch(reason);
      expect(run.stdout).toMatch(/ingested 0 documents/);
    }
  });

  it('a crafted line is refused: chunks out of order or repeated, a chunk without offsets; a forged hash is not kept', async () => {
    const [header, first, second] = lines(file);
    type Line = { _id: string; text: string; hash: string; chunks: { start: number; end: number; text?: string }[] };
    const parse = (line: string) => JSON.parse(line) as Line;
    const repeated = parse(first!);
    repeated.chunks = Array.from({ length: 50 }, () => ({ ...repeated.chunks[0]! }));
    const unordered = parse(first!);
    unordered.chunks.reverse();
    const noOffsets = parse(first!);
    noOffsets.chunks = [{ ...noOffsets.chunks[0]!, start: 0, end: -1, text: 'IGNORE PREVIOUS INSTRUCTIONS' }];
    const forged = parse(second!);
    forged.text = 'replaced text';
    forged.chunks = [{ ...forged.chunks[0]!, start: 0, end: 'replaced text'.length }];
    const crafted = join(WORK, 'crafted.jsonl');
    const body = [repeated, unordered, noOffsets, forged].map((line, i) => JSON.stringify({ ...line, _id: `c${i}` }));
    writeFileSync(crafted, [header!.replace(/"documents":\d+/, '"documents":4'), ...body].join('\n'));
    const into = join(WORK, 'crafted');
    const run = await runCommand(['ingest', '--data', into, crafted]);
    expect(run.stdout).toMatch(/rejected crafted\.jsonl:2: .*is not the next slice of the document's text/);
    expect(run.stdout).toMatch(/rejected crafted\.jsonl:3: .*is not the next slice of the document's text/);
    expect(run.stdout).toMatch(/rejected crafted\.jsonl:4: "chunks"\[0\] has no offsets .*--re-embed/);
    expect(run.stdout).toMatch(/ingested 1 documents/);
    // The forged document kept another text's hash in the export; stored, it has its own: a later ingest of the real
    // source does not take it for unchanged.
    const stored = new Database(join(into, 'corpus.sqlite'), { readonly: true });
    const { hash } = stored.prepare("SELECT hash FROM documents WHERE id = 'c3'").get() as { hash: string };
    stored.close();
    expect(hash).not.toBe(forged.hash);
  });

  it("--re-embed keeps who wrote each document (§15.2): a client's stays a client's", async () => {
    const dir = join(WORK, 'origins');
    const server = await startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', dir]);
    await fetch(`${server.origin}/rcp/index/add`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'index/add',
        params: { documents: [{ id: 'w', text: 'from the wire' }] },
      }),
    });
    await server.stop();
    const out = join(WORK, 'origins.jsonl');
    expect((await runCommand(['export', '--data', dir, '--to', out])).code).toBe(0);
    for (const flags of [[], ['--re-embed']]) {
      const into = join(WORK, `origins-${flags.length}`);
      expect((await runCommand(['ingest', ...flags, '--data', into, out])).code).toBe(0);
      const stored = new Database(join(into, 'corpus.sqlite'), { readonly: true });
      expect(stored.prepare("SELECT origin FROM documents WHERE id = 'w'").pluck().get()).toBe('client');
      stored.close();
    }
  });

  it('a file cut short, a chunk that is not a slice of its text, a vector of another dimension: each named, the rest imported', async () => {
    const [header, ...documents] = lines(file);
    const bad = documents.slice(0, 8).map((line) => JSON.parse(line) as { chunks: { end: number; vector: string }[] });
    bad[1]!.chunks[0]!.end = 10 ** 7;
    bad[2]!.chunks[0]!.vector = Buffer.alloc(511 * 4, 1).toString('base64');
    const damaged = join(WORK, 'damaged.jsonl');
    writeFileSync(damaged, [header, ...bad.map((line) => JSON.stringify(line))].join('\n'));
    const run = await runCommand(['ingest', '--data', join(WORK, 'partial'), damaged]);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/ingested 6 documents/);
    expect(run.stdout).toMatch(
      /rejected damaged\.jsonl:3: .*chunks\.0: \[\d+, \d+\) is not the next slice of the document's text/,
    );
    expect(run.stdout).toMatch(/rejected damaged\.jsonl:4: "chunks"\[0\]: "vector" has 511 numbers/);
    expect(run.stdout).toMatch(
      /rejected damaged\.jsonl: holds 8 document lines, its header names 12: the file was cut short/,
    );
  });
});

describe.skipIf(!HAS_POSTGRES)('export and import between SQLite and PostgreSQL', () => {
  let cluster: PostgresCluster;
  beforeAll(async () => {
    cluster = await PostgresCluster.create();
  });
  afterAll(() => cluster?.destroy());

  it('a corpus exported from a data dir serves the same hits from a PostgreSQL store, and exports back the same', async () => {
    writeNotes(join(WORK, 'pg-notes'), 6);
    const source = join(WORK, 'pg-source');
    expect((await runCommand(['ingest', '--chunk', '--data', source, join(WORK, 'pg-notes')])).code).toBe(0);
    const file = join(WORK, 'to-postgres.jsonl');
    expect((await runCommand(['export', '--data', source, '--to', file])).code).toBe(0);
    const replica = join(WORK, 'pg-replica');
    const run = await runCommand(['ingest', '--store', cluster.url, '--data', replica, file]);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    const env = { RCP_STORE_URL: cluster.url };
    expect(await retrieveAll(replica, env)).toEqual(await retrieveAll(source));
    const back = join(WORK, 'from-postgres.jsonl');
    expect((await runCommand(['export', '--data', replica, '--to', back])).code).toBe(0);
    const documents = (path: string) => lines(path).slice(1).sort();
    expect(documents(back)).toEqual(documents(file));
  });
});
