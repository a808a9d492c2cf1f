import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { threadNices } from '../../helpers/threads.js';

const SOURCE = new URL('../../../src/platform/thread-priority.ts', import.meta.url).href;

/**
 * A real worker thread that sets its own nice value to `start` (0: leaves it), then calls lowerThreadPriority(10);
 * answers its thread id and the result, and stays alive (its priority readable in /proc) until `done` is called.
 */
async function workerLowering(start: number) {
  const worker = new Worker(
    `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(SOURCE)}); })
      .then(({ lowerThreadPriority }) => {
        const { parentPort } = require('node:worker_threads');
        const tid = Number(require('node:fs').readlinkSync('/proc/thread-self').split('/').pop());
        if (${start} > 0) require('node:os').setPriority(tid, ${start});
        parentPort.postMessage({ tid, lowered: lowerThreadPriority(10) });
        parentPort.once('message', () => process.exit(0));
      });`,
    { eval: true },
  );
  const { tid, lowered } = await new Promise<{ tid: number; lowered: boolean }>((resolve) =>
    worker.once('message', resolve),
  );
  const done = async () => {
    worker.postMessage('done');
    await new Promise((resolve) => worker.once('exit', resolve));
  };
  return { tid, lowered, done };
}

describe.runIf(process.platform === 'linux')('lowerThreadPriority (docs/architecture.md §10)', () => {
  it("lowers the calling worker thread's priority alone: the process's other threads keep theirs", async () => {
    const { tid, lowered, done } = await workerLowering(0);
    expect(lowered).toBe(true);
    const nices = threadNices();
    expect(nices.get(tid)).toBe(10);
    expect(nices.get(process.pid)).toBe(0);
    await done();
  });

  it('never raises a priority: a thread already lower keeps its own', async () => {
    const { tid, lowered, done } = await workerLowering(15);
    expect(lowered).toBe(true);
    expect(threadNices().get(tid)).toBe(15);
    await done();
  });
});
