import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readFrames, spawnStdio } from '../helpers/wire.js';
import { ENCODER_DIR } from './corpus.js';

/**
 * A server killed (-9) on a disk that has since filled up starts again and serves what it holds: reads need no
 * space, and a write is refused saying nothing was applied (§12: -32010), never a process that will not start.
 * The disk is a small tmpfs of its own (mounting needs root, as CI runs; elsewhere the test is skipped, saying so).
 */
const MOUNT = mkdtempSync(join(tmpdir(), 'rcp-full-disk-'));
const mounted = (() => {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', MOUNT], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();
afterAll(() => {
  if (mounted) execFileSync('umount', ['-l', MOUNT]);
  rmSync(MOUNT, { recursive: true, force: true });
});

type Answer = { id: number; result?: Record<string, unknown>; error?: { code: number; message: string } };

/** A stdio server on `dir`: call() sends a request and resolves with its answer. */
function serve(dir: string) {
  const server = spawnStdio({ config: { 'models.encoder': ENCODER_DIR, dataDir: dir } }, [
    'bin/rcp-server.js',
    'serve',
    '--stdio',
  ]);
  const waiting = new Map<number, (answer: Answer) => void>();
  readFrames(server.child, (frame) => {
    const answer = frame as Answer;
    waiting.get(answer.id)?.(answer);
  });
  let next = 1;
  const call = (method: string, params: object = {}) =>
    new Promise<Answer>((resolve) => {
      const id = next++;
      waiting.set(id, resolve);
      server.child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    });
  const open = () =>
    call('initialize', { protocolVersion: 1, client: { name: 'full-disk', version: '1' }, capabilities: {} });
  return { ...server, call, open };
}

/** Fills the filesystem holding `dir` to its last byte. */
function fill(dir: string): void {
  const chunk = Buffer.alloc(64 * 1024, 1);
  for (let i = 0; ; i++) {
    try {
      writeFileSync(join(dir, `filler-${i}`), chunk);
    } catch {
      break;
    }
  }
  for (let size = 32 * 1024; size >= 1; size >>= 1) {
    try {
      writeFileSync(join(dir, `filler-small-${size}`), Buffer.alloc(size, 1));
    } catch {
      // this size no longer fits; try a smaller one
    }
  }
}

describe.skipIf(!mounted)('a full disk after kill -9', () => {
  it('the server starts again, serves what it holds, and refuses writes saying nothing was applied', async () => {
    const dir = join(MOUNT, 'data');
    mkdirSync(dir);
    const first = serve(dir);
    expect((await first.open()).result).toBeDefined();
    const documents = Array.from({ length: 20 }, (_, i) => ({ id: `d${i}`, text: `document ${i} about cells` }));
    expect((await first.call('index/add', { documents })).result).toMatchObject({ ids: documents.map((d) => d.id) });
    first.child.kill('SIGKILL');
    await first.exited;
    fill(MOUNT);

    const second = serve(dir);
    const opened = await Promise.race([second.open(), second.exited.then((code) => ({ exited: code }))]);
    expect(opened, second.stderr()).toMatchObject({ result: { protocolVersion: 1 } });
    const found = await second.call('retrieve', { query: 'document 7 about cells', k: 3 });
    expect(found.result?.hits, JSON.stringify(found)).toEqual(
      expect.arrayContaining([expect.objectContaining({ id: expect.stringContaining('d7') })]),
    );
    const refused = await second.call('index/add', { documents: [{ id: 'late', text: 'x '.repeat(100_000) }] });
    expect(refused.error?.code, JSON.stringify(refused)).toBe(-32010);
    expect(JSON.stringify(refused.error)).toContain('nothing was applied');
    const after = await second.call('retrieve', { query: 'document 7 about cells', k: 3 });
    expect(after.result).toBeDefined();
    second.child.kill('SIGKILL');
    await second.exited;
  });
});
