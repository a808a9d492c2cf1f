#!/usr/bin/env node
// `npm run test:stress`: the whole vitest suite RUNS times in a row (default 3) while one busy thread per core
// competes for the CPU, as on a shared CI machine with other work running. It stops at the first failing run.
// A suite that passes only on an idle machine fails landings at random; this is the check that it does not.
import { spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';

const runs = Number(process.env.RUNS ?? 3);
const burners = Number(process.env.BURNERS ?? availableParallelism());
const load = Array.from({ length: burners }, () => new Worker('for (;;) Math.sqrt(Math.random());', { eval: true }));
console.log(`test:stress: ${runs} runs of the suite beside ${burners} CPU burner thread(s)`);

let failed = 0;
for (let run = 1; run <= runs && failed === 0; run++) {
  const started = Date.now();
  const vitest = spawnSync('npx', ['vitest', 'run', ...process.argv.slice(2)], { stdio: 'inherit' });
  const seconds = ((Date.now() - started) / 1000).toFixed(0);
  console.log(`test:stress: run ${run} of ${runs} ${vitest.status === 0 ? 'passed' : 'FAILED'} in ${seconds} s`);
  if (vitest.status !== 0) failed = run;
}
await Promise.all(load.map((worker) => worker.terminate()));
console.log(failed === 0 ? `test:stress: ${runs} of ${runs} runs passed` : `test:stress: run ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
