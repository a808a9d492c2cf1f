import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCommand, until } from '../helpers/children.js';
import { HAS_POSTGRES, PostgresCluster } from '../helpers/postgres.js';
import { callHttp as call, freePort, startHttpProcess, type ServerProcess } from '../helpers/processes.js';

/**
 * A corpus in two partitions, each a PostgreSQL store of its own served by two replicas, behind one gateway whose
 * registry names each partition once with its replicas' `urls` (docs/replicas.md, "Partitions"): real processes and
 * databases. Writes through the gateway land in the partition that owns each id, once; a retrieve reads each partition
 * once (one of its replicas), and goes on reading it through the other when one replica dies.
 */
type Hit = { id: string; score: number };

const WORK = mkdtempSync(join(tmpdir(), 'rcp-partitions-'));
let cluster: PostgresCluster;
const processes: ServerProcess[] = [];

const ids = async (origin: string, query: string, k = 100) =>
  ((await call(origin, 'retrieve', { query, k, mode: 'sparse', includeText: false })).hits as Hit[]).map(
    (hit) => hit.id.replace(/#\d+$/, ''), // each document is one chunk, `id#0`
  );

async function replica(partition: string, name: string): Promise<ServerProcess> {
  const server = await startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', join(WORK, name)], {
    RCP_STORE_URL: cluster.url.replace(/\/postgres$/, `/${partition}`),
    RCP_STORE_POLL_MS: '200',
  });
  processes.push(server);
  return server;
}

describe.skipIf(!HAS_POSTGRES)('two partitions of two replicas each, behind one gateway', () => {
  const replicas: Record<string, ServerProcess> = {};
  let gateway: ServerProcess;

  beforeAll(async () => {
    cluster = await PostgresCluster.create();
    for (const partition of ['p1', 'p2']) cluster.sql(`CREATE DATABASE ${partition}`);
    for (const [name, partition] of [
      ['a1', 'p1'],
      ['b1', 'p1'],
      ['a2', 'p2'],
      ['b2', 'p2'],
    ] as const) {
      replicas[name] = await replica(partition, name);
    }
    const registry = join(WORK, 'rcp.json');
    const urls = (...names: string[]) => names.map((name) => `${replicas[name]!.origin}/rcp`);
    const engines = [
      { id: 'p1', transport: 'http', urls: urls('a1', 'b1') },
      { id: 'p2', transport: 'http', urls: urls('a2', 'b2') },
    ];
    writeFileSync(registry, JSON.stringify({ engines }));
    gateway = await startHttpProcess(['gateway', '--registry', registry, '--http', '127.0.0.1:0'], {
      RCP_FEDERATION_FUSION: 'shards',
    });
    processes.push(gateway);
  });
  afterAll(async () => {
    await Promise.all(processes.map((server) => server.stop()));
    cluster?.destroy();
    rmSync(WORK, { recursive: true, force: true });
  });

  it('each document is written to the one partition that owns it, and read from it through either replica', async () => {
    const documents = Array.from({ length: 40 }, (_, i) => ({ id: `doc-${i}`, text: `common words token${i}x` }));
    await call(gateway.origin, 'index/add', { documents });
    const all = documents.map((document) => document.id).sort();
    // Replicas of a partition converge on their store; the partitions hold the documents between them, once each.
    await until(async () => {
      const [a1, b1, a2, b2] = await Promise.all(
        ['a1', 'b1', 'a2', 'b2'].map((name) => ids(replicas[name]!.origin, 'common')),
      );
      return a1!.length === b1!.length && a2!.length === b2!.length && a1!.length + a2!.length === 40;
    }, 'the replicas of each partition to hold its documents');
    const p1 = await ids(replicas.a1!.origin, 'common');
    const p2 = await ids(replicas.a2!.origin, 'common');
    expect(p1.length).toBeGreaterThan(5);
    expect(p2.length).toBeGreaterThan(5);
    expect([...p1, ...p2].sort()).toEqual(all);
    // Through the gateway: every document once, from both partitions.
    expect((await ids(gateway.origin, 'common', 40)).sort()).toEqual(all);
  });

  it('a replica killed: its partition is still read and written through the other', async () => {
    const p1 = await ids(replicas.a1!.origin, 'common');
    replicas.a1!.child.kill('SIGKILL');
    for (let round = 0; round < 4; round++) {
      // Every round reaches both members in turn: the dead one passes the call to its partner.
      const target = p1[round]!;
      expect(await ids(gateway.origin, `${target.replace('doc-', 'token')}x`, 3)).toContain(target);
    }
    const late = Array.from({ length: 10 }, (_, i) => ({ id: `late-${i}`, text: `late words latetoken${i}x` }));
    await call(gateway.origin, 'index/add', { documents: late });
    await until(
      async () => (await ids(gateway.origin, 'late', 20)).length === 10,
      'the late documents to be read through the gateway',
    );
  });
});

describe('re-partitioning: ingest --partition K/N places documents as the gateway does', () => {
  const servers: ServerProcess[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()));
  });

  it('an export split over two new partitions: each holds what the gateway routes to it, and updates land on it', async () => {
    const work = mkdtempSync(join(tmpdir(), 'rcp-repartition-'));
    const lines = Array.from({ length: 30 }, (_, i) => JSON.stringify({ _id: `doc-${i}`, text: `first words t${i}x` }));
    writeFileSync(join(work, 'docs.jsonl'), `${lines.join('\n')}\n`);
    expect((await runCommand(['ingest', '--data', join(work, 'old'), join(work, 'docs.jsonl')])).code).toBe(0);
    const exported = join(work, 'old.jsonl');
    expect((await runCommand(['export', '--data', join(work, 'old'), '--to', exported])).code).toBe(0);
    const held: string[][] = [];
    for (const k of [1, 2]) {
      const run = await runCommand(['ingest', '--partition', `${k}/2`, '--data', join(work, `p${k}`), exported]);
      expect(run.code, run.stdout).toBe(0);
      expect(run.stdout).toMatch(/documents left to other partitions/);
      const server = await startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', join(work, `p${k}`)]);
      servers.push(server);
      held.push(await ids(server.origin, 'first'));
    }
    expect(held[0]!.length).toBeGreaterThan(5);
    expect([...held[0]!, ...held[1]!].sort()).toEqual(lines.map((_, i) => `doc-${i}`).sort());
    const registry = join(work, 'rcp.json');
    const engines = servers.map((server, i) => ({ id: `p${i + 1}`, transport: 'http', url: `${server.origin}/rcp` }));
    writeFileSync(registry, JSON.stringify({ engines }));
    const gateway = await startHttpProcess(['gateway', '--registry', registry, '--http', '127.0.0.1:0']);
    servers.push(gateway);
    const updated = lines.map((_, i) => ({ id: `doc-${i}`, text: `second words t${i}x` }));
    await call(gateway.origin, 'index/add', { documents: updated });
    // Every update replaced its document where it was: nothing left behind, nothing written twice.
    for (const [k, server] of servers.slice(0, 2).entries()) {
      expect((await ids(server.origin, 'second')).sort()).toEqual([...held[k]!].sort());
      expect(await ids(server.origin, 'first')).toEqual([]);
    }
    rmSync(work, { recursive: true, force: true });
  });
});

describe('a replica group with a member that accepts connections and never answers', () => {
  const held: Socket[] = [];
  const hung = createServer((socket) => void held.push(socket));
  const servers: ServerProcess[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()));
    for (const socket of held) socket.destroy();
    hung.close();
  });

  it('reads are answered by the other member within their deadline, every time, and writes by theirs', async () => {
    const work = mkdtempSync(join(tmpdir(), 'rcp-hung-member-'));
    const healthy = await startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', join(work, 'ok')]);
    servers.push(healthy);
    await call(healthy.origin, 'index/add', { documents: [{ id: 'here', text: 'served by the healthy member' }] });
    await new Promise<void>((resolve) => hung.listen(0, '127.0.0.1', resolve));
    const port = (hung.address() as AddressInfo).port;
    const registry = join(work, 'rcp.json');
    const urls = [`http://127.0.0.1:${port}/rcp`, `${healthy.origin}/rcp`];
    writeFileSync(registry, JSON.stringify({ engines: [{ id: 'p', transport: 'http', urls }] }));
    const gateway = await startHttpProcess(['gateway', '--registry', registry, '--http', '127.0.0.1:0']);
    servers.push(gateway);
    for (let round = 0; round < 4; round++) {
      const started = Date.now();
      const result = await call(gateway.origin, 'retrieve', { query: 'healthy', k: 3, _meta: { deadlineMs: 4000 } });
      expect((result.hits as Hit[]).map((hit) => hit.id)).toEqual(['here#0']);
      expect(Date.now() - started).toBeLessThan(4000);
    }
    // A write is answered by its deadline whichever member it reaches first: applied, or -32014 saying it may not be.
    for (let round = 0; round < 2; round++) {
      const started = Date.now();
      const response = await fetch(`${gateway.origin}/rcp/index/add`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'index/add',
          params: { documents: [{ id: `w${round}`, text: 'written' }], _meta: { deadlineMs: 3000 } },
        }),
      });
      const answer = (await response.json()) as { result?: unknown; error?: { code: number } };
      expect(answer.result !== undefined || answer.error?.code === -32014, JSON.stringify(answer)).toBe(true);
      expect(Date.now() - started).toBeLessThan(4000);
    }
    rmSync(work, { recursive: true, force: true });
  });
});

describe('a partition down when the gateway starts keeps its place', () => {
  const servers: ServerProcess[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()));
  });

  it('its documents are refused until it answers, never written to another partition; then written to it', async () => {
    const work = mkdtempSync(join(tmpdir(), 'rcp-partition-down-'));
    const up = await startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', join(work, 'p1')]);
    servers.push(up);
    const port = await freePort();
    const registry = join(work, 'rcp.json');
    const engines = [
      { id: 'p1', transport: 'http', url: `${up.origin}/rcp` },
      { id: 'p2', transport: 'http', url: `http://127.0.0.1:${port}/rcp` },
    ];
    writeFileSync(registry, JSON.stringify({ engines }));
    const gateway = await startHttpProcess(['gateway', '--registry', registry, '--http', '127.0.0.1:0']);
    servers.push(gateway);
    const documents = Array.from({ length: 20 }, (_, i) => ({ id: `doc-${i}`, text: `placed words t${i}x` }));
    const response = await fetch(`${gateway.origin}/rcp/index/add`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'index/add', params: { documents } }),
    });
    const refused = (await response.json()) as { error?: { code: number; data?: { applied?: string[] } } };
    expect(refused.error?.code).toBe(-32010);
    const onP1 = refused.error?.data?.applied ?? [];
    expect(onP1.length).toBeGreaterThan(2);
    expect(onP1.length).toBeLessThan(18);
    // Only p1's own documents are on p1: p2's were not moved to it.
    expect((await ids(up.origin, 'placed')).sort()).toEqual([...onP1].sort());
    const down = await startHttpProcess(['serve', '--http', `127.0.0.1:${port}`, '--data', join(work, 'p2')]);
    servers.push(down);
    await until(
      async () => {
        const retry = await fetch(`${gateway.origin}/rcp/index/add`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'index/add', params: { documents } }),
        });
        return ((await retry.json()) as { result?: unknown }).result !== undefined;
      },
      'the partition to take its writes once it answers',
      { intervalMs: 500 },
    );
    const onP2 = await ids(down.origin, 'placed');
    expect([...onP1, ...onP2].sort()).toEqual(documents.map((document) => document.id).sort());
    expect(onP2.some((id) => onP1.includes(id))).toBe(false);
    rmSync(work, { recursive: true, force: true });
  });
});
