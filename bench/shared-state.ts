/**
 * `npm run bench -- shared-state`: the state replicas share, when what holds it fails (real processes, a real
 * PostgreSQL and a real redis-server, Debian's):
 * - rate-limited requests (nearly all refused, as an attacker's are) with Redis healthy, then frozen (SIGSTOP): p50
 *   and p99 of each, in the same run;
 * - an HTTP session shut down through one replica: milliseconds until the replica that opened it refuses it (-32001);
 * - a replica whose PostgreSQL is down at start: how fast a retrieve is refused (-32010), against a retrieve served
 *   once the store is up.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApp } from '../src/app.js';
import { registerTestMethods } from '../test/fixtures/test-methods.js';
import { HAS_POSTGRES, PostgresCluster } from '../test/helpers/postgres.js';
import { freePort, startHttpProcess, type ServerProcess } from '../test/helpers/processes.js';
import { request, testConfig } from '../test/helpers/wire.js';

const SAMPLES = 200;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function quantiles(ms: number[]): string {
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return `p50 ${at(0.5).toFixed(1)} ms, p99 ${at(0.99).toFixed(1)} ms, max ${at(1).toFixed(1)} ms (n=${ms.length})`;
}

async function post(origin: string, method: string, params: object, headers: Record<string, string> = {}) {
  const started = performance.now();
  const response = await fetch(`${origin}/rcp/${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(request(1, method, params)),
  });
  const frame = (await response.json()) as { result?: Record<string, unknown>; error?: { code: number } };
  return { frame, ms: performance.now() - started };
}

async function startRedis(): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const child = spawn('redis-server', [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
  ]);
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('Ready to accept connections')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`redis-server exited with ${code}: ${out}`)));
  });
  return { child, url: `redis://127.0.0.1:${port}` };
}

async function benchFrozenRedis(): Promise<void> {
  const redis = await startRedis();
  const key = 'bench-frozen-redis-key-0123456789';
  const app = createApp(
    testConfig({
      'limits.rateLimit': { reads: 0.5, writes: 0, models: 0 },
      'redis.url': redis.url,
      'redis.timeoutMs': 250,
      'auth.apiKeys': [{ key, scopes: ['read'] }],
    }),
    { register: registerTestMethods },
  );
  try {
    const origin = await (await app.buildHttp()).listen({ host: '127.0.0.1', port: 0 });
    const echo = () => post(origin, 'x-test/echo', { text: 'x' }, { authorization: `Bearer ${key}` });
    for (let i = 0; i < 20; i++) await echo(); // warm-up
    const sample = async () => {
      const ms: number[] = [];
      let refused = 0;
      for (let i = 0; i < SAMPLES; i++) {
        const { frame, ms: took } = await echo();
        ms.push(took);
        if (frame.error?.code === -32011) refused++;
      }
      return { ms, refused };
    };
    const healthy = await sample();
    redis.child.kill('SIGSTOP');
    const frozen = await sample().finally(() => redis.child.kill('SIGCONT'));
    console.log(`rate-limited echo, Redis healthy: ${quantiles(healthy.ms)}; ${healthy.refused} refused`);
    console.log(`rate-limited echo, Redis frozen:  ${quantiles(frozen.ms)}; ${frozen.refused} refused`);
  } finally {
    await app.close();
    redis.child.kill('SIGKILL');
  }
}

const INITIALIZE = { protocolVersion: 1, client: { name: 'bench', version: '1' }, capabilities: {} };

async function benchSessionEnd(cluster: PostgresCluster): Promise<void> {
  const start = () =>
    startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', mkdtempSync(join(tmpdir(), 'rcp-bench-'))], {
      RCP_STORE_URL: cluster.url,
    });
  const [a, b] = [await start(), await start()];
  try {
    const windows: number[] = [];
    for (let i = 0; i < 20; i++) {
      const opened = await post(a.origin, 'initialize', INITIALIZE, { 'rcp-session': 'new' });
      const session = { 'rcp-session': (opened.frame.result?._meta as { session: string }).session };
      await post(a.origin, 'ping', {}, session);
      await post(b.origin, 'shutdown', {}, session);
      const shut = performance.now();
      for (let tries = 0; tries < 1000; tries++) {
        if ((await post(a.origin, 'ping', {}, session)).frame.error?.code === -32001) break;
      }
      windows.push(performance.now() - shut);
    }
    console.log(`session shut down through B, until A refuses it: ${quantiles(windows)}`);
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
}

async function benchStoreDownAtStart(cluster: PostgresCluster): Promise<void> {
  cluster.stop();
  let replica: ServerProcess | undefined;
  try {
    replica = await startHttpProcess(
      ['serve', '--http', '127.0.0.1:0', '--data', mkdtempSync(join(tmpdir(), 'rcp-bench-'))],
      { RCP_STORE_URL: cluster.url },
      { ready: false },
    );
    const retrieve = () => post(replica!.origin, 'retrieve', { query: 'anything', k: 1, mode: 'sparse' });
    const refused: number[] = [];
    for (let i = 0; i < 50; i++) {
      const { frame, ms } = await retrieve();
      if (frame.error?.code !== -32010) throw new Error(`expected -32010, got ${JSON.stringify(frame)}`);
      refused.push(ms);
    }
    cluster.start();
    while ((await retrieve()).frame.result === undefined) await sleep(100);
    const served: number[] = [];
    for (let i = 0; i < 50; i++) served.push((await retrieve()).ms);
    console.log(`retrieve on a replica whose store is down: -32010 in ${quantiles(refused)}`);
    console.log(`the same once the store is up (served):        ${quantiles(served)}`);
  } finally {
    await replica?.stop();
  }
}

export async function benchSharedState(): Promise<void> {
  if (spawnSync('redis-server', ['--version']).status === 0) await benchFrozenRedis();
  else console.log('shared-state: no redis-server; the Redis part is skipped');
  if (!HAS_POSTGRES) return void console.log('shared-state: no postgresql; the replica parts are skipped');
  const cluster = await PostgresCluster.create();
  try {
    await benchSessionEnd(cluster);
    await benchStoreDownAtStart(cluster);
  } finally {
    cluster.destroy();
  }
}
