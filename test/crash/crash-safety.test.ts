import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Corpus } from '../../src/corpus/corpus.js';
import { readFrames, spawnStdio } from '../helpers/wire.js';
import { silentLogger } from '../helpers/logger.js';
import { crashEncoder, crashSettings, ENCODER_DIR } from './corpus.js';

/**
 * No acknowledged write is ever lost. A real server process (the built binary, over stdio) takes a stream
 * of index/add and index/delete calls and is killed with SIGKILL at a random moment; the corpus is then reopened
 * from the same directory and checked: every acknowledged write is there with its exact text, every acknowledged
 * delete is gone, unacknowledged batches are all there or not at all, store/dense/lexical counts agree, and nothing
 * else exists. Repeated on the same directory, so each run also restarts from the previous crash.
 * RCP_CRASH_ITERATIONS sets the number of runs (CI: 5; `npm run test:crash` soaks 100).
 */
const ITERATIONS = Number(process.env.RCP_CRASH_ITERATIONS ?? 5);
const DATA = mkdtempSync(join(tmpdir(), 'rcp-crash-'));
const encoder = crashEncoder();
afterAll(async () => {
  await encoder.close();
  rmSync(DATA, { recursive: true, force: true });
});
const settings = crashSettings(DATA);

type Write = { kind: 'add'; docs: { id: string; text: string }[] } | { kind: 'delete'; ids: string[] };

/** What the client knows: the latest acknowledged state of each id, and writes sent but never answered. */
const acknowledged = new Map<string, string | null>();
const sent = new Set<string>();

function nextWrite(run: number, n: number): Write {
  const known = [...acknowledged].filter(([, text]) => text !== null).map(([id]) => id);
  if (n % 7 === 6 && known.length > 0) return { kind: 'delete', ids: [known[n % known.length]!] };
  if (n % 5 === 4 && known.length > 0) {
    const id = known[(n * 3) % known.length]!;
    return { kind: 'add', docs: [{ id, text: `rewritten in run ${run} write ${n}: ${id}` }] };
  }
  const size = 1 + (n % 3);
  return {
    kind: 'add',
    docs: Array.from({ length: size }, (_, i) => ({
      id: `r${run}-w${n}-d${i}`,
      text: `run ${run} write ${n} document ${i} about cells`,
    })),
  };
}

async function crashRun(run: number): Promise<{ unanswered: Write[] }> {
  const server = spawnStdio({ config: { 'models.encoder': ENCODER_DIR, dataDir: DATA } }, [
    'bin/rcp-server.js',
    'serve',
    '--stdio',
  ]);
  const inFlight = new Map<number, Write>();
  let nextId = 1;
  let answered = 0;
  let writing = true;
  const send = (method: string, params: object) => {
    const id = nextId++;
    server.child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    return id;
  };
  const issue = (n: number) => {
    const write = nextWrite(run, n);
    // One write per id at a time: an id is never in two unanswered writes, so acknowledgement order is unambiguous.
    const ids = write.kind === 'add' ? write.docs.map((d) => d.id) : write.ids;
    const busy = [...inFlight.values()].some((w) =>
      (w.kind === 'add' ? w.docs.map((d) => d.id) : w.ids).some((id) => ids.includes(id)),
    );
    if (busy) return;
    for (const id of ids) sent.add(id);
    const id =
      write.kind === 'add' ? send('index/add', { documents: write.docs }) : send('index/delete', { ids: write.ids });
    inFlight.set(id, write);
  };
  let n = 0;
  readFrames(server.child, (frame) => {
    const { id, error } = frame as { id: number; error?: unknown };
    if (id === 0) return;
    const write = inFlight.get(id);
    if (write === undefined) return;
    inFlight.delete(id);
    expect(error, JSON.stringify(error)).toBeUndefined();
    answered += 1;
    if (write.kind === 'add') for (const doc of write.docs) acknowledged.set(doc.id, doc.text);
    else for (const doc of write.ids) acknowledged.set(doc, null);
    while (writing && inFlight.size < 4) issue(n++);
  });
  send('initialize', { protocolVersion: 1, client: { name: 'crash', version: '1' }, capabilities: {} });
  for (let i = 0; i < 4; i++) issue(n++);
  // Kill at a random moment once writes are flowing.
  const deadline = Date.now() + 60_000;
  while (answered < 3 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  await new Promise((resolve) => setTimeout(resolve, 50 + Math.random() * 600));
  writing = false;
  server.child.kill('SIGKILL');
  await server.exited;
  expect(answered, server.stderr()).toBeGreaterThan(0);
  return { unanswered: [...inFlight.values()] };
}

describe('crash safety (SIGKILL during writes)', () => {
  it(
    `loses no acknowledged write across ${ITERATIONS} kill -9 restarts`,
    { timeout: 120_000 + ITERATIONS * 30_000 },
    async () => {
      for (let run = 0; run < ITERATIONS; run++) {
        const { unanswered } = await crashRun(run);
        const corpus = new Corpus(settings, encoder, silentLogger);
        await corpus.ready;
        for (const [id, text] of acknowledged) {
          const unansweredTouch = unanswered.some((w) =>
            w.kind === 'add' ? w.docs.some((d) => d.id === id) : w.ids.includes(id),
          );
          if (unansweredTouch) continue; // may hold its old or its new state: settled below
          if (text === null) expect(corpus.getDocument(id), `deleted ${id}`).toBeUndefined();
          else expect(corpus.getDocument(id)?.text, `acknowledged ${id}`).toBe(text);
        }
        // Unanswered batches: all of a batch or none of it.
        for (const write of unanswered) {
          if (write.kind !== 'add') continue;
          const present = write.docs.map((doc) => corpus.getDocument(doc.id)?.text === doc.text);
          expect(new Set(present).size, JSON.stringify(write.docs.map((d) => d.id))).toBe(1);
          if (present[0] === true) for (const doc of write.docs) acknowledged.set(doc.id, doc.text);
        }
        const stats = await corpus.stats();
        expect(stats.chunks).toBe(stats.documents);
        expect(stats.dense).toBe(stats.chunks);
        expect(stats.lexical).toBe(stats.chunks);
        for (const id of corpus.store.documentIds()) expect(sent.has(id), `unexpected ${id}`).toBe(true);
        // Settle unanswered deletes by what the store says, so the next run's expectations are exact.
        for (const write of unanswered) {
          if (write.kind === 'delete')
            for (const id of write.ids) acknowledged.set(id, corpus.getDocument(id)?.text ?? null);
          else for (const doc of write.docs) acknowledged.set(doc.id, corpus.getDocument(doc.id)?.text ?? null);
        }
        await corpus.close();
      }
    },
  );
});
