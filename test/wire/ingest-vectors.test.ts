import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { runCommand, seededRandom, track } from '../helpers/children.js';
import { ROOT } from '../helpers/wire.js';

/**
 * `rcp-server ingest` of records that carry their own `vector` (docs/corpus.md, "Vectors embedded elsewhere"), as real
 * processes: the ingest, then `serve --stdio` retrieving over what it stored, after a restart and after a rebuild.
 */
const WORK = mkdtempSync(join(tmpdir(), 'rcp-ingest-vectors-'));
afterAll(() => rmSync(WORK, { recursive: true, force: true }));

const DIMENSION = 512; // the default encoder's

const run = (args: string[], input?: string) => runCommand(args, {}, input);

interface Hit {
  id: string;
  score: number;
  vector?: number[];
}

/** `serve --stdio` over `data`, answering `calls` in order (one session, closed at the end of its input). */
async function serve(data: string, calls: { method: string; params: object }[]): Promise<unknown[]> {
  const initialize = {
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: 1, client: { name: 't', version: '1' }, capabilities: {} },
  };
  const frames = [initialize, ...calls.map((call, i) => ({ jsonrpc: '2.0', id: i + 1, ...call }))];
  const { stdout, stderr } = await run(
    ['serve', '--stdio', '--data', data],
    frames.map((frame) => JSON.stringify(frame)).join('\n') + '\n',
  );
  const replies = stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { id: number; result?: unknown; error?: unknown });
  return calls.map((_, i) => {
    const reply = replies.find((candidate) => candidate.id === i + 1);
    if (reply?.result === undefined) throw new Error(`call ${i + 1}: ${JSON.stringify(reply?.error)} ${stderr}`);
    return reply.result;
  });
}

const base64 = (vector: ArrayLike<number>) => {
  const bytes = Buffer.alloc(vector.length * 4);
  for (let i = 0; i < vector.length; i++) bytes.writeFloatLE(vector[i]!, i * 4);
  return bytes.toString('base64');
};

/** A seeded generator in [-0.5, 0.5): the same vectors every run. */
function random(seed: number): () => number {
  const next = seededRandom(seed);
  return () => next() - 0.5;
}

function unit(vector: number[]): number[] {
  const norm = Math.hypot(...vector);
  return vector.map((x) => x / norm);
}

const randomVector = (next: () => number) => unit(Array.from({ length: DIMENSION }, next));

/** `base` moved by `amount` of a random direction, at unit length: the larger `amount`, the farther from `base`. */
const near = (base: number[], amount: number, next: () => number) =>
  unit(base.map((x, i) => x + amount * randomVector(next)[i]!));

const jsonl = (records: object[]) => `${records.map((record) => JSON.stringify(record)).join('\n')}\n`;

const dense = (query: string, k = 3) => ({
  method: 'retrieve',
  params: { query, k, mode: 'dense', includeVectors: true, includeText: false },
});

describe('rcp-server ingest with vectors embedded elsewhere', () => {
  it(
    'dense retrieval searches the imported vectors: the nearest is the record whose vector is closest, after a ' +
      'restart from the saved index and after a rebuild from the store; BM25 has the text',
    { timeout: 180_000 },
    async () => {
      const query = 'how do cells divide';
      // The encoder's own query vector, as a client would get it (§7.3): imported vectors are searched with it.
      const [embedded] = (await serve(join(WORK, 'empty'), [
        { method: 'embed', params: { inputs: [query], kind: 'query' } },
      ])) as { vectors: number[][] }[];
      const q = embedded!.vectors[0]!;
      expect(q).toHaveLength(DIMENSION);
      const next = random(7);
      // Texts unrelated to the query: only the imported vectors can rank them.
      const records: object[] = [
        { _id: 'nearest', text: 'granite quarry in the hills', vector: base64(near(q, 0.3, next)) },
        { _id: 'second', text: 'a recipe for plum jam', vector: near(q, 1, next) },
        // Not unit length: stored at unit length, as the encoder's outputs are.
        { _id: 'third', text: 'tides and the moon', vector: near(q, 3, next).map((x) => 5 * x) },
        ...Array.from({ length: 40 }, (_, i) => ({ _id: `far-${i}`, text: `filler ${i}`, vector: randomVector(next) })),
      ];
      writeFileSync(join(WORK, 'vectors.jsonl'), jsonl(records));
      const data = join(WORK, 'data');
      const ingested = await run(['ingest', '--data', data, join(WORK, 'vectors.jsonl')]);
      expect(ingested.code, ingested.stdout + ingested.stderr).toBe(0);
      expect(ingested.stdout).toMatch(/ingested 43 documents \(43 chunks\)/);

      const [first, lexical] = (await serve(data, [
        dense(query),
        { method: 'retrieve', params: { query: 'plum jam', k: 1, mode: 'sparse', includeText: false } },
      ])) as { hits: Hit[] }[];
      expect(first!.hits.map((hit) => hit.id)).toEqual(['nearest#0', 'second#0', 'third#0']);
      expect(Math.hypot(...first!.hits[2]!.vector!)).toBeCloseTo(1, 5);
      // Dense scores are the cosine of the query and the stored vector.
      const stored = first!.hits[0]!.vector!;
      const cosine = stored.reduce((sum, x, i) => sum + x * q[i]!, 0);
      expect(first!.hits[0]!.score).toBeCloseTo(cosine, 4);
      expect(lexical!.hits[0]!.id).toBe('second#0');

      // A restart loads the saved dense index; with it gone, the index is rebuilt from the store's vectors.
      const [restarted] = (await serve(data, [dense(query)])) as { hits: Hit[] }[];
      expect(restarted!.hits).toEqual(first!.hits);
      for (const file of readdirSync(data).filter((name) => name.startsWith('dense-'))) rmSync(join(data, file));
      const [rebuilt] = (await serve(data, [dense(query)])) as { hits: Hit[] }[];
      expect(rebuilt!.hits).toEqual(first!.hits);
    },
  );

  it(
    'a wrong dimension, bad base64 or a non-finite number is named by file and line and nothing of it is stored; ' +
      'array and base64 forms store the same vector; --chunk refuses records with a vector',
    { timeout: 180_000 },
    async () => {
      const next = random(11);
      const v = randomVector(next);
      const short = base64(v).slice(0, 12); // 9 bytes: not a whole number of float32s
      const records = [
        { _id: 'as-array', text: 'apple orchard', vector: v },
        { _id: 'as-base64', text: 'apple orchard', vector: base64(v) },
        { _id: 'wrong-dimension', text: 'zeppelin', vector: v.slice(1) },
        { _id: 'bad-base64', text: 'zeppelin', vector: 'not base64!' },
        { _id: 'bad-length', text: 'zeppelin', vector: short },
        { _id: 'too-large', text: 'zeppelin', vector: [1e39, ...v.slice(1)] },
        { _id: 'zeros', text: 'zeppelin', vector: new Array<number>(DIMENSION).fill(0) },
      ];
      const file = join(WORK, 'mixed.jsonl');
      writeFileSync(file, jsonl(records));
      const data = join(WORK, 'mixed');
      const result = await run(['ingest', '--data', data, file]);
      expect(result.code).toBe(1);
      expect(result.stdout).toMatch(/ingested 2 documents \(2 chunks\) .*; 0 unchanged, 5 rejected/);
      expect(result.stdout).toContain(
        `rejected mixed.jsonl:3: "vector" has 511 numbers; the encoder's dimension is 512`,
      );
      expect(result.stdout).toMatch(/rejected mixed\.jsonl:4: "vector" is a string but not padded base64/);
      expect(result.stdout).toMatch(/rejected mixed\.jsonl:5: "vector" decodes to 9 bytes, not a whole number/);
      expect(result.stdout).toMatch(/rejected mixed\.jsonl:6: "vector"\[0\] is Infinity, not a finite float32/);
      expect(result.stdout).toMatch(/rejected mixed\.jsonl:7: "vector" is all zeros/);

      const [found, zeppelin] = (await serve(data, [
        { method: 'retrieve', params: { query: 'apple orchard', k: 5, mode: 'sparse', includeVectors: true } },
        { method: 'retrieve', params: { query: 'zeppelin', k: 5, mode: 'sparse' } },
      ])) as { hits: Hit[] }[];
      const byId = new Map(found!.hits.map((hit) => [hit.id, hit.vector]));
      expect([...byId.keys()].sort()).toEqual(['as-array#0', 'as-base64#0']);
      expect(byId.get('as-array#0')).toEqual(byId.get('as-base64#0'));
      expect(zeppelin!.hits).toEqual([]);
      const db = new Database(join(data, 'corpus.sqlite'), { readonly: true });
      try {
        expect(db.prepare('SELECT id FROM documents ORDER BY id').pluck().all()).toEqual(['as-array', 'as-base64']);
      } finally {
        db.close();
      }

      const chunked = await run(['ingest', '--chunk', '--data', join(WORK, 'chunked'), file]);
      expect(chunked.stdout).toContain(
        'rejected mixed.jsonl:1: a record with "vector" is one chunk; ingest it without --chunk',
      );
      expect(chunked.stdout).toMatch(/ingested 0 documents/);
    },
  );

  it(
    'kill -9 mid-import, then the same command resumes: what was stored is skipped, the rest written',
    {
      timeout: 300_000,
    },
    async () => {
      const next = random(23);
      const total = 3000;
      const file = join(WORK, 'large.jsonl');
      writeFileSync(
        file,
        jsonl(
          Array.from({ length: total }, (_, i) => ({
            _id: `d${i}`,
            text: `record ${i}`,
            vector: base64(randomVector(next)),
          })),
        ),
      );
      const data = join(WORK, 'resumed');
      const child = track(
        spawn(process.execPath, ['bin/rcp-server.js', 'ingest', '--data', data, file], {
          cwd: ROOT,
          env: { ...process.env, RCP_LOG_LEVEL: 'warn' },
          stdio: 'ignore',
        }),
      );
      const exited = new Promise((resolve) => child.once('exit', resolve));
      // Killed once some batches are committed and before the last: the store is watched, not a clock.
      const stored = await storedWhileRunning(join(data, 'corpus.sqlite'), () => child.exitCode !== null);
      child.kill('SIGKILL');
      await exited;
      expect(stored).toBeGreaterThan(0);
      expect(stored).toBeLessThan(total);

      const resumed = await run(['ingest', '--data', data, file]);
      expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0);
      const [, added, unchanged] =
        /ingested (\d+) documents .*; (\d+) unchanged, 0 rejected/.exec(resumed.stdout) ?? [];
      expect(Number(unchanged)).toBeGreaterThanOrEqual(stored);
      expect(Number(added) + Number(unchanged)).toBe(total);
      const again = await run(['ingest', '--data', data, file]);
      expect(again.stdout).toMatch(new RegExp(`ingested 0 documents .*; ${total} unchanged, 0 rejected`));
      const db = new Database(join(data, 'corpus.sqlite'), { readonly: true });
      try {
        expect(db.prepare('SELECT count(*) FROM chunks').pluck().get()).toBe(total);
      } finally {
        db.close();
      }
    },
  );
});

/** Documents committed in the store, read as they grow; returns the first count seen between none and done. */
async function storedWhileRunning(path: string, finished: () => boolean): Promise<number> {
  for (;;) {
    if (finished()) return -1;
    let count = 0;
    try {
      if (statSync(path).size > 0) {
        const db = new Database(path, { readonly: true, fileMustExist: true });
        try {
          count = db.prepare('SELECT count(*) FROM documents').pluck().get() as number;
        } finally {
          db.close();
        }
      }
    } catch {
      // Not created yet, or its schema not yet written.
    }
    if (count > 0) return count;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
