import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { registerTestMethods } from '../fixtures/test-methods.js';
import { track, until } from '../helpers/children.js';
import { freePort } from '../helpers/processes.js';
import { connect, INITIALIZE, request, testConfig, type Connection, type Frame } from '../helpers/wire.js';

/**
 * Shared rate limits: replicas with `redis.url` spend one budget per caller, in a real Redis server
 * (Debian's redis-server, which .ci/run installs), started here on a free port. When Redis goes away, each replica
 * limits with its own buckets at once: nothing hangs and nothing goes unlimited.
 */
const HAS_REDIS = spawnSync('redis-server', ['--version']).status === 0;
const KEY = 'redis-shared-budget-key-0123456789';
const MONITOR = 'redis-monitor-key-0123456789abcdef';
/** Half a token a second: a bucket of one, refilled in 2 s, so a slow run of the test cannot refill it unseen. */
const RATES = { reads: 0.5, writes: 0, models: 0 };

let redis: ChildProcess | undefined;
let url = '';

async function startRedis(): Promise<void> {
  const port = await freePort();
  // Tracked at once: ended when the file's tests are done, even if a test stopped (SIGSTOP) it and then failed.
  redis = track(
    spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no']),
  );
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

describe.skipIf(!HAS_REDIS && process.env.CI === undefined)('rate limits while Redis is frozen', () => {
  beforeAll(startRedis);
  afterAll(stopRedis);

  it('a frozen Redis (SIGSTOP) costs one timeout, not one per request; local limits show in /metrics until SIGCONT', async () => {
    const server = redis!;
    /** Long enough that a request waiting for a frozen Redis cannot pass for a fast one on a loaded machine. */
    const TIMEOUT_MS = 1_000;
    let logged = '';
    const sink = new Writable({ write: (chunk: Buffer, _encoding, done) => ((logged += chunk.toString()), done()) });
    const keys = ['a', 'b', 'c'].map((name) => `${KEY}-${name}`);
    const replica = (): App =>
      createApp(
        testConfig({
          'limits.rateLimit': RATES,
          'redis.url': url,
          'redis.prefix': 'rcp:test-frozen:',
          'redis.timeoutMs': TIMEOUT_MS,
          'auth.apiKeys': [...keys.map((key) => ({ key, scopes: ['read'] })), { key: MONITOR, scopes: ['monitor'] }],
        }),
        { register: registerTestMethods, logger: pino({ level: 'info' }, sink) },
      );
    const [a, b] = [replica(), replica()];
    try {
      const [originA, originB] = await Promise.all(
        [a, b].map(async (app) => (await app.buildHttp()).listen({ host: '127.0.0.1', port: 0 })),
      );
      const echo = async (origin: string, key: string): Promise<{ answer: string | number; ms: number }> => {
        const started = performance.now();
        const response = await fetch(`${origin}/rcp/x-test/echo`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
          body: JSON.stringify(request(1, 'x-test/echo', { text: 'x' })),
        });
        const frame = (await response.json()) as Frame;
        const answer = 'result' in frame ? 'ok' : (frame.error as { code: number }).code;
        return { answer, ms: performance.now() - started };
      };
      const fallback = async (origin: string): Promise<string | undefined> => {
        const response = await fetch(`${origin}/metrics`, { headers: { authorization: `Bearer ${MONITOR}` } });
        return /^rcp_rate_limit_store_fallback (\S+)$/m.exec(await response.text())?.[1];
      };
      const [first, second, third] = keys as [string, string, string];
      expect([(await echo(originA!, first)).answer, (await echo(originB!, first)).answer]).toEqual(['ok', -32011]);
      expect(await fallback(originA!)).toBe('0');

      server.kill('SIGSTOP');
      const frozen: { answer: string | number; ms: number }[] = [];
      let whileFrozen: string | undefined;
      try {
        for (let i = 0; i < 20; i++) frozen.push(await echo(originA!, second));
        whileFrozen = await fallback(originA!);
      } finally {
        server.kill('SIGCONT');
      }
      // Fast: at most the first waited for Redis's answer (a frozen Redis cost each one TIMEOUT_MS before)...
      expect(frozen.filter((sample) => sample.ms >= TIMEOUT_MS).length).toBeLessThanOrEqual(1);
      const ms = frozen.map((sample) => sample.ms).sort((x, y) => x - y);
      expect(ms[ms.length >> 1]).toBeLessThan(TIMEOUT_MS / 2);
      // ...and limited all the same, by this replica's own bucket (a full one: one answer, then refusals), as
      // /metrics says.
      expect(frozen.map((sample) => sample.answer)).toEqual(['ok', ...Array<number>(19).fill(-32011)]);
      expect(whileFrozen).toBe('1');

      // Once Redis answers again the replica says so and spends the shared budget: a caller new to both replicas
      // gets one answer between them (each replica's own bucket would give it one on each).
      await until(async () => (await fallback(originA!)) === '0', 'the replica back on Redis', { intervalMs: 50 });
      expect([(await echo(originA!, third)).answer, (await echo(originB!, third)).answer]).toEqual(['ok', -32011]);
      const lines = logged.split('\n').filter((line) => /Redis rate-limit store/.test(line));
      expect(lines.map((line) => (JSON.parse(line) as { level: number }).level)).toEqual([40, 30]);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});
