/**
 * `npm run bench -- units`: what §7.7.2 units and quotes cost a retrieve (docs/retrieve.md). SciFact's training
 * queries run in-process through `retrieve` (hybrid, k 10) on a data dir holding SciFact (RCP_BENCH_DATA, made by
 * `rcp-server ingest --data DIR .../scifact/corpus.jsonl`; else one is ingested into a temporary dir first, about a
 * minute): p50 and p95 per unit with quotes on (the default), and for `chunk` against the same server with
 * `retrieve.quotes` off, alternating three times so drift on a noisy machine falls on both, each server warmed
 * first by the same queries, untimed. Ratios are to
 * `chunk` without quotes, in the same run.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openQuietApp } from '../src/cli/startup.js';
import { Requester, SessionChannel } from '../src/client/requester.js';
import { scifactPath, trainQueries } from './scifact.js';

const ROUNDS = 3;
const QUERIES = 200;

interface Run {
  readonly label: string;
  readonly quotes: boolean;
  readonly unit: string;
}

export async function benchUnits(): Promise<void> {
  const given = process.env.RCP_BENCH_DATA;
  const data = given ?? mkdtempSync(join(tmpdir(), 'rcp-bench-units-'));
  try {
    if (given === undefined) ingestScifact(data);
    const queries = trainQueries()
      .slice(0, QUERIES)
      .map((query) => query.text);
    const runs: Run[] = [
      { label: 'chunk, no quotes', quotes: false, unit: 'chunk' },
      { label: 'chunk', quotes: true, unit: 'chunk' },
      { label: 'passage', quotes: true, unit: 'passage' },
      { label: 'page', quotes: true, unit: 'page' },
      { label: 'document', quotes: true, unit: 'document' },
    ];
    const latencies = new Map(runs.map((run) => [run.label, [] as number[]]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const quotes of [false, true]) {
        const { app } = await openQuietApp(undefined, { dataDir: data, 'retrieve.quotes': quotes });
        try {
          await app.corpus?.ready;
          const rcp = new Requester(new SessionChannel(app.createSession()));
          await rcp.call('initialize', { protocolVersion: 1, client: { name: 'bench', version: '1' } });
          await timed(rcp, queries, 'chunk'); // warm: caches and the model's first batches, untimed
          for (const run of runs.filter((candidate) => candidate.quotes === quotes))
            latencies.get(run.label)!.push(...(await timed(rcp, queries, run.unit)));
        } finally {
          await app.close();
        }
      }
    }
    report(runs, latencies);
  } finally {
    if (given === undefined) rmSync(data, { recursive: true, force: true });
  }
}

function ingestScifact(data: string): void {
  console.log(`ingesting SciFact into ${data} (RCP_BENCH_DATA names a data dir that holds it already)`);
  const bin = fileURLToPath(new URL('../bin/rcp-server.js', import.meta.url));
  execFileSync(process.execPath, [bin, 'ingest', '--data', data, scifactPath('corpus.jsonl')], { stdio: 'inherit' });
}

async function timed(rcp: Requester, queries: readonly string[], unit: string): Promise<number[]> {
  const latencies: number[] = [];
  for (const query of queries) {
    const started = performance.now();
    await rcp.call('retrieve', { query, k: 10, unit });
    latencies.push(performance.now() - started);
  }
  return latencies;
}

function report(runs: readonly Run[], latencies: ReadonlyMap<string, number[]>): void {
  const quantile = (values: number[], q: number) => [...values].sort((a, b) => a - b)[Math.floor(q * values.length)]!;
  const base = latencies.get(runs[0]!.label)!;
  const [p50, p95] = [quantile(base, 0.5), quantile(base, 0.95)];
  console.log(`retrieve (hybrid, k 10) on SciFact, ${QUERIES} queries × ${ROUNDS} rounds, in-process`);
  console.log('  unit, quotes            p50 ms   p95 ms   p50 ×   p95 ×');
  for (const run of runs) {
    const values = latencies.get(run.label)!;
    const [a, b] = [quantile(values, 0.5), quantile(values, 0.95)];
    console.log(
      `  ${run.label.padEnd(22)} ${a.toFixed(1).padStart(7)} ${b.toFixed(1).padStart(8)} ` +
        `${(a / p50).toFixed(2).padStart(7)} ${(b / p95).toFixed(2).padStart(7)}`,
    );
  }
}
