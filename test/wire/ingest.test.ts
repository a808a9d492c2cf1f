import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCommand } from '../helpers/children.js';
import { startHttpProcess } from '../helpers/processes.js';

/** `rcp-server ingest` as a real process, then `rcp-server serve` finding what it wrote. */
const WORK = mkdtempSync(join(tmpdir(), 'rcp-ingest-'));
const DATA = join(WORK, 'data');
afterAll(() => rmSync(WORK, { recursive: true, force: true }));

const beir = [
  { _id: '1', title: 'Protein folding', text: 'Proteins fold into shapes.', metadata: { year: 2020 } },
  { id: '2', title: '', text: 'Cells divide by mitosis.' },
  { _id: 3, text: 'Blood carries oxygen.' },
  { _id: '4', text: '   ' },
];
writeFileSync(join(WORK, 'corpus.jsonl'), `${beir.map((line) => JSON.stringify(line)).join('\n')}\n`);
mkdirSync(join(WORK, 'notes', 'sub'), { recursive: true });
writeFileSync(join(WORK, 'notes', 'a.md'), '# Mitochondria\n\nThe powerhouse of the cell.\n');
writeFileSync(join(WORK, 'notes', 'sub', 'b.txt'), 'Plain text note about neurons.');
// A name that declares no format read here: skipped, counted, and no failure (a .pdf is read: test/wire/documents).
writeFileSync(join(WORK, 'notes', 'photo.png'), 'not a document');

/** Source "2" is trusted by configuration: operator-ingested text may be (§15.2). */
const run = (args: string[], input?: string) => runCommand(args, { RCP_RETRIEVE_TRUST: '{"2": "trusted"}' }, input);

describe('rcp-server ingest', () => {
  it('ingests BEIR JSON Lines and folders of .txt/.md, reports progress and rejects, then resumes', async () => {
    const first = await run(['ingest', '--data', DATA, join(WORK, 'corpus.jsonl'), join(WORK, 'notes')]);
    expect(first.stdout).toMatch(/ingested 5 documents \(5 chunks\) .*; 0 unchanged, 1 rejected/);
    expect(first.stdout).toMatch(/rejected corpus\.jsonl:4: .*documents\.\d+\.text/);
    expect(first.stdout).toMatch(/^ {2}skipped 1 file of no format read here \(\.png 1\)$/m);
    expect(first.stderr).toMatch(/ingest: 6\/6 documents/); // not a TTY: plain progress lines
    expect(first.code).toBe(1); // some documents were rejected
    const again = await run(['ingest', '--data', DATA, join(WORK, 'corpus.jsonl'), join(WORK, 'notes')]);
    expect(again.stdout).toMatch(/ingested 0 documents .*; 5 unchanged, 1 rejected/);
  });

  it('serve finds the ingested corpus: ids from both kinds of source are there', async () => {
    const frames = [
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: 1, client: { name: 't', version: '1' }, capabilities: {} },
      },
      { jsonrpc: '2.0', id: 3, method: 'retrieve', params: { query: 'mitosis', k: 1, mode: 'sparse' } },
      {
        jsonrpc: '2.0',
        id: 2,
        method: 'index/delete',
        params: { ids: ['1', '3', 'notes-missing', 'a.md', 'sub/b.txt'] },
      },
    ];
    const { stdout } = await run(
      ['serve', '--stdio', '--data', DATA],
      frames.map((f) => JSON.stringify(f)).join('\n') + '\n',
    );
    const replies = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { id: number; result: { deleted?: number } });
    expect(replies.find((reply) => reply.id === 2)?.result.deleted).toBe(4);
    // §15.2: operator-ingested text may be trusted by configuration (client-written text never is).
    const retrieved = replies.find((reply) => reply.id === 3)?.result as unknown as {
      hits: { id: string; trust: { level: string } }[];
    };
    expect(retrieved.hits[0]).toMatchObject({ id: '2#0', trust: { level: 'trusted' } });
  });

  it('rcp-server eval scores judged queries through retrieve and writes a JSON report', async () => {
    writeFileSync(
      join(WORK, 'queries.jsonl'),
      `${JSON.stringify({ _id: 'q1', text: 'how do cells divide' })}\n${JSON.stringify({ _id: 'q2', text: 'mitosis' })}\n`,
    );
    writeFileSync(join(WORK, 'qrels.tsv'), 'query-id\tcorpus-id\tscore\nq1\t2\t1\nq2\t2\t1\n');
    const report = join(WORK, 'report.json');
    const evaluate = (...flags: string[]) =>
      run([
        'eval',
        '--data',
        DATA,
        '--queries',
        join(WORK, 'queries.jsonl'),
        '--qrels',
        join(WORK, 'qrels.tsv'),
        ...flags,
      ]);
    const result = await evaluate('--mode', 'sparse', '--report', report);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^2 queries {2}nDCG@10 1\.0000 {2}Recall@100 1\.0000 {2}MRR@10 1\.0000/);
    const written = JSON.parse(readFileSync(report, 'utf8')) as {
      queries: number;
      ndcg10: number;
      params: { mode: string };
    };
    expect(written).toMatchObject({ queries: 2, ndcg10: 1, params: { mode: 'sparse' } });
    const refused = await evaluate('--candidate-k', '5');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/candidateK/);
  });

  it('ingest beside a running server over one data dir: the server serves what it wrote (docs/architecture.md §5)', async () => {
    const dir = join(WORK, 'beside');
    const server = await startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', dir], {});
    try {
      const ingested = await run(['ingest', '--data', dir, join(WORK, 'notes')]);
      expect(ingested.code, ingested.stderr).toBe(0);
      const second = await startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', dir], {});
      const retrieve = (origin: string) =>
        fetch(`${origin}/rcp/retrieve`, {
          method: 'POST',
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'retrieve', params: { query: 'neurons', k: 3 } }),
        }).then(async (response) => (await response.json()) as { result: { hits: unknown[]; indexVersion: string } });
      try {
        // The first server follows the ingest's writes within index.followMs; the second loaded them at start.
        let first = await retrieve(server.origin);
        while (first.result.hits.length === 0) first = await retrieve(server.origin);
        const { hits, indexVersion } = (await retrieve(second.origin)).result;
        expect(first.result).toMatchObject({ hits, indexVersion });
      } finally {
        expect(await second.stop()).toBe(0);
      }
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });

  it('names a path it cannot read, with exit 2', async () => {
    const result = await run(['ingest', '--data', DATA, join(WORK, 'nope.jsonl')]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/nope\.jsonl: no such file or directory/);
  });
});
