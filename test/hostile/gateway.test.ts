import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpProcess, type ServerProcess } from '../helpers/processes.js';
import { request, type Frame } from '../helpers/wire.js';

/**
 * A gateway (§16) in front of real engine processes, attacked where its deadlines meet its engines': a write whose
 * deadline the engine just about uses up must be answered with the truth about what was applied (§12, §13.1, §16.2);
 * an engine that accepts connections and never answers (SIGSTOPped) must not cost every query its whole deadline.
 */
const running: ServerProcess[] = [];
const dataDir = () => mkdtempSync(join(tmpdir(), 'rcp-engine-'));
const registryFile = (engines: object[]): string => {
  const file = join(mkdtempSync(join(tmpdir(), 'rcp-registry-')), 'rcp.json');
  writeFileSync(file, JSON.stringify({ engines }));
  return file;
};
type Degraded = { engine: string; code: number }[];
type Retrieved = { hits: { meta: { engine: string } }[]; _meta?: { degraded?: Degraded } };

async function start(args: string[], env: NodeJS.ProcessEnv = {}): Promise<ServerProcess> {
  const server = await startHttpProcess(args, env);
  running.push(server);
  return server;
}
afterAll(async () => {
  await Promise.all(running.map((server) => server.stop()));
});

let nextId = 1;
async function call(origin: string, method: string, params: object = {}): Promise<Frame> {
  const response = await fetch(`${origin}/rcp/${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(request(nextId++, method, params)),
  });
  return (await response.json()) as Frame;
}

/** Resolves once `server` has logged `count` answers to `method` (the request log, at debug). */
async function answeredAtLeast(server: ServerProcess, method: string, count: number): Promise<void> {
  const answered = () =>
    server
      .stderr()
      .split('\n')
      .filter((line) => line.includes('"msg":"answered"') && line.includes(`"method":"${method}"`)).length;
  for (let i = 0; i < 2400 && answered() < count; i++) await new Promise((resolve) => setTimeout(resolve, 25));
  expect(answered()).toBeGreaterThanOrEqual(count);
}

describe('a gateway write under a deadline the engine just about uses up', () => {
  let engine: ServerProcess;
  let gateway: ServerProcess;
  beforeAll(async () => {
    engine = await start(['serve', '--http', '127.0.0.1:0', '--data', dataDir()], { RCP_LOG_LEVEL: 'debug' });
    const registry = registryFile([{ id: 'e1', transport: 'http', url: `${engine.origin}/rcp` }]);
    // Fail-fast (docs/federation.md) stays out of it: every write here must reach the engine.
    gateway = await start(['gateway', '--registry', registry, '--id', 'gw', '--http', '127.0.0.1:0'], {
      RCP_FEDERATION_DOWN_AFTER: '1000',
    });
  }, 120_000);

  it('answers -32014 only when the documents were not applied (or says they may have been), else the result', async () => {
    const documents = (trial: number) =>
      Array.from({ length: 300 }, (_, i) => ({ id: `t${trial}-d${i}`, text: `trial ${trial} document ${i} on cells` }));
    // How long the write takes with time to spare, then a bisection on the deadline towards the edge where the
    // engine applies the documents right at it: the place where an answer could lie.
    let started = performance.now();
    expect((await call(gateway.origin, 'index/add', { documents: documents(0) })).error).toBeUndefined();
    let answers = 1;
    let low = 1;
    let high = Math.ceil((performance.now() - started) * 2);
    const outcomes: string[] = [];
    for (let trial = 1; trial <= 12; trial++) {
      const deadlineMs = Math.round((low + high) / 2);
      started = performance.now();
      const answer = await call(gateway.origin, 'index/add', { documents: documents(trial), _meta: { deadlineMs } });
      const tookMs = Math.round(performance.now() - started);
      // The engine has answered this write too, so what it applied is settled before it is counted.
      await answeredAtLeast(engine, 'index/add', ++answers);
      const ids = documents(trial).map((doc) => doc.id);
      const removed = await call(engine.origin, 'index/delete', { ids });
      const present = (removed.result as { deleted: number }).deleted;
      const error = answer.error as { code: number; message: string } | undefined;
      outcomes.push(
        `${deadlineMs} ms: ${error === undefined ? 'result' : error.code} in ${tookMs} ms, ${present} applied`,
      );
      if (error === undefined) {
        expect(present, outcomes.join('\n')).toBe(ids.length);
        high = deadlineMs;
      } else {
        expect(error.code, outcomes.join('\n')).toBe(-32014);
        if (!/may have been applied/.test(error.message)) expect(present, outcomes.join('\n')).toBe(0);
        low = deadlineMs;
      }
    }
  }, 300_000);
});

describe('a gateway over two engines, one of which stops answering (SIGSTOP)', () => {
  let healthy: ServerProcess;
  let hung: ServerProcess;
  let gateway: ServerProcess;
  const documents = [
    { id: 'heart', text: 'The heart pumps blood through arteries and veins.' },
    { id: 'lung', text: 'The lungs move oxygen into the blood.' },
    { id: 'brain', text: 'The brain sends signals through the nerves.' },
    { id: 'plant', text: 'Plants turn sunlight and water into sugar.' },
  ];
  beforeAll(async () => {
    [healthy, hung] = await Promise.all([
      start(['serve', '--http', '127.0.0.1:0', '--data', dataDir()]),
      start(['serve', '--http', '127.0.0.1:0', '--data', dataDir()]),
    ]);
    const registry = registryFile([
      { id: 'e1', transport: 'http', url: `${healthy.origin}/rcp` },
      { id: 'e2', transport: 'http', url: `${hung.origin}/rcp` },
    ]);
    gateway = await start(['gateway', '--registry', registry, '--id', 'gw', '--http', '127.0.0.1:0'], {
      RCP_FEDERATION_DOWN_FOR_MS: '1000',
    });
    expect((await call(gateway.origin, 'index/add', { documents })).error).toBeUndefined();
  }, 120_000);

  it('marks the hung engine down after its first timeouts and answers from the other at once, then takes it back', async () => {
    const deadlineMs = 3_000;
    const retrieve = async () => {
      const started = performance.now();
      const frame = await call(gateway.origin, 'retrieve', { query: 'blood', k: 4, _meta: { deadlineMs } });
      return { frame, ms: performance.now() - started, answer: frame.result as Retrieved };
    };
    const timings: number[] = [];
    try {
      hung.child.kill('SIGSTOP');
      for (let i = 0; i < 8; i++) {
        const { frame, ms, answer } = await retrieve();
        expect(frame.error, JSON.stringify(frame.error)).toBeUndefined();
        expect(answer.hits.length).toBeGreaterThan(0);
        expect(answer._meta?.degraded?.map((d) => d.engine)).toEqual(['e2']);
        timings.push(Math.round(ms));
      }
      // Before: every one waited out the engine's budget (about 2.7 s of the 3 s). After: the first three, then none.
      expect(
        timings.slice(3).every((ms) => ms < deadlineMs / 4),
        timings.join(', '),
      ).toBe(true);
      expect(gateway.stderr()).toContain('engine marked down; failing fast');
      const metrics = await (await fetch(`${gateway.origin}/metrics`)).text();
      expect(metrics).toMatch(/rcp_gateway_engine_down\{engine="e2"\} 1/);
      expect(metrics).toMatch(/rcp_gateway_engine_marked_down_total\{engine="e2"\} [1-9]/);
    } finally {
      hung.child.kill('SIGCONT');
    }
    // Once it answers again, a probe after the back-off brings it back into the fan-out.
    let back = false;
    for (let i = 0; i < 200 && !back; i++) {
      const { answer } = await retrieve();
      back = answer.hits.some((hit) => hit.meta.engine === 'e2') && answer._meta?.degraded === undefined;
      if (!back) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(back).toBe(true);
    expect(gateway.stderr()).toContain('engine answered its probe; marked up');
  }, 180_000);
});
