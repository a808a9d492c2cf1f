import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HAS_POSTGRES, PostgresCluster } from '../helpers/postgres.js';
import { until } from '../helpers/children.js';
import { startHttpProcess, type ServerProcess } from '../helpers/processes.js';
import { ROOT } from '../helpers/wire.js';

/**
 * Replicas over one PostgreSQL store of record (`store.url`): real processes, a real cluster (Debian's postgresql,
 * which .ci/run installs), a client that sprays writes and reads round-robin with no stickiness. Every write is
 * visible on the replica that acknowledged it as soon as it is answered; every replica converges to the same hits,
 * order and `indexVersion`; nothing acknowledged is lost or applied twice through replica crashes, a database
 * restart and a failover to a promoted standby.
 */
type Frame = { result?: Record<string, unknown>; error?: { code: number; data?: Record<string, unknown> } };
type Hit = { id: string; score: number; chunk: { docId: string } };

const SECRET = 'replicas-share-this-cursor-secret';
/** A hang guard, not a figure: replicas tail the store every 200 ms, but a loaded machine may starve them a while. */
const CONVERGE_MS = 60_000;

let cluster: PostgresCluster;
const replicas: { process: ServerProcess; dir: string }[] = [];

async function call(origin: string, method: string, params: object, key?: string): Promise<Frame> {
  const body = {
    jsonrpc: '2.0',
    id: 1,
    method,
    params: key === undefined ? params : { ...params, _meta: { idempotencyKey: key } },
  };
  const response = await fetch(`${origin}/rcp/${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return (await response.json()) as Frame;
}

/** A request in the HTTP session `session` (§5.2 `RCP-Session`). */
async function postInSession(at: string, method: string, params: object, session: string): Promise<Frame> {
  const response = await fetch(`${at}/rcp/${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'rcp-session': session },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return (await response.json()) as Frame;
}

async function startReplica(dir: string, url = cluster.url): Promise<ServerProcess> {
  return startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', dir], {
    RCP_STORE_URL: url,
    RCP_STORE_POLL_MS: '200',
    RCP_RETRIEVE_CURSOR_SECRET: SECRET,
  });
}

/** `n` replicas, each with a data dir of its own, started side by side. */
async function startReplicas(n: number): Promise<void> {
  const dirs = Array.from({ length: n }, () => mkdtempSync(join(tmpdir(), 'rcp-replica-')));
  replicas.push(...(await Promise.all(dirs.map(async (dir) => ({ dir, process: await startReplica(dir) })))));
}

const origin = (i: number) => replicas[i % replicas.length]!.process.origin;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Lexical retrieve (deterministic, no model in the ranking) of a word. */
async function search(at: string, query: string, extra: object = {}): Promise<Frame> {
  return call(at, 'retrieve', { query, k: 5, mode: 'sparse', ...extra });
}

/**
 * Adds one document; a refusal (-32010 the store away, -32011 overloaded) is retried with the same idempotency key
 * until answered.
 */
async function addUntilAnswered(at: () => string, id: string, text: string): Promise<Frame> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const frame = await call(at(), 'index/add', { documents: [{ id, text }] }, `key-${id}`).catch(() => undefined);
    if (frame?.result !== undefined) return frame;
    await sleep(Number(frame?.error?.data?.retryAfterMs ?? 100));
  }
  throw new Error(`index/add ${id} never answered`);
}

/** Waits until every replica answers `query` alike, at the store's head; returns the common answer. */
async function converged(query: string): Promise<Frame['result']> {
  const head = cluster.sql("SELECT value FROM rcp_meta WHERE key = 'seq'");
  const deadline = Date.now() + CONVERGE_MS;
  for (;;) {
    const answers = await Promise.all(replicas.map((_, i) => search(origin(i), query)));
    const versions = answers.map((answer) => answer.result?.indexVersion);
    const hits = answers.map((answer) => JSON.stringify(answer.result?.hits));
    if (versions.every((version) => version === head) && hits.every((h) => h === hits[0])) return answers[0]!.result;
    if (Date.now() > deadline) throw new Error(`not converged at ${head}: ${versions.join(', ')}`);
    await sleep(100);
  }
}

describe.skipIf(!HAS_POSTGRES && process.env.CI === undefined)('replicas over a PostgreSQL store of record', () => {
  beforeAll(async () => {
    cluster = await PostgresCluster.create();
    await startReplicas(3);
  }, 120_000);

  afterAll(async () => {
    await Promise.all(replicas.map(({ process }) => process.stop()));
    cluster?.destroy();
  });

  it('round-robin writes are read back at once on the replica that took them, and every replica converges', async () => {
    for (let i = 0; i < 24; i++) {
      const added = await call(origin(i), 'index/add', {
        documents: [{ id: `doc-${i}`, text: `w${i}q shared words` }],
      });
      expect(added.result?.ids).toEqual([`doc-${i}`]);
      // Read-your-writes, on the replica that acknowledged the write.
      const found = await search(origin(i), `w${i}q`);
      expect((found.result?.hits as Hit[])[0]?.chunk.docId).toBe(`doc-${i}`);
      expect(Number(found.result?.indexVersion)).toBeGreaterThanOrEqual(Number(added.result?.indexVersion));
    }
    const deleted = await call(origin(1), 'index/delete', { ids: ['doc-3', 'doc-4'] });
    expect(deleted.result?.deleted).toBe(2);
    expect(((await search(origin(1), 'w3q')).result?.hits as Hit[]).length).toBe(0);
    const replaced = await call(origin(2), 'index/add', { documents: [{ id: 'doc-5', text: 'replaced words' }] });
    expect(replaced.result?.indexVersion).toBeDefined();

    const common = await converged('shared words');
    expect((common?.hits as Hit[]).map((hit) => hit.chunk.docId)).not.toContain('doc-3');
    expect((await converged('w5q'))?.hits).toEqual([]);
  });

  it('concurrent writers on every replica: one write per indexVersion, in commit order, the same everywhere', async () => {
    const before = Number(cluster.sql("SELECT value FROM rcp_meta WHERE key = 'seq'"));
    // Ten at once on each replica is past its work places (§15.5): a refused write is retried after retryAfterMs.
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) => addUntilAnswered(() => origin(i), `c-${i}`, `concurrent words c${i}z`)),
    );
    const versions = answers.map((answer) => Number(answer.result?.indexVersion)).sort((a, b) => a - b);
    expect(versions).toEqual(Array.from({ length: 30 }, (_, i) => before + i + 1));
    const common = await converged('concurrent');
    expect(common?.hits).toHaveLength(5);
  });

  it('a cursor from one replica continues on another (a shared secret, the same snapshot)', async () => {
    const first = await search(origin(0), 'shared words', { k: 3 });
    const cursor = first.result?.nextCursor as string;
    expect(cursor).toEqual(expect.any(String));
    const elsewhere = await search(origin(1), 'shared words', { k: 3, cursor });
    const here = await search(origin(0), 'shared words', { k: 3, cursor });
    expect(elsewhere.error).toBeUndefined();
    expect(elsewhere.result?.hits).toEqual(here.result?.hits);
  });

  it('rcp-server ingest --store writes into the store of record, and every replica serves what it wrote', async () => {
    const folder = join(mkdtempSync(join(tmpdir(), 'rcp-ingest-')), 'notes');
    mkdirSync(folder);
    writeFileSync(join(folder, 'ingested.txt'), 'ingestedword arrives through the operator');
    const data = mkdtempSync(join(tmpdir(), 'rcp-ingest-data-'));
    await promisify(execFile)(
      process.execPath,
      ['bin/rcp-server.js', 'ingest', '--store', cluster.url, '--data', data, folder],
      {
        cwd: ROOT,
      },
    );
    const answer = await converged('ingestedword');
    expect((answer?.hits as Hit[]).length).toBe(1);
  });

  /** initialize in a new HTTP session on `at`: the session's token. */
  async function openSession(at: string): Promise<string> {
    const initialize = { protocolVersion: 1, client: { name: 't', version: '1' }, capabilities: {} };
    const opened = await postInSession(at, 'initialize', initialize, 'new');
    return (opened.result?._meta as { session: string }).session;
  }

  it('an HTTP session opened on one replica continues on the others, and ends on all at shutdown (§5.2)', async () => {
    const token = await openSession(origin(0));
    expect(token).toEqual(expect.any(String));
    const elsewhere = await postInSession(origin(1), 'retrieve', { query: 'shared', k: 1, mode: 'sparse' }, token);
    expect(elsewhere.error).toBeUndefined();
    expect((await postInSession(origin(1), 'shutdown', {}, token)).error).toBeUndefined();
    const afterShutdown = await postInSession(origin(2), 'ping', {}, token);
    expect(afterShutdown.error?.code).toBe(-32001);
  });

  it('a session shut down through another replica ends on the replica that opened and holds it (§5.2)', async () => {
    const token = await openSession(origin(0));
    // Held by replica 0 (it opened it) and by replica 1 (it looked it up in the store).
    expect((await postInSession(origin(0), 'retrieve', { query: 'shared', k: 1, mode: 'sparse' }, token)).error).toBe(
      undefined,
    );
    expect((await postInSession(origin(1), 'ping', {}, token)).error).toBeUndefined();
    expect((await postInSession(origin(1), 'shutdown', {}, token)).error).toBeUndefined();
    const shutAt = Date.now();
    // The store tells every replica (NOTIFY at the commit of the removal): replica 0 refuses the session within
    // milliseconds; 5 s separates that from a cached session served until it idles out.
    let refused: Frame | undefined;
    while (refused === undefined && Date.now() - shutAt < 5_000) {
      const frame = await postInSession(origin(0), 'retrieve', { query: 'shared', k: 1, mode: 'sparse' }, token);
      if (frame.error?.code === -32001) refused = frame;
      else await sleep(20);
    }
    expect(refused?.error?.code, 'replica 0 still serves the session shut down through replica 1').toBe(-32001);
    expect((await postInSession(origin(2), 'ping', {}, token)).error?.code).toBe(-32001);
  });

  it('a retrieve session (§7.7.3 sessionId) skips on every replica what any replica showed it', async () => {
    const first = await search(origin(0), 'shared words', { k: 2, sessionId: 'trajectory-1' });
    const shown = (first.result?.hits as Hit[]).map((hit) => hit.id);
    expect(shown).toHaveLength(2);
    const next = await search(origin(1), 'shared words', { k: 2, sessionId: 'trajectory-1' });
    const again = (next.result?.hits as Hit[]).map((hit) => hit.id);
    expect(again).toHaveLength(2);
    expect(again.filter((id) => shown.includes(id))).toEqual([]);
    // Another session, on the third replica, is shown the first page again.
    const other = await search(origin(2), 'shared words', { k: 2, sessionId: 'trajectory-2' });
    expect((other.result?.hits as Hit[]).map((hit) => hit.id)).toEqual(shown);
  });

  it('a retrieve pinned to a version this replica has not reached is -32010 retryable, not a wrong corpus', async () => {
    const head = Number(cluster.sql("SELECT value FROM rcp_meta WHERE key = 'seq'"));
    const ahead = await search(origin(0), 'shared', { indexVersion: String(head + 5) });
    expect(ahead.error?.code).toBe(-32010);
    expect(ahead.error?.data).toMatchObject({ retryable: true, retryAfterMs: expect.any(Number) });
  });
});

describe.skipIf(!HAS_POSTGRES && process.env.CI === undefined)(
  'replicas through crashes, a restart and a failover',
  () => {
    /** Ids of every acknowledged document, and how many writes committed them (each sprayed id is written once). */
    const acknowledged: string[] = [];
    let commits = 0;
    let written = 0;

    beforeAll(async () => {
      cluster = await PostgresCluster.create();
      replicas.length = 0;
      await startReplicas(3);
    }, 120_000);

    afterAll(async () => {
      await Promise.all(replicas.map(({ process }) => process.stop()));
      cluster?.destroy();
    });

    /** Writes `n` documents round-robin over the replicas alive, each retried until answered. */
    async function spray(n: number, tag: string): Promise<void> {
      for (let i = 0; i < n; i++) {
        const id = `${tag}-${written++}`;
        const frame = await addUntilAnswered(() => origin(written + i), id, `${tag} words ${id}`);
        expect(frame.result?.ids).toEqual([id]);
        acknowledged.push(id);
        commits++;
      }
    }

    /** Every acknowledged document is in the store once, and every replica serves exactly those, alike. */
    async function nothingLost(): Promise<void> {
      const stored = cluster.sql("SELECT convert_from(id, 'UTF8') FROM rcp_documents ORDER BY 1").split('\n');
      expect(stored).toEqual([...new Set(acknowledged)].sort());
      // One committed write per acknowledged id: a retried write was answered from its key, never applied twice.
      expect(Number(cluster.sql('SELECT count(*) FROM rcp_writes'))).toBe(commits);
      const answer = await converged('words');
      expect(answer?.hits).toHaveLength(Math.min(5, acknowledged.length));
    }

    it('a replica killed mid-write restarts from its snapshot and converges; no acknowledged write is lost', async () => {
      await spray(6, 'before');
      const victim = replicas[2]!;
      // A large write in flight on the victim when it dies: committed or not, never half.
      const inFlight = call(victim.process.origin, 'index/add', {
        documents: Array.from({ length: 40 }, (_, i) => ({ id: `dying-${i}`, text: `dying words ${i}` })),
      }).catch(() => undefined);
      await sleep(30);
      victim.process.child.kill('SIGKILL');
      await inFlight;
      // What the dying write committed is the store's business: count it as acknowledged if it is there.
      const committed = cluster.sql("SELECT count(*) FROM rcp_documents WHERE convert_from(id, 'UTF8') LIKE 'dying-%'");
      expect(['0', '40']).toContain(committed);
      if (committed === '40') {
        acknowledged.push(...Array.from({ length: 40 }, (_, i) => `dying-${i}`));
        commits++;
      }
      replicas.splice(2, 1);
      await spray(4, 'while-down');
      replicas.push({ dir: victim.dir, process: await startReplica(victim.dir) });
      await nothingLost();
    });

    it('writes answer -32010 retryable while the database is down, reads keep serving, and tailing resumes', async () => {
      const writes = spray(12, 'outage');
      await sleep(200);
      cluster.stop();
      const during = await search(origin(0), 'words');
      expect(during.error).toBeUndefined();
      const refused = await call(origin(1), 'index/add', { documents: [{ id: 'refused', text: 'refused words' }] });
      expect(refused.error?.code).toBe(-32010);
      expect(refused.error?.data).toMatchObject({ retryable: true, retryAfterMs: expect.any(Number) });
      await sleep(1500);
      cluster.start();
      await writes;
      await nothingLost();
    });

    it('a promoted standby takes over: repointed replicas lose nothing and converge', async () => {
      const standby = await cluster.standby();
      await spray(4, 'replicated');
      await until(() => standby.caughtUpWith(cluster), 'the standby caught up with its primary', { intervalMs: 100 });
      cluster.stop();
      standby.promote();
      const old = cluster;
      cluster = standby;
      await Promise.all(
        replicas.map(async (replica) => {
          await replica.process.stop();
          replica.process = await startReplica(replica.dir, standby.url);
        }),
      );
      old.destroy();
      await spray(4, 'promoted');
      await nothingLost();
    });
  },
);

describe.skipIf(!HAS_POSTGRES && process.env.CI === undefined)('a replica whose store is down at start', () => {
  let down: PostgresCluster;
  let replica: ServerProcess | undefined;

  beforeAll(async () => {
    down = await PostgresCluster.create();
    down.stop();
  }, 120_000);

  afterAll(async () => {
    await replica?.stop();
    down?.destroy();
  });

  it('answers -32010 retryable at once while the store cannot be reached, and serves once it can', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rcp-replica-down-'));
    replica = await startHttpProcess(
      ['serve', '--http', '127.0.0.1:0', '--data', dir],
      { RCP_STORE_URL: down.url, RCP_STORE_POLL_MS: '200', RCP_REQUEST_TIMEOUT_MS: '10000' },
      { ready: false },
    );
    const at = replica.origin;
    // The first attempt to connect is refused at once: until it is, a request may wait for it (not for the deadline).
    for (const method of ['retrieve', 'index/add'] as const) {
      const started = Date.now();
      const params =
        method === 'retrieve'
          ? { query: 'anything', k: 1, mode: 'sparse' }
          : { documents: [{ id: 'early', text: 'refused while the store is away' }] };
      const refused = await call(at, method, params);
      const ms = Date.now() - started;
      expect(refused.error?.code, `${method}: ${JSON.stringify(refused)}`).toBe(-32010);
      expect(refused.error?.data).toMatchObject({ retryable: true, retryAfterMs: expect.any(Number) });
      // 10 s is the deadline a stalled request is answered at (-32014); a refusal comes long before.
      expect(ms).toBeLessThan(3_000);
    }
    down.start();
    const deadline = Date.now() + 60_000;
    let served: Frame | undefined;
    while (served?.result === undefined && Date.now() < deadline) {
      served = await search(at, 'anything');
      if (served.result === undefined) await sleep(Number(served.error?.data?.retryAfterMs ?? 200));
    }
    expect(served?.result?.hits).toEqual([]);
    const added = await call(at, 'index/add', { documents: [{ id: 'late', text: 'arrives once the store is up' }] });
    expect(added.result?.ids).toEqual(['late']);
  });
});
