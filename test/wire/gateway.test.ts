import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shardOf } from '../../src/gateway/federation.js';
import { assertValidFrame } from '../helpers/schema.js';
import { until } from '../helpers/children.js';
import { freePort, startHttpProcess, type ServerProcess } from '../helpers/processes.js';
import { readFrames, request, spawnStdio, type Frame } from '../helpers/wire.js';

/**
 * `rcp-server gateway` (§16) over real engine processes — this project's own server over stdio and HTTP — behind real
 * gateway processes: fan-out and fusion, catalog/list, sharded writes, a gateway federating a gateway, a cycle, a slow
 * engine, a dead engine and a required dead engine. Every frame is checked against the project's frame schemas.
 */
const ENGINE = ['node', 'bin/rcp-server.js', 'serve', '--stdio'];
const DOCUMENTS = [
  { id: 'owl', text: 'Owls hunt small animals at night with silent wings.' },
  { id: 'heart', text: 'The heart pumps blood through arteries and veins.' },
  { id: 'lung', text: 'The lungs move oxygen into the blood.' },
  { id: 'star', text: 'Stars form in clouds of gas and dust.' },
  { id: 'plant', text: 'Plants turn sunlight and water into sugar.' },
  { id: 'brain', text: 'The brain sends signals through the nerves.' },
];
type Hit = { id: string; score: number; meta: { engine: string; engineRank: number; engineScore: number } };
type Usage = { candidates: number; latencyMs: number; notes?: string[] };
type RetrieveResult = { hits: Hit[]; usage: Usage; _meta?: { degraded?: { engine: string; code: number }[] } };

const dataDir = () => mkdtempSync(join(tmpdir(), 'rcp-engine-'));
const registryFile = (engines: object[]): string => {
  const file = join(mkdtempSync(join(tmpdir(), 'rcp-registry-')), 'rcp.json');
  writeFileSync(file, JSON.stringify({ engines }));
  return file;
};
const stdioEngine = (id: string, dir: string, extra: object = {}) => ({
  id,
  transport: 'stdio',
  command: [...ENGINE, '--data', dir],
  ...extra,
});

let nextId = 1;
async function call(origin: string, method: string, params: object = {}): Promise<Frame> {
  const id = nextId++;
  const response = await fetch(`${origin}/rcp/${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(request(id, method, params)),
  });
  const frame = (await response.json()) as Frame;
  assertValidFrame(frame, method);
  return frame;
}
const result = <T>(frame: Frame): T => {
  if (frame.error !== undefined) throw new Error(JSON.stringify(frame.error));
  return frame.result as T;
};
/** A write the test depends on: it fails the test unless acknowledged. */
const add = async (origin: string, documents: object[]) =>
  result<{ ids: string[] }>(await call(origin, 'index/add', { documents }));

const running: ServerProcess[] = [];
async function start(args: string[], env: NodeJS.ProcessEnv = {}, ready = true): Promise<ServerProcess> {
  const server = await startHttpProcess(args, { ...env }, { ready });
  running.push(server);
  return server;
}
const gateway = (id: string, registry: string, port = 0, env: NodeJS.ProcessEnv = {}, ready = true) =>
  start(['gateway', '--registry', registry, '--id', id, '--http', `127.0.0.1:${port}`], env, ready);
afterAll(async () => {
  await Promise.all(running.map((server) => server.stop()));
});

describe('a gateway over a stdio engine and an HTTP engine', () => {
  let httpEngine: ServerProcess;
  let gw: ServerProcess;
  beforeAll(async () => {
    httpEngine = await start(['serve', '--http', '127.0.0.1:0', '--data', dataDir()]);
    gw = await gateway(
      'gw',
      registryFile([stdioEngine('e1', dataDir()), { id: 'e2', transport: 'http', url: `${httpEngine.origin}/rcp` }]),
    );
  });

  it('advertises the union of its engines with retrieve fused and catalog, and lists the engines (§7.13, §16.4)', async () => {
    const info = result<{ server: { name: string }; capabilities: Record<string, unknown> }>(
      await call(gw.origin, 'info'),
    );
    expect(info.server.name).toBe('gw');
    expect(Object.keys(info.capabilities)).toEqual(
      expect.arrayContaining(['retrieve', 'catalog', 'embed', 'multiVector', 'rerank', 'index', 'filter', 'citations']),
    );
    expect(info.capabilities.catalog).toEqual({ engines: 2 });
    const { engines } = result<{ engines: { id: string; server: { name: string }; endpoint?: object }[] }>(
      await call(gw.origin, 'catalog/list'),
    );
    expect(engines.map((engine) => [engine.id, engine.server.name, engine.endpoint])).toEqual([
      ['e1', 'rcp-server', undefined],
      ['e2', 'rcp-server', { transport: 'http', url: `${httpEngine.origin}/rcp` }],
    ]);
  });

  it('writes each document to the shard that owns its id, and deletes it there', async () => {
    const added = result<{ ids: string[]; chunks: number }>(
      await call(gw.origin, 'index/add', { documents: DOCUMENTS }),
    );
    expect(added).toEqual({ ids: DOCUMENTS.map((doc) => doc.id), chunks: DOCUMENTS.length });
    // The HTTP engine (e2, second by id) holds exactly the documents the hash gives it.
    const direct = result<{ hits: { id: string }[] }>(
      await call(httpEngine.origin, 'retrieve', { query: 'anything', k: 20, mode: 'dense' }),
    );
    const onE2 = DOCUMENTS.filter((doc) => shardOf(doc.id, 2) === 1).map((doc) => `${doc.id}#0`);
    expect(direct.hits.map((hit) => hit.id).sort()).toEqual(onE2.sort());
    expect(onE2.length).toBeGreaterThan(0);
    expect(onE2.length).toBeLessThan(DOCUMENTS.length);
  });

  it('fans retrieve out to both engines and fuses with RRF: hits from each, meta.engine, a deterministic order', async () => {
    const answer = result<RetrieveResult>(await call(gw.origin, 'retrieve', { query: 'blood and the heart', k: 6 }));
    expect(answer.hits).toHaveLength(6);
    expect(new Set(answer.hits.map((hit) => hit.meta.engine))).toEqual(new Set(['e1', 'e2']));
    // RRF over disjoint shards: each engine's first hit scores 1/61; the tie breaks on the smaller id (§16.3).
    const firsts = answer.hits.filter((hit) => hit.meta.engineRank === 1);
    expect(answer.hits.slice(0, 2)).toEqual(firsts);
    expect(firsts.map((hit) => hit.id)).toEqual([...firsts.map((hit) => hit.id)].sort());
    for (const hit of firsts) expect(hit.score).toBeCloseTo(1 / 61, 10);
    expect(answer.hits.map((hit) => hit.id)).toContain('heart#0');
    expect(answer.usage.candidates).toBe(6);
    const again = result<RetrieveResult>(await call(gw.origin, 'retrieve', { query: 'blood and the heart', k: 6 }));
    expect(again.hits.map((hit) => hit.id)).toEqual(answer.hits.map((hit) => hit.id));
    const deleted = result<{ deleted: number }>(
      await call(gw.origin, 'index/delete', { ids: ['owl', 'star', 'none'] }),
    );
    expect(deleted.deleted).toBe(2);
  });

  it('keeps many queries in flight to one engine at once (§4.7: a fresh id for each)', async () => {
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => call(gw.origin, 'retrieve', { query: `query ${i} about blood`, k: 3 })),
    );
    for (const answer of answers) expect(result<RetrieveResult>(answer).usage.notes).toBeUndefined();
  });

  it('§7.7.1 refuses a pinned indexVersion: its engines number their versions each for itself', async () => {
    const refused = await call(gw.origin, 'retrieve', { query: 'blood', k: 5, indexVersion: '1' });
    expect(refused.error).toMatchObject({ code: -32010, data: { retryable: false } });
  });

  it('answers a request every engine refuses as invalid with that error, not -32010', async () => {
    const refused = await call(gw.origin, 'retrieve', { query: 'blood', k: 5, candidateK: 2 });
    expect(refused.error).toMatchObject({ code: -32602, data: { field: 'candidateK' } });
  });

  it('routes embed to an engine that has it', async () => {
    const { vectors } = result<{ vectors: number[][] }>(await call(gw.origin, 'embed', { inputs: ['routed'] }));
    expect(vectors[0]).toHaveLength(512);
  });

  it('§7.5 routes embed/multi to an engine that advertises multiVector', async () => {
    const { matrices } = result<{ matrices: number[][][] }>(
      await call(gw.origin, 'embed/multi', { inputs: ['routed here'], kind: 'document' }),
    );
    expect(matrices[0]!.length).toBeGreaterThan(0);
    expect(matrices[0]!.every((row) => row.length === 512)).toBe(true);
  });
});

describe('§12 a gateway write that fails on one shard', () => {
  it('says which documents were applied and which were not, and the applied ones are there', async () => {
    const shard = await start(['serve', '--http', '127.0.0.1:0', '--data', dataDir()]);
    const gw = await gateway(
      'partial',
      registryFile([stdioEngine('e1', dataDir()), { id: 'e2', transport: 'http', url: `${shard.origin}/rcp` }]),
    );
    await shard.stop();
    const onE1 = DOCUMENTS.filter((doc) => shardOf(doc.id, 2) === 0).map((doc) => doc.id);
    const onE2 = DOCUMENTS.filter((doc) => shardOf(doc.id, 2) === 1).map((doc) => doc.id);
    const failed = await call(gw.origin, 'index/add', { documents: DOCUMENTS });
    type Sides = Record<'applied' | 'failed' | 'x-rcp-server-applied' | 'x-rcp-server-failed', string[]>;
    const error = failed.error as { code: number; message: string; data: Sides };
    expect(error.code).toBe(-32010);
    expect(error.message).toContain(`applied to ${onE1.length} of ${DOCUMENTS.length} documents (engines e1)`);
    const { data } = error;
    expect([data['x-rcp-server-applied'].sort(), data['x-rcp-server-failed'].sort()]).toEqual([
      onE1.sort(),
      onE2.sort(),
    ]);
    // §6.2: the unprefixed names are deprecated, still sent for one release (docs/protocol.md).
    expect([data.applied.sort(), data.failed.sort()]).toEqual([onE1.sort(), onE2.sort()]);
    const found = result<RetrieveResult>(
      await call(gw.origin, 'retrieve', { query: 'anything', k: 20, mode: 'dense' }),
    );
    expect(found.hits.map((hit) => hit.id.replace(/#0$/, '')).sort()).toEqual(onE1.sort());
    const removed = await call(gw.origin, 'index/delete', { ids: DOCUMENTS.map((doc) => doc.id) });
    expect((removed.error as { data: { applied: string[] } }).data.applied.sort()).toEqual(onE1.sort());
  });
});

describe('a gateway over stdio, federating another gateway', () => {
  it('answers over its own stdio with hits from its engine and, through the inner gateway, from the other', async () => {
    const e2 = dataDir();
    const e1 = dataDir();
    const inner = await gateway('inner', registryFile([stdioEngine('deep', e2)]));
    expect(result(await call(inner.origin, 'index/add', { documents: [DOCUMENTS[2]!] }))).toBeDefined();
    const registry = registryFile([
      stdioEngine('near', e1),
      { id: 'inner', transport: 'http', url: `${inner.origin}/rcp` },
    ]);
    const outer = spawnStdio({}, ['bin/rcp-server.js', 'gateway', '--registry', registry, '--id', 'outer', '--stdio']);
    const frames: Frame[] = [];
    readFrames(outer.child, (frame) => frames.push(frame as Frame));
    const ask = async (id: number, method: string, params: object) => {
      outer.child.stdin.write(`${JSON.stringify(request(id, method, params))}\n`);
      await until(
        () => frames.some((f) => f.id === id),
        () => `no answer to ${id}: ${outer.stderr()}`,
      );
      const frame = frames.find((f) => f.id === id)!;
      assertValidFrame(frame, method);
      return frame;
    };
    expect(await ask(1, 'initialize', { protocolVersion: 1, capabilities: {} })).toHaveProperty('result');
    // Written through the outer gateway: both shards are its own (near) and the inner gateway's (deep).
    expect(result(await ask(2, 'index/add', { documents: [DOCUMENTS[1]!] }))).toBeDefined();
    const answer = result<RetrieveResult>(await ask(3, 'retrieve', { query: 'blood', k: 5 }));
    expect(answer.hits.map((hit) => hit.id).sort()).toEqual(['heart#0', 'lung#0']);
    expect(new Set(answer.hits.map((hit) => hit.meta.engine))).toEqual(new Set(['near', 'inner']));
    outer.child.stdin.end();
    expect(await outer.exited).toBe(0);
  });
});

describe('loops, budgets and failures (§16.2)', () => {
  it('a cycle terminates: each gateway skips the one already on the path and says so', async () => {
    const [portA, portB] = [await freePort(), await freePort()];
    const eb = await start(['serve', '--http', '127.0.0.1:0', '--data', dataDir()]);
    await add(eb.origin, DOCUMENTS.slice(3));
    const a = await gateway(
      'A',
      registryFile([
        stdioEngine('ea', dataDir()),
        { id: 'B', transport: 'http', url: `http://127.0.0.1:${portB}/rcp` },
      ]),
      portA,
    );
    await gateway(
      'B',
      registryFile([
        { id: 'eb', transport: 'http', url: `${eb.origin}/rcp` },
        { id: 'A', transport: 'http', url: `http://127.0.0.1:${portA}/rcp` },
      ]),
      portB,
    );
    // A's shard is ea alone (B is a gateway): these land there.
    await add(a.origin, DOCUMENTS.slice(0, 3));
    const answer = result<RetrieveResult>(await call(a.origin, 'retrieve', { query: 'blood', k: 10 }));
    expect(new Set(answer.hits.map((hit) => hit.meta.engine))).toEqual(new Set(['ea', 'B']));
    expect(answer.hits).toHaveLength(DOCUMENTS.length);
    expect(answer.usage.notes).toContain('B: cycle: engine A is already on the path; skipped');
  });

  it('depth 0 is answered without forwarding', async () => {
    const gw = await gateway('flat', registryFile([stdioEngine('one', dataDir())]));
    const answer = result<RetrieveResult>(
      await call(gw.origin, 'retrieve', { query: 'x', k: 3, _meta: { federation: { depth: 0, path: [] } } }),
    );
    expect(answer.hits).toEqual([]);
    expect(answer.usage.notes?.[0]).toMatch(/hop budget exhausted/);
  });

  it('a slow engine is dropped at the deadline, a dead one skipped, both named', async () => {
    const slowEngine = await start(['serve', '--http', '127.0.0.1:0', '--data', dataDir()]);
    // The slow engine answers long after the query's deadline: an answer before then proves it was not waited for.
    const deadlineMs = 1500;
    const proxy = await delayingProxy(slowEngine.origin, 20 * deadlineMs);
    const deadPort = await freePort();
    const fast = stdioEngine('fast', dataDir());
    // Written through a gateway of the fast engine alone: the mixed one keeps a place for the engines it could not
    // reach at start, and refuses their documents' writes rather than move them.
    const writer = await gateway('writer', registryFile([fast]));
    await add(writer.origin, DOCUMENTS);
    await writer.stop();
    const engines = [
      fast,
      { id: 'slow', transport: 'http', url: `${proxy.origin}/rcp` },
      { id: 'dead', transport: 'http', url: `http://127.0.0.1:${deadPort}/rcp` },
    ];
    const gw = await gateway('mixed', registryFile(engines));
    const started = Date.now();
    const answer = result<RetrieveResult>(
      await call(gw.origin, 'retrieve', { query: 'blood', k: 5, _meta: { deadlineMs } }),
    );
    expect(Date.now() - started).toBeLessThan(10 * deadlineMs);
    expect(answer.hits.length).toBeGreaterThan(0);
    expect(new Set(answer.hits.map((hit) => hit.meta.engine))).toEqual(new Set(['fast']));
    expect(answer._meta?.degraded?.map((d) => [d.engine, d.code]).sort()).toEqual([
      ['dead', -32010],
      ['slow', -32014],
    ]);
    expect(answer.usage.notes?.some((note) => note.startsWith('engine slow skipped: -32014'))).toBe(true);
    expect(answer.usage.notes?.some((note) => note.startsWith('engine dead skipped: -32010'))).toBe(true);
    proxy.server.closeAllConnections();
    proxy.server.close();
  });

  it('a required dead engine fails the query with -32010', async () => {
    const strict = await gateway(
      'strict',
      registryFile([
        stdioEngine('fine', dataDir()),
        { id: 'vital', transport: 'http', url: `http://127.0.0.1:${await freePort()}/rcp`, required: true },
      ]),
    );
    const failed = await call(strict.origin, 'retrieve', { query: 'blood', k: 5 });
    expect((failed.error as { code: number }).code).toBe(-32010);
  });

  it('every engine failing is -32010, never an empty success', async () => {
    const [p1, p2] = [await freePort(), await freePort()];
    const gw = await gateway(
      'empty',
      registryFile([
        { id: 'x', transport: 'http', url: `http://127.0.0.1:${p1}/rcp` },
        { id: 'y', transport: 'http', url: `http://127.0.0.1:${p2}/rcp` },
      ]),
      0,
      {},
      false,
    );
    const answer = await call(gw.origin, 'retrieve', { query: 'blood', k: 5 });
    expect((answer.error as { code: number }).code).toBe(-32010);
  });
});

describe('shards fusion (one corpus split over engines)', () => {
  it('ranks dense recall over two shards exactly as one engine holding the whole corpus does', async () => {
    const [left, right, whole] = await Promise.all(
      [0, 1, 2].map(() => start(['serve', '--http', '127.0.0.1:0', '--data', dataDir()])),
    );
    await add(left!.origin, DOCUMENTS.slice(0, 3));
    await add(right!.origin, DOCUMENTS.slice(3));
    await add(whole!.origin, DOCUMENTS);
    const gw = await gateway(
      'sharded',
      registryFile([
        { id: 'left', transport: 'http', url: `${left!.origin}/rcp` },
        { id: 'right', transport: 'http', url: `${right!.origin}/rcp` },
      ]),
      0,
      { RCP_FEDERATION_FUSION_METHOD: 'shards' },
    );
    for (const query of ['blood and the heart', 'night animals', 'sugar from sunlight', 'gas clouds']) {
      const params = { query, k: 4, mode: 'dense' };
      const one = result<RetrieveResult>(await call(whole!.origin, 'retrieve', params));
      const two = result<RetrieveResult>(await call(gw.origin, 'retrieve', params));
      expect(
        two.hits.map((hit) => hit.id),
        query,
      ).toEqual(one.hits.map((hit) => hit.id));
      expect(two.usage.notes).toBeUndefined();
    }
  });
});

describe('supervision', () => {
  it('restarts a stdio engine that dies, initializes it again, and serves from it', async () => {
    const gw = await gateway('keeper', registryFile([stdioEngine('solo', dataDir())]));
    await add(gw.origin, DOCUMENTS.slice(0, 2));
    const children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(gw.child.pid)], { encoding: 'utf8' })
      .split('\n')
      .map((line) => Number(line.trim()))
      .filter((pid) => pid > 0);
    expect(children).toHaveLength(1);
    process.kill(children[0]!, 'SIGKILL');
    let answer: RetrieveResult | undefined;
    // Until the restarted engine serves (after the backoff and its own start-up), however long that takes here.
    const served = async () => {
      const frame = await call(gw.origin, 'retrieve', { query: 'heart', k: 2 });
      if (frame.result !== undefined) answer = frame.result as RetrieveResult;
      return (answer?.hits.length ?? 0) > 0;
    };
    await until(served, () => `the engine never served again: ${gw.stderr()}`, { intervalMs: 250 });
    expect(answer?.hits.map((hit) => hit.id)).toContain('heart#0');
    expect(gw.stderr()).toMatch(/engine exited; restarting/);
  });
});

describe('§5.2 a gateway keeps a session of its own on each HTTP engine', () => {
  it('a restarted gateway, and a gateway over a restarted engine, initialize again and serve', async () => {
    const port = await freePort();
    const dir = dataDir();
    const serveEngine = () => start(['serve', '--http', `127.0.0.1:${port}`, '--data', dir]);
    let engine = await serveEngine();
    await add(engine.origin, DOCUMENTS.slice(0, 2));
    const registry = registryFile([{ id: 'e', transport: 'http', url: `http://127.0.0.1:${port}/rcp` }]);
    const ids = async (gw: ServerProcess) =>
      result<RetrieveResult>(await call(gw.origin, 'retrieve', { query: 'heart', k: 1 })).hits.map((hit) => hit.id);
    const first = await gateway('first', registry);
    expect(await ids(first)).toEqual(['heart#0']);
    await first.stop();
    // A second gateway process (a restart) opens its own session: never "already initialized".
    const second = await gateway('second', registry);
    expect(await ids(second)).toEqual(['heart#0']);
    // The engine restarts and forgets every session: the gateway's next call initializes again and succeeds, be it a
    // retrieve or a call answered by the first engine that can (embed), which no other retry covers.
    await engine.stop();
    engine = await serveEngine();
    expect(
      result<{ vectors: unknown[] }>(await call(second.origin, 'embed', { inputs: ['owl'] })).vectors,
    ).toHaveLength(1);
    expect(await ids(second)).toEqual(['heart#0']);
  });

  it('the Selector takes back a primary that restarted (its probe answered -32001 for the old session)', async () => {
    const port = await freePort();
    const dir = dataDir();
    const serveEngine = () => start(['serve', '--http', `127.0.0.1:${port}`, '--data', dir]);
    let primary = await serveEngine();
    const standby = await start(['serve', '--http', '127.0.0.1:0', '--data', dataDir()]);
    await add(primary.origin, [{ id: 'on-primary', text: 'the heart pumps blood' }]);
    await add(standby.origin, [{ id: 'on-standby', text: 'the heart pumps blood' }]);
    const registry = registryFile([
      { id: 'standby', transport: 'http', url: `${standby.origin}/rcp`, priority: 1 },
      { id: 'primary', transport: 'http', url: `http://127.0.0.1:${port}/rcp`, priority: 2 },
    ]);
    const selector = await start(['gateway', '--registry', registry, '--select', 'primary', '--http', '127.0.0.1:0']);
    const served = async () =>
      result<RetrieveResult>(await call(selector.origin, 'retrieve', { query: 'heart', k: 1 })).hits.map((h) => h.id);
    expect(await served()).toEqual(['on-primary#0']);
    await primary.stop();
    expect(await served()).toEqual(['on-standby#0']);
    primary = await serveEngine();
    // Until the Selector's probe finds the primary again, however long its start and the next probe take here.
    let back: string[] = [];
    const takenBack = async () => (back = await served())[0] === 'on-primary#0';
    await until(takenBack, () => `still served ${JSON.stringify(back)}: ${selector.stderr()}`, { intervalMs: 250 });
    expect(back).toEqual(['on-primary#0']);
  });
});

describe('§15.6 a gateway keeps its callers apart on its engines', () => {
  const KEYS = { a: 'gateway-key-a-0123456789', b: 'gateway-key-b-0123456789' };
  const keyed = async (origin: string, key: string, method: string, params: object): Promise<Frame> => {
    const response = await fetch(`${origin}/rcp/${method}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify(request(1, method, params)),
    });
    return (await response.json()) as Frame;
  };

  it.each(['primary', 'federate'])(
    "%s: one key's idempotency key or sessionId never reaches another key's write or dedup memory",
    async (mode) => {
      const engine = await start(['serve', '--http', '127.0.0.1:0', '--data', dataDir()]);
      const registry = registryFile([{ id: 'only', transport: 'http', url: `${engine.origin}/rcp` }]);
      const env = { RCP_API_KEYS: JSON.stringify(Object.values(KEYS).map((key) => ({ key, scopes: ['admin'] }))) };
      const select = mode === 'primary' ? ['--select', 'primary'] : [];
      const gw = await start(['gateway', '--registry', registry, ...select, '--http', '127.0.0.1:0'], env, false);
      const add = (key: string, id: string) =>
        keyed(gw.origin, key, 'index/add', {
          documents: [{ id, text: `${id} owls hunt at night` }],
          _meta: { idempotencyKey: 'nightly' },
        });
      expect((await add(KEYS.a, 'from-a')).result).toMatchObject({ ids: ['from-a'] });
      expect((await add(KEYS.b, 'from-b')).result).toMatchObject({ ids: ['from-b'] });
      const seen = async (key: string) =>
        ((await keyed(gw.origin, key, 'retrieve', { query: 'owls', k: 1, sessionId: 's' })).result as RetrieveResult)
          .hits;
      const first = await seen(KEYS.a);
      expect(first).toHaveLength(1);
      expect((await seen(KEYS.b)).map((hit) => hit.id)).toEqual(first.map((hit) => hit.id));
    },
  );
});

describe('§12.2 an engine that cannot keep a session', () => {
  it('is unavailable to the Selector, which serves from the next engine', async () => {
    // Initializes, then answers everything else -32001, whatever the session: a broken engine.
    const broken = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        const frame = JSON.parse(body) as { id: number; method: string };
        const answer =
          frame.method === 'initialize'
            ? {
                result: {
                  protocolVersion: 1,
                  server: { name: 'broken', version: '1' },
                  capabilities: { retrieve: {} },
                  _meta: { session: 'x' },
                },
              }
            : { error: { code: -32001, message: 'not initialized' } };
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ jsonrpc: '2.0', id: frame.id, ...answer }));
      });
    });
    await new Promise<void>((resolve) => broken.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = broken.address() as { port: number };
      const good = await start(['serve', '--http', '127.0.0.1:0', '--data', dataDir()]);
      await add(good.origin, [{ id: 'served', text: 'the heart pumps blood' }]);
      const registry = registryFile([
        { id: 'good', transport: 'http', url: `${good.origin}/rcp`, priority: 1 },
        { id: 'broken', transport: 'http', url: `http://127.0.0.1:${port}/rcp`, priority: 2 },
      ]);
      const selector = await start(['gateway', '--registry', registry, '--select', 'primary', '--http', '127.0.0.1:0']);
      const answer = result<RetrieveResult>(await call(selector.origin, 'retrieve', { query: 'heart', k: 1 }));
      expect(answer.hits.map((hit) => hit.id)).toEqual(['served#0']);
    } finally {
      broken.close();
    }
  });
});

describe('the Selector (gateway --select primary)', () => {
  it('sends every call to the highest-priority live engine and fails over when it dies', async () => {
    const primary = await start(['serve', '--http', '127.0.0.1:0', '--data', dataDir()]);
    const standby = await start(['serve', '--http', '127.0.0.1:0', '--data', dataDir()]);
    await add(primary.origin, [{ id: 'on-primary', text: 'the heart pumps blood' }]);
    await add(standby.origin, [{ id: 'on-standby', text: 'the heart pumps blood' }]);
    const registry = registryFile([
      { id: 'standby', transport: 'http', url: `${standby.origin}/rcp`, priority: 1 },
      { id: 'primary', transport: 'http', url: `${primary.origin}/rcp`, priority: 2 },
    ]);
    const selector = await start(['gateway', '--registry', registry, '--select', 'primary', '--http', '127.0.0.1:0']);
    const info = result<{ capabilities: Record<string, unknown> }>(await call(selector.origin, 'info'));
    expect(Object.keys(info.capabilities)).toEqual(expect.arrayContaining(['retrieve', 'embed', 'index', 'filter']));
    expect(info.capabilities).not.toHaveProperty('catalog');
    const first = result<RetrieveResult>(await call(selector.origin, 'retrieve', { query: 'heart', k: 3 }));
    expect(first.hits.map((hit) => hit.id)).toEqual(['on-primary#0']);
    // Writes follow the primary too.
    await add(selector.origin, [{ id: 'written', text: 'blood vessels' }]);
    expect(
      result<RetrieveResult>(await call(primary.origin, 'retrieve', { query: 'blood vessels', k: 1 })).hits[0]?.id,
    ).toBe('written#0');
    expect(await primary.stop()).toBe(0);
    const after = result<RetrieveResult>(await call(selector.origin, 'retrieve', { query: 'heart', k: 3 }));
    expect(after.hits.map((hit) => hit.id)).toEqual(['on-standby#0']);
  });
});

describe('retries (§12.2)', () => {
  it("honours an engine's -32011 retryAfterMs and answers within the deadline", async () => {
    // One token every 4 s: no stall of this process refills the engine's bucket between the calls below.
    const limited = await start(['serve', '--http', '127.0.0.1:0', '--data', dataDir()], { RCP_RATE_LIMIT: '0.25' });
    const gw = await gateway(
      'patient',
      registryFile([{ id: 'limited', transport: 'http', url: `${limited.origin}/rcp` }]),
    );
    expect(result<RetrieveResult>(await call(gw.origin, 'retrieve', { query: 'a', k: 1 })).hits).toEqual([]);
    // The engine's bucket is empty now: the gateway waits out retryAfterMs (up to 4 s) and retries, once.
    const started = Date.now();
    const second = await call(gw.origin, 'retrieve', { query: 'b', k: 1, _meta: { deadlineMs: 15_000 } });
    expect(second).toHaveProperty('result');
    expect(Date.now() - started).toBeGreaterThan(500);
    // Without the time to wait, the engine's -32011 is not retried past the deadline: the query degrades to -32010.
    const rushed = await call(gw.origin, 'retrieve', { query: 'c', k: 1, _meta: { deadlineMs: 300 } });
    expect((rushed.error as { code: number }).code).toBe(-32010);
  });
});

/** An HTTP proxy that holds every `retrieve` answer for `delayMs`: a slow engine over a real socket. */
async function delayingProxy(target: string, delayMs: number): Promise<{ server: Server; origin: string }> {
  const server = createServer((req, res) => {
    const upstream = httpRequest(
      `${target}${req.url ?? ''}`,
      { method: req.method, headers: req.headers },
      (answer) => {
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => chunks.push(chunk));
        answer.on('end', () =>
          setTimeout(
            () => res.writeHead(answer.statusCode ?? 502, answer.headers).end(Buffer.concat(chunks)),
            req.url?.endsWith('/retrieve') === true ? delayMs : 0,
          ),
        );
      },
    );
    upstream.on('error', () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as { port: number }).port}` };
}
