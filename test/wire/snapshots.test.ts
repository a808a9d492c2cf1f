import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { seededRandom } from '../helpers/children.js';
import { HAS_POSTGRES, PostgresCluster } from '../helpers/postgres.js';
import { callHttp as call, startHttpProcess, type ServerProcess } from '../helpers/processes.js';

/**
 * §7.7.1 `retrieve.snapshots`: a retrieve pinned to a version in the window answers exactly as it did while that
 * version was current (hits, order, scores, texts, metadata, cursors), whatever was added, replaced or deleted since,
 * in every mode and fusion, with filters, units, MMR and rerank; after a restart and in a second process of the dir;
 * and past the window it is -32010 with `retryable: false`, never another version. Real processes over one data dir.
 */
const WORK = mkdtempSync(join(tmpdir(), 'rcp-snapshots-'));
const servers: ServerProcess[] = [];
afterAll(async () => {
  await Promise.all(servers.map((server) => server.stop()));
  rmSync(WORK, { recursive: true, force: true });
});

async function serve(dir: string, env: NodeJS.ProcessEnv = {}): Promise<ServerProcess> {
  const server = await startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', dir], env);
  servers.push(server);
  return server;
}

const WORDS = ['cell', 'protein', 'membrane', 'signal', 'kinase', 'tumour', 'gene', 'enzyme', 'neuron', 'virus'];

function documents(prefix: string, n: number, seed: number) {
  const next = seededRandom(seed);
  const text = () => Array.from({ length: 14 }, () => WORDS[Math.floor(next() * WORDS.length)]).join(' ');
  return Array.from({ length: n }, (_, i) => ({ id: `${prefix}${i}`, text: text(), meta: { year: 2000 + (i % 5) } }));
}

/** How long a follower may take to apply a write (an event it is polled for; generous for a loaded machine). */
const CAUGHT_UP = { timeout: 60_000, interval: 50 };
const FIELDS = { RCP_INDEX_FIELDS: '{"year":"int"}' };
const QUERIES = ['kinase signal', 'neuron virus membrane'];
const PARAMS: Record<string, unknown>[] = [
  { mode: 'dense' },
  { mode: 'sparse' },
  { mode: 'hybrid' },
  { mode: 'hybrid', fusion: { method: 'rrf' } },
  { mode: 'hybrid', filter: { field: 'year', op: 'gte', value: 2002 } },
  { mode: 'hybrid', unit: 'document' },
  { mode: 'hybrid', mmr: { lambda: 0.5 } },
  { mode: 'hybrid', rerank: { method: 'colbert' } },
  { mode: 'dense', seed: 3 },
];

/** The error a retrieve is answered with. */
async function refusal(origin: string, params: Record<string, unknown>) {
  const response = await fetch(`${origin}/rcp/retrieve`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'retrieve', params }),
  });
  return ((await response.json()) as { error: { code: number; data: { retryable: boolean; detail: string } } }).error;
}

/** Every pinned retrieve's whole answer but usage (hits with text and metadata, nextCursor), and a second page. */
async function answers(origin: string, indexVersion: string) {
  const all = [];
  for (const query of QUERIES) {
    for (const params of PARAMS) {
      const result = await call(origin, 'retrieve', { query, k: 6, indexVersion, ...params });
      const next =
        result.nextCursor === undefined
          ? undefined
          : await call(origin, 'retrieve', { query, k: 6, indexVersion, ...params, cursor: result.nextCursor });
      all.push({ hits: result.hits, indexVersion: result.indexVersion, next: next?.hits });
    }
  }
  return all;
}

describe('§7.7.1 snapshots: a pinned version answers as it did while current', () => {
  const dir = join(WORK, 'corpus');
  const recorded = new Map<string, Awaited<ReturnType<typeof answers>>>();

  it('advertises retrieve.snapshots; each version pinned while current answers the same after replacements and deletions', async () => {
    const server = await serve(dir, FIELDS);
    const init = await call(server.origin, 'initialize', {
      protocolVersion: 1,
      client: { name: 't', version: '1' },
      capabilities: {},
    });
    expect((init.capabilities as { retrieve: { snapshots?: boolean } }).retrieve.snapshots).toBe(true);
    const writes = [
      () => call(server.origin, 'index/add', { documents: documents('a', 40, 1) }),
      // Replaces half of them with other texts and metadata, adds others.
      () => call(server.origin, 'index/add', { documents: [...documents('a', 20, 2), ...documents('b', 20, 3)] }),
      () =>
        call(server.origin, 'index/delete', {
          ids: documents('a', 40, 1)
            .map(({ id }) => id)
            .slice(10, 30),
        }),
      // A document given twice in one write: the version before keeps its own text and metadata, not the copy.
      () =>
        call(server.origin, 'index/add', {
          documents: [
            ...documents('a', 5, 5).map((document) => ({ ...document, meta: { year: 2010 } })),
            ...documents('a', 5, 6).map((document) => ({ ...document, meta: { year: 2001 } })),
          ],
        }),
      () => call(server.origin, 'index/add', { documents: documents('c', 30, 4) }),
    ];
    for (const write of writes) {
      const { indexVersion } = (await write()) as { indexVersion: string };
      const now = await answers(server.origin, indexVersion);
      expect(now.every((answer) => answer.indexVersion === indexVersion && (answer.hits as []).length > 0)).toBe(true);
      recorded.set(indexVersion, now);
    }
    for (const [version, then] of recorded) expect(await answers(server.origin, version)).toEqual(then);
    // The first version's answers name documents deleted or replaced since (ids of a10..a29, texts of a0..a19).
    const first = JSON.stringify([...recorded.values()][0]);
    expect(first).toMatch(/"id":"a(1\d|2\d)#/);
    expect(first).not.toEqual(JSON.stringify([...recorded.values()].at(-1)));
    // The pinned current version ranks BM25 with the live index's very numbers.
    const current = [...recorded.keys()].at(-1)!;
    for (const query of QUERIES) {
      const pinned = await call(server.origin, 'retrieve', { query, k: 10, mode: 'sparse', indexVersion: current });
      const live = await call(server.origin, 'retrieve', { query, k: 10, mode: 'sparse' });
      expect(pinned.hits).toEqual(live.hits);
    }
    await server.stop();
  });

  it('answers the same after a restart, and in a second process of the data dir', async () => {
    const restarted = await serve(dir, FIELDS);
    for (const [version, then] of recorded) expect(await answers(restarted.origin, version)).toEqual(then);
    const beside = await serve(dir, FIELDS);
    const { indexVersion } = (await call(restarted.origin, 'index/delete', { ids: ['c1', 'c2', 'b3'] })) as {
      indexVersion: string;
    };
    // The second process follows the delete from the store, and keeps what it removed for the versions before it.
    await expect
      .poll(async () => (await call(beside.origin, 'retrieve', { query: 'gene', k: 1 })).indexVersion, CAUGHT_UP)
      .toBe(indexVersion);
    for (const [version, then] of recorded) expect(await answers(beside.origin, version)).toEqual(then);
    // Every document any recorded version held, deleted: each version still answers as it did.
    const everything = ['a', 'b', 'c'].flatMap((prefix) => documents(prefix, 40, 0).map(({ id }) => id));
    await call(restarted.origin, 'index/delete', { ids: everything });
    expect((await call(restarted.origin, 'retrieve', { query: 'kinase signal', k: 5 })).hits).toEqual([]);
    for (const [version, then] of recorded) expect(await answers(restarted.origin, version)).toEqual(then);
  });

  it('past the window: -32010 with retryable false, never another version; ahead of the process: retryable', async () => {
    const small = await serve(join(WORK, 'small'), { RCP_INDEX_SNAPSHOTS_VERSIONS: '2' });
    const versions = [];
    for (let i = 0; i < 3; i++) {
      const { indexVersion } = (await call(small.origin, 'index/add', { documents: documents(`w${i}`, 5, i) })) as {
        indexVersion: string;
      };
      versions.push(indexVersion);
    }
    const refused = await refusal(small.origin, { query: 'cell', k: 3, indexVersion: versions[0] });
    expect(refused).toMatchObject({ code: -32010, data: { retryable: false } });
    expect(refused.data.detail).toMatch(/versions 2 to 3/);
    expect(
      (await call(small.origin, 'retrieve', { query: 'cell', k: 3, indexVersion: versions[1] })).indexVersion,
    ).toBe(versions[1]);
    const ahead = await refusal(small.origin, { query: 'cell', k: 3, indexVersion: '99' });
    expect(ahead).toMatchObject({ code: -32010, data: { retryable: true } });
  });
});

describe.skipIf(!HAS_POSTGRES)('§7.7.1 snapshots on replicas of one PostgreSQL store', () => {
  let cluster: PostgresCluster | undefined;
  afterAll(() => cluster?.destroy());

  it('a version pinned on the replica that wrote it answers the same on another replica, and after its restart', async () => {
    cluster = await PostgresCluster.create();
    const env = { ...FIELDS, RCP_STORE_URL: cluster.url, RCP_STORE_POLL_MS: '200' };
    const a = await serve(join(WORK, 'replica-a'), env);
    let b = await serve(join(WORK, 'replica-b'), env);
    const recorded = new Map<string, Awaited<ReturnType<typeof answers>>>();
    const writes = [
      { documents: documents('a', 30, 1) },
      { documents: [...documents('a', 15, 2), ...documents('b', 10, 3)] },
      {
        ids: documents('a', 30, 1)
          .map(({ id }) => id)
          .slice(5, 20),
      },
    ];
    for (const write of writes) {
      const method = 'ids' in write ? 'index/delete' : 'index/add';
      const { indexVersion } = (await call(a.origin, method, write)) as { indexVersion: string };
      recorded.set(indexVersion, await answers(a.origin, indexVersion));
      // The other replica applies each write on its own (one write behind at most), so it holds every version.
      await expect
        .poll(async () => (await call(b.origin, 'retrieve', { query: 'gene', k: 1 })).indexVersion, CAUGHT_UP)
        .toBe(indexVersion);
    }
    for (const [version, then] of recorded) expect(await answers(b.origin, version)).toEqual(then);
    // A burst of concurrent writes, applied by a replica several at once, and writes made while it was stopped: it
    // never held the versions between, and still holds every one before them.
    const burst = Array.from({ length: 6 }, (_, i) =>
      call(a.origin, 'index/add', { documents: [{ id: 'a0', text: `burst ${i}` }] }),
    );
    const last = Math.max(...(await Promise.all(burst)).map((answer) => Number(answer.indexVersion)));
    await b.stop();
    for (let i = 0; i < 2; i++) await call(a.origin, 'index/add', { documents: [{ id: 'a1', text: `away ${i}` }] });
    b = await serve(join(WORK, 'replica-b'), env);
    const head = String(last + 2);
    for (const replica of [a, b]) {
      await expect
        .poll(async () => (await call(replica.origin, 'retrieve', { query: 'gene', k: 1 })).indexVersion, CAUGHT_UP)
        .toBe(head);
      for (const [version, then] of recorded) expect(await answers(replica.origin, version)).toEqual(then);
    }
    // A replica on an empty dir holds no version before it joined: another replica may (retryable).
    const fresh = await serve(join(WORK, 'replica-c'), env);
    const [first] = recorded.keys();
    expect(await refusal(fresh.origin, { query: 'gene', k: 1, indexVersion: first })).toMatchObject({
      code: -32010,
      data: { retryable: true },
    });
  });
});
