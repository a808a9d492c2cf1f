import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../../src/app.js';
import type { Channel, Frame } from '../../../src/client/channel.js';
import { Engine, type EngineSpec } from '../../../src/gateway/engine.js';
import { registerFederation } from '../../../src/gateway/federation.js';
import { RpcError } from '../../../src/protocol/errors.js';
import { testConfig } from '../../helpers/wire.js';

/**
 * docs/architecture.md §6: exactly one place turns an unknown throw into -32603, the session's dispatch, which logs it
 * with its stack. A defect of ours on an engine's call path (a TypeError) is no engine's failure: it must not be
 * retried, make the engine "skipped" in a federated retrieve, or move an embed on to the next engine; it must reach
 * that one place.
 */

const BUG = "Cannot read properties of undefined (reading 'hits')";
type Behaviour = (frame: Frame) => Frame;

/** A channel answering `initialize` with the given capabilities, and every other request with `behaviour`. */
class FakeChannel implements Channel {
  readonly sent: string[] = [];
  constructor(
    private readonly capabilities: Record<string, unknown>,
    private readonly behaviour: Behaviour,
  ) {}

  send(frame: Frame): Promise<Frame> {
    const method = String(frame.method);
    if (method === 'initialize') {
      const result = { protocolVersion: 1, server: { name: 'engine', version: '1' }, capabilities: this.capabilities };
      return Promise.resolve({ jsonrpc: '2.0', id: frame.id, result });
    }
    this.sent.push(method);
    // Thrown the way a defect in our client code would be: synchronously inside the call path, rejecting the send.
    return new Promise((resolve) => resolve(this.behaviour(frame)));
  }

  notify(): void {}

  close(): Promise<void> {
    return Promise.resolve();
  }
}

const CAPABILITIES = {
  retrieve: { maxK: 100 },
  embed: { dimension: 2, identity: 'same' },
};

const bug: Behaviour = () => {
  throw new TypeError(BUG);
};
const unavailable: Behaviour = () => {
  throw RpcError.backendUnavailable('the engine is restarting', 10);
};
const answers: Behaviour = (frame) => ({
  jsonrpc: '2.0',
  id: frame.id,
  result: frame.method === 'embed' ? { vectors: [[1, 0]] } : { hits: [{ id: 'b1', score: 0.5 }] },
});

function spec(id: string, priority: number): EngineSpec {
  return { id, transport: 'http', url: 'http://engine.invalid', weight: 1, required: false, priority, headers: {} };
}

interface Gateway {
  app: App;
  channels: { a: FakeChannel; b: FakeChannel };
  logged: Record<string, unknown>[];
}

const opened: App[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((app) => app.close()));
});

/** The gateway's methods over two engines (`a` first by priority), served by an app whose log lines are kept. */
async function gateway(a: Behaviour, b: Behaviour): Promise<Gateway> {
  const logged: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean))
        logged.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const logger = pino({ level: 'info' }, sink);
  const channels = { a: new FakeChannel(CAPABILITIES, a), b: new FakeChannel(CAPABILITIES, b) };
  const engines = [
    new Engine(spec('a', 2), { name: 'gw', version: '1' }, logger, channels.a),
    new Engine(spec('b', 1), { name: 'gw', version: '1' }, logger, channels.b),
  ];
  await Promise.all(engines.map((engine) => engine.connect(1000)));
  const settings = {
    id: 'gw',
    depth: 3,
    fusion: { method: 'rrf' as const, rrfK: 60 },
    fusionReserveMs: 50,
    attempts: 3,
  };
  const app = createApp(testConfig({ 'models.reranker': 'none' }), {
    logger,
    methods: (registry) => registerFederation(registry, engines, settings),
  });
  opened.push(app);
  return { app, channels, logged };
}

async function ask(app: App, method: string, params: object): Promise<Record<string, unknown>> {
  const session = app.createSession({ implicit: true });
  return (await session.handle({ jsonrpc: '2.0', id: 1, method, params })) as unknown as Record<string, unknown>;
}

const RETRIEVE = { query: 'q', k: 5 };
const EMBED = { inputs: ['x'] };

/** The dispatch's own log line for a defect: error level, the method, the original error with its stack. */
function defectLogged(logged: Record<string, unknown>[], method: string): void {
  const lines = logged.filter((line) => line.msg === 'method failed');
  expect(lines).toHaveLength(1);
  const [line] = lines as [{ level: number; method: string; err: { type: string; message: string; stack: string } }];
  expect(line.level).toBe(50);
  expect(line.method).toBe(method);
  expect(line.err).toMatchObject({ type: 'TypeError', message: BUG });
  expect(line.err.stack).toContain('TypeError');
}

function bareInternalError(reply: Record<string, unknown>): void {
  expect(reply.error).toEqual({ code: -32603, message: 'internal error', data: { retryable: true } });
  // §12: nothing of the defect reaches the wire.
  expect(JSON.stringify(reply)).not.toContain('TypeError');
  expect(JSON.stringify(reply)).not.toContain('reading');
}

describe('docs/architecture.md §6 a defect on an engine call path reaches the one place that makes -32603', () => {
  it('§16.2 retrieve: the engine is not skipped, the call not retried; the query is -32603, logged with its stack', async () => {
    const { app, channels, logged } = await gateway(bug, answers);
    const reply = await ask(app, 'retrieve', RETRIEVE);
    bareInternalError(reply);
    expect(channels.a.sent).toEqual(['retrieve']);
    defectLogged(logged, 'retrieve');
  });

  it('§16 embed: a defect is not a reason to fail over to the next engine; -32603, logged with its stack', async () => {
    const { app, channels, logged } = await gateway(bug, answers);
    const reply = await ask(app, 'embed', EMBED);
    bareInternalError(reply);
    expect(channels.a.sent).toEqual(['embed']);
    expect(channels.b.sent).toEqual([]);
    defectLogged(logged, 'embed');
  });

  it('§16.2 an engine failure (-32010) is still skipped and noted, and nothing is logged as a defect', async () => {
    const { app, logged } = await gateway(unavailable, answers);
    const reply = await ask(app, 'retrieve', RETRIEVE);
    const result = reply.result as { hits: { id: string }[]; usage: { notes: string[] } };
    expect(result.hits.map((hit) => hit.id)).toEqual(['b1']);
    expect(result.usage.notes).toContain('engine a skipped: -32010 backend unavailable');
    expect(logged.filter((line) => line.msg === 'method failed')).toEqual([]);
  });

  it('§16 an engine failure (-32010) still fails embed over to the next engine', async () => {
    const { app, channels, logged } = await gateway(unavailable, answers);
    const reply = await ask(app, 'embed', EMBED);
    expect(reply.result).toEqual({ vectors: [[1, 0]] });
    expect(channels.b.sent).toEqual(['embed']);
    expect(logged.filter((line) => line.msg === 'method failed')).toEqual([]);
  });
});
