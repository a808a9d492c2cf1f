import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { untilLogged } from './children.js';

/** Turns of the event loop, counted by an immediate that queues the next, until `stop`. */
export function turnCounter(): { readonly turn: number; stop(): void } {
  let turn = 0;
  let counting = true;
  const count = () => counting && setImmediate(() => (turn++, count()));
  count();
  return {
    get turn() {
      return turn;
    },
    stop: () => (counting = false),
  };
}

/**
 * Runs `script` (node -e) as a client of `server` (listening) with arguments port, ...`args`, and a file path it
 * creates once every request is handed to the kernel. The script opens `connections` connections, logs "open" on
 * stderr, and sends once told to on stdin. That happens while this event loop is busy on purpose, so that one poll
 * finds every request there at once. Returns the client, to wait on what it logs.
 */
export async function burstAtOnce(
  server: Server,
  script: string,
  args: readonly string[],
  connections: number,
): Promise<{ child: ChildProcessWithoutNullStreams; stderr: () => string }> {
  let accepted = 0;
  server.on('connection', () => accepted++);
  const written = join(mkdtempSync(join(tmpdir(), 'rcp-burst-')), 'written');
  const port = String((server.address() as AddressInfo).port);
  const child = spawn(process.execPath, ['-e', script, port, ...args, written]);
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const client = { child, stderr: () => stderr };
  await untilLogged(client, /open/);
  while (accepted < connections) await new Promise((resolve) => setImmediate(resolve));
  child.stdin.write('go\n');
  while (!existsSync(written)) {
    // busy on purpose: the requests queue in the kernel meanwhile
  }
  return client;
}
