import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { threadNices } from '../../helpers/threads.js';

const SOURCE = new URL('../../../src/platform/thread-priority.ts', import.meta.url).href;

describe.runIf(process.platform === 'linux')('lowerThreadPriority (docs/architecture.md §10)', () => {
  it("lowers the calling worker thread's priority alone: the process's other threads keep theirs", async () => {
    const worker = new Worker(
      `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(SOURCE)}); })
        .then(({ lowerThreadPriority }) => {
          const { parentPort } = require('node:worker_threads');
          const tid = Number(require('node:fs').readlinkSync('/proc/thread-self').split('/').pop());
          parentPort.postMessage({ tid, lowered: lowerThreadPriority(10) });
          parentPort.once('message', () => process.exit(0));
        });`,
      { eval: true },
    );
    const { tid, lowered } = await new Promise<{ tid: number; lowered: boolean }>((resolve) =>
      worker.once('message', resolve),
    );
    expect(lowered).toBe(true);
    const nices = threadNices();
    expect(nices.get(tid)).toBe(10);
    expect(nices.get(process.pid)).toBe(0);
    worker.postMessage('done');
    await new Promise((resolve) => worker.once('exit', resolve));
  });
});
