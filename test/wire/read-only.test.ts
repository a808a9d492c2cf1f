import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { INITIALIZE, readFrames, request, ROOT, spawnStdio } from '../helpers/wire.js';

/**
 * §15.3 read-only serving: a data dir served with `index.writable: false` is never written — not its store, not its
 * index files, not its lock — so it can sit on a read-only filesystem. Where this machine lets the test mount one
 * (root), the dir is served from a read-only tmpfs; everywhere, the dir must be byte-for-byte as it was.
 */
const ENCODER_DIR = join(ROOT, 'models', 'use-lite');
const WORK = mkdtempSync(join(tmpdir(), 'rcp-read-only-'));
const mounts: string[] = [];
afterAll(() => {
  for (const mount of mounts) execFileSync('umount', [mount]);
  rmSync(WORK, { recursive: true, force: true });
});

type Reply = { id: number; result?: { hits?: { id: string }[] }; error?: { code: number } };

/** One NDJSON line. */
const line = (frame: object) => `${JSON.stringify(frame)}\n`;

/** Runs a stdio server on `dir` with `env`, sends `calls` after initialize, and returns the replies and exit code. */
async function session(dir: string, writable: boolean, calls: [string, object][]) {
  const server = spawnStdio({ config: { 'models.encoder': ENCODER_DIR, dataDir: dir, 'index.writable': writable } }, [
    'bin/rcp-server.js',
    'serve',
    '--stdio',
  ]);
  const replies = new Map<number, Reply>();
  readFrames(server.child, (frame) => replies.set((frame as Reply).id, frame as Reply));
  const frames = [INITIALIZE(0), ...calls.map(([method, params], i) => request(i + 1, method, params))];
  for (const frame of frames) server.child.stdin.write(line(frame));
  while (replies.size < calls.length + 1 && server.child.exitCode === null)
    await new Promise((resolve) => setTimeout(resolve, 20));
  server.child.stdin.end();
  return { replies, code: await server.exited, stderr: server.stderr() };
}

/** Every file's name, size and modification time: what "nothing was written" compares. */
const snapshot = (dir: string) =>
  readdirSync(dir)
    .sort()
    .map((name) => {
      const { size, mtimeMs } = statSync(join(dir, name));
      return [name, size, mtimeMs];
    });

/** A read-only copy of `dir`: a read-only tmpfs where mounting is allowed, else the copy itself. */
function readOnlyCopy(dir: string): { path: string; mounted: boolean } {
  const target = join(WORK, 'mounted');
  mkdirSync(target);
  try {
    execFileSync('mount', ['-t', 'tmpfs', 'none', target], { stdio: 'ignore' });
  } catch {
    cpSync(dir, target, { recursive: true });
    return { path: target, mounted: false };
  }
  mounts.push(target);
  cpSync(dir, target, { recursive: true });
  execFileSync('mount', ['-o', 'remount,ro', target]);
  return { path: target, mounted: true };
}

describe('§15.3 read-only serving (index.writable: false)', () => {
  it('serves a data dir without writing anything to it, on a read-only filesystem where one can be mounted', async () => {
    const dir = join(WORK, 'data');
    const documents = [
      { id: 'heart', text: 'The heart pumps blood.' },
      { id: 'lung', text: 'The lungs move air.' },
    ];
    const written = await session(dir, true, [['index/add', { documents }]]);
    expect(written.code, written.stderr).toBe(0);
    const { path, mounted } = readOnlyCopy(dir);
    const before = snapshot(path);
    const served = await session(path, false, [
      ['retrieve', { query: 'heart blood', k: 1 }],
      ['index/add', { documents: [{ id: 'x', text: 'refused' }] }],
    ]);
    expect(served.code, `${served.stderr} (read-only mount: ${mounted})`).toBe(0);
    expect(served.replies.get(1)?.result?.hits?.map((hit) => hit.id)).toEqual(['heart#0']);
    expect(served.replies.get(2)?.error?.code).toBe(-32003);
    expect(snapshot(path)).toEqual(before);
  });

  it('read-only servers share a dir with each other and with a writer, and serve its writes (docs/architecture.md §5)', async () => {
    const dir = join(WORK, 'shared');
    expect((await session(dir, true, [['index/add', { documents: [{ id: 'a', text: 'alpha' }] }]])).code).toBe(0);
    const reader = spawnStdio({ config: { 'models.encoder': ENCODER_DIR, dataDir: dir, 'index.writable': false } }, [
      'bin/rcp-server.js',
      'serve',
      '--stdio',
    ]);
    try {
      // The server opens its store, and takes the dir's (shared) lock, before it reads its first frame: once the
      // reader answers a ping, it holds the lock, however long its start took.
      const answered = new Map<number, Reply>();
      readFrames(reader.child, (frame) => answered.set((frame as Reply).id, frame as Reply));
      const ask = async (id: number, method: string, params: object) => {
        reader.child.stdin.write(line(request(id, method, params)));
        while (!answered.has(id)) {
          if (reader.child.exitCode !== null) throw new Error(`the reader exited: ${reader.stderr()}`);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        return answered.get(id)!;
      };
      reader.child.stdin.write(line(INITIALIZE(0)));
      await ask(1, 'ping', {});
      expect((await session(dir, false, [['ping', {}]])).code).toBe(0);
      const writer = await session(dir, true, [['index/add', { documents: [{ id: 'b', text: 'beta' }] }]]);
      expect(writer.code, writer.stderr).toBe(0);
      // The reader follows the writer's write within index.followMs.
      let id = 2;
      const served = () => ask(id++, 'retrieve', { query: 'beta', k: 1, mode: 'sparse' });
      let hits = (await served()).result?.hits;
      while (hits?.[0]?.id !== 'b#0') hits = (await served()).result?.hits;
    } finally {
      reader.child.stdin.end();
      await reader.exited;
    }
  });
});
