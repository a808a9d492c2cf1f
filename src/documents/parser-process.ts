import { Worker } from 'node:worker_threads';
import { parseBytes, type ParseBounds } from './parse.js';
import { DocumentRefusal, type DocumentFormat, type ParsedDocument } from './parsed.js';

/**
 * A parser process's entry (parser-pool.ts starts it): one request at a time, answered with the document or the reason
 * it is none. The request comes over IPC, the file's `length` bytes after it on stdin, read into one buffer of that
 * size (a file sent inside an IPC message would be copied and gathered several times over on the way). It ends with
 * its parent: a server killed outright leaves no parser behind.
 */
export interface ParseRequest {
  readonly length: number;
  readonly format: DocumentFormat;
  readonly bounds: ParseBounds;
}

export type ParseReply =
  | { readonly ok: true; readonly document: ParsedDocument }
  | { readonly ok: false; readonly refused: boolean; readonly error: string };

/** Bytes of stdin not yet taken by a request (they may come before the request that owns them). */
const arrived: Buffer[] = [];
let wanted: { buffer: Buffer; filled: number; done: (bytes: Buffer) => void } | undefined;

process.on('disconnect', () => process.exit(0));
outliveNoParent();
process.stdin.on('data', (chunk: Buffer) => {
  arrived.push(chunk);
  fill();
});
process.on('message', (request: ParseRequest) => {
  void new Promise<Buffer>((done) => {
    wanted = { buffer: Buffer.allocUnsafe(request.length), filled: 0, done };
    fill();
  })
    .then((bytes) => answer(bytes, request))
    .then((reply) => process.send?.(reply));
});

function fill(): void {
  while (wanted !== undefined && (wanted.filled < wanted.buffer.length || wanted.buffer.length === 0)) {
    const chunk = arrived.shift();
    if (chunk === undefined && wanted.buffer.length > 0) return;
    if (chunk !== undefined) {
      const taken = Math.min(chunk.length, wanted.buffer.length - wanted.filled);
      chunk.copy(wanted.buffer, wanted.filled, 0, taken);
      wanted.filled += taken;
      if (taken < chunk.length) arrived.unshift(chunk.subarray(taken));
    }
    if (wanted.filled === wanted.buffer.length) {
      const { buffer, done } = wanted;
      wanted = undefined;
      done(buffer);
    }
  }
}

async function answer(bytes: Buffer, request: ParseRequest): Promise<ParseReply> {
  try {
    return { ok: true, document: await parseBytes(bytes, request.format, request.bounds) };
  } catch (error) {
    const refused = error instanceof DocumentRefusal;
    return { ok: false, refused, error: error instanceof Error ? error.message : String(error) };
  }
}

/**
 * Ends this process once its parent is gone, even in the middle of a parse that never yields (a pathological regex or
 * YAML document holds the event loop, so 'disconnect' would wait for it): a thread of its own looks at the parent's
 * pid every 200 ms, and kills the process when it has changed (the orphan was re-parented).
 */
function outliveNoParent(): void {
  const watchdog = new Worker(
    `const { workerData: parent } = require('node:worker_threads');
     setInterval(() => { if (process.ppid !== parent) process.kill(process.pid, 'SIGKILL'); }, 200);`,
    { eval: true, workerData: process.ppid },
  );
  watchdog.unref();
}
