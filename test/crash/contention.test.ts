import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Corpus } from '../../src/corpus/corpus.js';
import { readFrames, ROOT, spawnStdio } from '../helpers/wire.js';
import { silentLogger } from '../helpers/logger.js';
import { crashEncoder, crashSettings, ENCODER_DIR } from './corpus.js';

/**
 * Kill -9 under contention: a real server process takes concurrent upserts (`chunk: true`, several chunks each) and
 * deletes of the same few ids, retrieves all along, and an `rcp-server ingest` into its data dir, and is killed with
 * SIGKILL at a random moment; then the dir is reopened and checked. Every id holds what its last acknowledged write
 * left, or what a write still unanswered at the kill wrote; chunks, dense and lexical agree with the documents; no
 * retrieve ever named a hit by anything but its document id and chunk place; the ingest, run beside the server over
 * the same dir (docs/architecture.md §5), finished and its document is stored. RCP_CRASH_ITERATIONS sets the number of kills (CI: 5; `npm run test:crash` runs 100).
 */
const ITERATIONS = Number(process.env.RCP_CRASH_ITERATIONS ?? 5);
const WORK = mkdtempSync(join(tmpdir(), 'rcp-contention-'));
const DATA = join(WORK, 'data');
const IDS = ['a', 'b', 'c', 'd'];
const encoder = crashEncoder();
afterAll(async () => {
  await encoder.close();
  rmSync(WORK, { recursive: true, force: true });
});
const INGESTED = { _id: 'from-ingest', text: 'written beside the server, about blood cells' };
writeFileSync(join(WORK, 'extra.jsonl'), `${JSON.stringify(INGESTED)}\n`);
const settings = crashSettings(DATA);

/** A long text (several chunks) unique to this write. */
const textOf = (tag: string) =>
  Array.from({ length: 30 }, (_, s) => `Sentence ${s} of write ${tag} about blood cells and the heart.`).join(' ');

type Write = { id: string; text: string | null };
type Hit = { id: string; chunk?: { docId: string; index: number } };

/** What the client knows per id: the text of its last acknowledged write (null: deleted), in acknowledgement order. */
const lastAcknowledged = new Map<string, string | null>();

async function crashRun(run: number) {
  const server = spawnStdio({ config: { 'models.encoder': ENCODER_DIR, dataDir: DATA } }, [
    'bin/rcp-server.js',
    'serve',
    '--stdio',
  ]);
  const writes = new Map<number, Write>();
  const hits: Hit[] = [];
  let next = 1;
  const send = (method: string, params: object) => {
    const id = next++;
    server.child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    return id;
  };
  const write = (n: number) => {
    const id = IDS[(n * 7 + run) % IDS.length]!;
    const text = n % 5 === 4 ? null : textOf(`${run}.${n}`);
    const call =
      text === null
        ? send('index/delete', { ids: [id] })
        : send('index/add', { documents: [{ id, text }], chunk: true });
    writes.set(call, { id, text });
  };
  let acknowledged = 0;
  readFrames(server.child, (frame) => {
    const { id, result, error } = frame as { id: number; result?: { hits?: Hit[] }; error?: unknown };
    const sentWrite = writes.get(id);
    if (sentWrite !== undefined) {
      expect(error, JSON.stringify(error)).toBeUndefined();
      writes.delete(id);
      lastAcknowledged.set(sentWrite.id, sentWrite.text);
      acknowledged += 1;
    } else if (result?.hits !== undefined) hits.push(...result.hits);
  });
  send('initialize', { protocolVersion: 1, client: { name: 'contention', version: '1' }, capabilities: {} });
  // Four writes in flight at a time, to the same four ids, and a retrieve beside each.
  let n = 0;
  const pump = setInterval(() => {
    while (writes.size < 4) write(n++);
    send('retrieve', { query: 'blood cells heart', k: 10, mode: n % 2 === 0 ? 'hybrid' : 'dense' });
  }, 15);
  const deadline = Date.now() + 60_000;
  while (acknowledged < 1 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  const ingest = ingestBeside(); // the server serves the dir by now
  while (acknowledged < 4 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  await new Promise((resolve) => setTimeout(resolve, 100 + Math.random() * 700));
  clearInterval(pump);
  server.child.kill('SIGKILL');
  await server.exited;
  expect(acknowledged, server.stderr()).toBeGreaterThan(0);
  return { unanswered: [...writes.values()], hits, ingest: await ingest };
}

/** `rcp-server ingest` into the running server's dir: its exit code and stderr. */
function ingestBeside(): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, ['bin/rcp-server.js', 'ingest', '--data', DATA, join(WORK, 'extra.jsonl')], {
    cwd: ROOT,
    env: { ...process.env, RCP_LOG_LEVEL: 'warn', RCP_MODELS_ENCODER: ENCODER_DIR },
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stderr })));
}

describe('crash safety under contention (SIGKILL during concurrent upserts of the same ids)', () => {
  it(
    `keeps every acknowledged write and names every hit rightly across ${ITERATIONS} kill -9 restarts`,
    { timeout: 120_000 + ITERATIONS * 30_000 },
    async () => {
      for (let run = 0; run < ITERATIONS; run++) {
        const { unanswered, hits, ingest } = await crashRun(run);
        // The ingest ran beside the server (and, if the kill came first, went on alone): either way it wrote.
        expect(ingest.code, ingest.stderr).toBe(0);
        for (const hit of hits) {
          expect([...IDS, INGESTED._id]).toContain(hit.chunk?.docId);
          expect(hit.id).toBe(`${hit.chunk!.docId}#${hit.chunk!.index}`);
        }
        const corpus = new Corpus(settings, encoder, silentLogger);
        await corpus.ready;
        expect(corpus.getDocument(INGESTED._id)?.text).toBe(INGESTED.text);
        for (const id of IDS) {
          const stored = corpus.getDocument(id)?.text ?? null;
          const allowed = [
            lastAcknowledged.get(id) ?? null,
            ...unanswered.filter((w) => w.id === id).map((w) => w.text),
          ];
          expect(allowed, `run ${run}: ${id}`).toContain(stored);
          lastAcknowledged.set(id, stored);
        }
        await corpus.delete([INGESTED._id]); // the next run ingests it again
        const stats = await corpus.stats();
        expect(stats.dense).toBe(stats.chunks);
        expect(stats.lexical).toBe(stats.chunks);
        for (const id of corpus.store.documentIds()) expect(IDS).toContain(id);
        await corpus.close();
      }
    },
  );
});
