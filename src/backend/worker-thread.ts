import { Worker } from 'node:worker_threads';

/**
 * Starts the worker thread whose entry module sits at `relative` beside `base` (an `import.meta.url`). Built, the
 * entry is a .js file; under the TypeScript sources (tests, tsx) it is .ts, and the worker registers tsx's loader in
 * its own thread before importing it. The worker never keeps the process alive by itself: the transports do, and
 * exit must not wait on a worker.
 */
export function startWorker(base: string, relative: string): Worker {
  const url = new URL(base.endsWith('.ts') ? `${relative}.ts` : `${relative}.js`, base);
  const worker = url.pathname.endsWith('.ts')
    ? new Worker(
        `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(url.href)}); })`,
        { eval: true },
      )
    : new Worker(url);
  worker.unref();
  return worker;
}
