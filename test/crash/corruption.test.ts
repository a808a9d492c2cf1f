import { chmodSync, cpSync, mkdtempSync, readdirSync, rmSync, statSync, truncateSync } from 'node:fs';
import { closeSync, openSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mulberry32 } from '../helpers/random.js';
import { readFrames, ROOT, spawnStdio } from '../helpers/wire.js';

/**
 * The corruption matrix: a data dir written and cleanly stopped by a real server, then one of its files damaged —
 * truncated at a random offset, a random byte range overwritten, emptied, or made unreadable — and a real server
 * started on it. Each case must end one of two ways: the server refuses to serve (exit 2, one line naming the
 * problem: at start, or once its scrub or a read finds the damage), or it serves every query exactly as a server
 * that rebuilt its indexes from an undamaged store does.
 * Never a signal, never other answers. RCP_CORRUPT_CASES sets the number of cases (CI: 12; `npm run test:corrupt`
 * runs 200), RCP_CORRUPT_SEED the first seed (a failure prints its seed).
 */
const CASES = Number(process.env.RCP_CORRUPT_CASES ?? 12);
const SEED = Number(process.env.RCP_CORRUPT_SEED ?? 1);
const ENCODER_DIR = join(ROOT, 'models', 'use-lite');
/** A server that neither answers nor exits within this is hung: a failure of its own. */
const ANSWER_WITHIN_MS = 60_000;
const WORK = mkdtempSync(join(tmpdir(), 'rcp-corrupt-'));
const CLEAN = join(WORK, 'clean');
afterAll(() => rmSync(WORK, { recursive: true, force: true }));

const TOPICS = ['heart', 'lung', 'brain', 'liver', 'kidney', 'bone', 'skin', 'blood', 'muscle', 'nerve'];
const DOCUMENTS = Array.from({ length: 80 }, (_, i) => ({
  id: `doc-${i}`,
  text: `Study ${i}: the ${TOPICS[i % 10]} and the ${TOPICS[(i * 3) % 10]} in patients of cohort ${i % 7}.`,
  meta: { cohort: i % 7 },
}));
const QUERIES = TOPICS.map((topic, i) => ({ query: `${topic} ${TOPICS[(i + 4) % 10]} cohort`, k: 10 }));

type Outcome = { refused: true; code: number | null; stderr: string } | { refused: false; answers: unknown[] };

/** Runs a server over stdio on `dir`: writes `documents` if given, asks every query, and stops it (stdin closed). */
async function serve(dir: string, documents?: typeof DOCUMENTS): Promise<Outcome> {
  const server = spawnStdio({ config: { 'models.encoder': ENCODER_DIR, dataDir: dir } }, [
    'bin/rcp-server.js',
    'serve',
    '--stdio',
  ]);
  const replies = new Map<number, { result?: unknown; error?: { code: number; message: string } }>();
  readFrames(server.child, (frame) => {
    const { id } = frame as { id: number };
    replies.set(id, frame as { result?: unknown });
  });
  const send = (id: number, method: string, params: object) =>
    server.child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
  send(0, 'initialize', { protocolVersion: 1, client: { name: 'corrupt', version: '1' }, capabilities: {} });
  if (documents !== undefined) send(1, 'index/add', { documents });
  QUERIES.forEach((query, i) => send(100 + i, 'retrieve', { ...query, mode: 'hybrid' }));
  const answered = () => replies.size === 1 + (documents === undefined ? 0 : 1) + QUERIES.length;
  const exitedEarly = server.exited.then(() => 'exited' as const);
  const giveUp = Date.now() + ANSWER_WITHIN_MS;
  while (!answered() && Date.now() < giveUp) {
    const state = await Promise.race([exitedEarly, new Promise((resolve) => setTimeout(resolve, 20))]);
    if (state === 'exited') break;
  }
  if (!answered() && server.child.exitCode === null) {
    server.child.kill('SIGKILL');
    await server.exited;
    throw new Error(`no answer within ${ANSWER_WITHIN_MS} ms (${replies.size} replies): ${server.stderr()}`);
  }
  server.child.stdin.end();
  const code = await server.exited;
  const answers = QUERIES.map((_, i) => replies.get(100 + i));
  if (code !== 0 || !answered() || answers.some((answer) => answer?.error !== undefined)) {
    return { refused: true, code, stderr: server.stderr() };
  }
  return { refused: false, answers: answers.map((answer) => comparable(answer?.result)) };
}

/** What must match a clean rebuild: each hit's id, in order, with its score to 4 places. */
function comparable(result: unknown): unknown {
  const { hits } = result as { hits: { id: string; score: number }[] };
  return hits.map((hit) => [hit.id, Number(hit.score.toFixed(4))]);
}

const DAMAGES = ['truncate', 'overwrite', 'empty', 'unreadable'] as const;

/** Damages one file of `dir` as `seed` picks; returns what was done, for the failure message. */
function damage(dir: string, seed: number): string {
  const next = mulberry32(seed);
  const files = readdirSync(dir).sort();
  const name = files[Math.floor(next() * files.length)]!;
  const file = join(dir, name);
  const size = statSync(file).size;
  const kind = DAMAGES[Math.floor(next() * DAMAGES.length)]!;
  if (kind === 'truncate') {
    const at = Math.floor(next() * size);
    truncateSync(file, at);
    return `${name} truncated to ${at} of ${size} bytes`;
  }
  if (kind === 'overwrite') {
    const length = Math.min(size, 1 + Math.floor(next() * 256));
    const at = Math.floor(next() * Math.max(1, size - length));
    const bytes = Buffer.from(Array.from({ length }, () => Math.floor(next() * 256)));
    const fd = openSync(file, 'r+');
    writeSync(fd, bytes, 0, length, at);
    closeSync(fd);
    return `${name}: ${length} bytes overwritten at ${at} of ${size}`;
  }
  if (kind === 'empty') {
    truncateSync(file, 0);
    return `${name} emptied`;
  }
  chmodSync(file, 0);
  return `${name} made unreadable (mode 000; root reads it anyway)`;
}

describe('the corruption matrix (damaged data files)', () => {
  let reference: unknown[];

  beforeAll(async () => {
    const written = await serve(CLEAN, DOCUMENTS);
    expect(written.refused, JSON.stringify(written)).toBe(false);
    // The reference: the same store with its derived files gone, so the server rebuilds every index from it.
    const rebuilt = join(WORK, 'rebuilt');
    cpSync(CLEAN, rebuilt, { recursive: true });
    for (const name of readdirSync(rebuilt)) if (/^dense-/.test(name)) rmSync(join(rebuilt, name));
    const outcome = await serve(rebuilt);
    if (outcome.refused) throw new Error(`the clean rebuild was refused: ${outcome.stderr}`);
    reference = outcome.answers;
  }, 120_000);

  it(
    `each of ${CASES} damaged data dirs is refused with one line, or served exactly as a clean rebuild`,
    async () => {
      const refused: string[] = [];
      for (let seed = SEED; seed < SEED + CASES; seed++) {
        const dir = join(WORK, `case-${seed}`);
        cpSync(CLEAN, dir, { recursive: true });
        const done = damage(dir, seed);
        const outcome = await serve(dir);
        const context = `seed ${seed}: ${done}`;
        if (outcome.refused) {
          // Refusing is allowed only as a start-up error does: exit 2 and a line saying why. Never a signal or a crash.
          expect(outcome.code, `${context}\n${outcome.stderr}`).toBe(2);
          expect(outcome.stderr, context).toMatch(/^rcp-server: .+$/m);
          refused.push(context);
        } else {
          expect(outcome.answers, context).toEqual(reference);
        }
        rmSync(dir, { recursive: true, force: true });
      }
      console.log(
        `corruption matrix: ${CASES} cases, ${refused.length} refused, ${CASES - refused.length} served as a clean rebuild`,
      );
    },
    60_000 + CASES * 30_000,
  );

  it('a row whose contents no longer match their sum: the server serves at once, and its scrub ends it (exit 2, one line)', async () => {
    const dir = join(WORK, 'row-sum');
    cpSync(CLEAN, dir, { recursive: true });
    const db = new Database(join(dir, 'corpus.sqlite'));
    db.prepare("UPDATE chunks SET text = 'tampered' WHERE label = (SELECT max(label) FROM chunks)").run();
    db.close();
    const server = spawnStdio({ config: { 'models.encoder': ENCODER_DIR, dataDir: dir } }, [
      'bin/rcp-server.js',
      'serve',
      '--stdio',
    ]);
    readFrames(server.child, () => undefined);
    server.child.stdin.write(
      `${JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: 1, client: { name: 'corrupt', version: '1' }, capabilities: {} } })}\n`,
    );
    expect(await server.exited).toBe(2);
    expect(server.stderr()).toMatch(
      /^rcp-server: corpus\.sqlite: chunk \d+ is damaged \(its contents do not match their sum\)/m,
    );
  }, 120_000);
});
