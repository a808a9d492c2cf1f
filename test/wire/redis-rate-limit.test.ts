import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { registerTestMethods } from '../fixtures/test-methods.js';
import { freePort } from '../helpers/processes.js';
import { connect, INITIALIZE, request, testConfig, type Connection, type Frame } from '../helpers/wire.js';

/**
 * Shared rate limits: replicas with `redis.url` spend one budget per caller, in a real Redis server
 * (Debian's redis-server, which .ci/run installs), started here on a free port. When Redis goes away, each replica
 * limits with its own buckets at once: nothing hangs and nothing goes unlimited.
 */
const HAS_REDIS = spawnSync('redis-server', ['--version']).status === 0;
const KEY = 'redis-shared-budget-key-0123456789';
/** Half a token a second: a bucket of one, refilled in 2 s, so a slow run of the test cannot refill it unseen. */
const RATES = { reads: 0.5, writes: 0, models: 0 };

let redis: ChildProcess | undefined;
let url = '';

async function startRedis(): Promise<void> {
  const port = await freePort();
  redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no']);
  await new Promise<void>((resolve, reject) => {
    let out = '';
    redis?.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('Ready to accept connections')) resolve();
    });
    redis?.once('exit', (code) => reject(new Error(`redis-server exited with ${code}: ${out}`)));
  });
  url = `redis://127.0.0.1:${port}`;
}

async function stopRedis(): Promise<void> {
  const child = redis;
  redis = undefined;
  if (child === undefined || child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

describe.skipIf(!HAS_REDIS && process.env.CI === undefined)('rate limits shared through Redis', () => {
  beforeAll(startRedis);
  afterAll(stopRedis);

  it('two HTTP replicas spend one budget per API key; a third caller has its own', async () => {
    const replica = (): App =>
      createApp(
        testConfig({
          'limits.rateLimit': RATES,
          'redis.url': url,
          'redis.prefix': 'rcp:test-http:',
          'auth.apiKeys': [
            { key: KEY, scopes: ['read'] },
            { key: `${KEY}-other`, scopes: ['read'] },
          ],
        }),
        { register: registerTestMethods },
      );
    const [a, b] = [replica(), replica()];
    try {
      const [originA, originB] = await Promise.all(
        [a, b].map(async (app) => (await app.buildHttp()).listen({ host: '127.0.0.1', port: 0 })),
      );
      const echo = async (origin: string, id: number, key = KEY): Promise<Frame> => {
        const response = await fetch(`${origin}/rcp/x-test/echo`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
          body: JSON.stringify(request(id, 'x-test/echo', { text: String(id) })),
        });
        return (await response.json()) as Frame;
      };
      // Each replica keeps its own caller sessions: every key initializes on each.
      for (const origin of [originA, originB]) {
        for (const key of [KEY, `${KEY}-other`]) {
          await fetch(`${origin}/rcp/initialize`, {
            method: 'POST',
            headers: { authorization: `Bearer ${key}` },
            body: JSON.stringify(INITIALIZE(0)),
          });
        }
      }
      const answers = [await echo(originA!, 1), await echo(originB!, 2), await echo(originA!, 3)];
      expect(answers.map((frame) => ('result' in frame ? 'ok' : (frame.error as { code: number }).code))).toEqual([
        'ok',
        -32011,
        -32011,
      ]);
      const retryAfterMs = (answers[1]!.error as { data: { retryAfterMs: number } }).data.retryAfterMs;
      expect(retryAfterMs).toBeGreaterThan(1000);
      expect(retryAfterMs).toBeLessThanOrEqual(2000);
      expect(await echo(originB!, 7, `${KEY}-other`)).toHaveProperty('result');
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('two stdio processes spend one budget; with Redis gone each limits locally, at once', async () => {
    const config = { 'limits.rateLimit': RATES, 'redis.url': url, 'redis.prefix': 'rcp:test-stdio:' };
    const connections: Connection[] = [await connect('stdio', { config }), await connect('stdio', { config })];
    try {
      for (const connection of connections) await connection.exchange(INITIALIZE(0));
      const echo = async (connection: Connection, id: number): Promise<string | number> => {
        connection.send(request(id, 'x-test/echo', { text: 'x' }));
        const frame = await connection.reply(id);
        return 'result' in frame ? 'ok' : (frame.error as { code: number }).code;
      };
      const [one, two] = connections as [Connection, Connection];
      expect([await echo(one, 1), await echo(two, 2), await echo(one, 3)]).toEqual(['ok', -32011, -32011]);

      await stopRedis();
      const started = Date.now();
      // Each process's own buckets take over: a full local bucket, then -32011 again.
      expect([await echo(two, 10), await echo(two, 11), await echo(one, 12)]).toEqual(['ok', -32011, 'ok']);
      expect(Date.now() - started).toBeLessThan(3000);
    } finally {
      await Promise.all(connections.map((connection) => connection.close()));
    }
  });
});
