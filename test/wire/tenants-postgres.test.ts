import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spaceOf } from '../../src/corpus/index.js';
import { runCommand, until } from '../helpers/children.js';
import { HAS_POSTGRES, PostgresCluster } from '../helpers/postgres.js';
import { startHttpProcess, type ServerProcess } from '../helpers/processes.js';
import { readFrames, spawnStdio, STDIO_RETRIEVE } from '../helpers/wire.js';

/**
 * Named corpora in one PostgreSQL store of record (docs/tenants.md): the CLI makes them in the store's catalog, each in
 * a schema of its own; two replicas, each with its own root for its replicas of them, serve every corpus of the store.
 * A write to a corpus through one replica is read through the other; corpora holding the same ids stay apart; a
 * corpus dropped through one replica is gone from the other; a drop is refused while a write to the corpus is in
 * flight; --corpus serves one over stdio and MCP. A real cluster, real processes.
 */
const WORK = mkdtempSync(join(tmpdir(), 'rcp-tenants-pg-'));
const KEYS = { acme: 'acme-key-0123456789', beta: 'beta-key-0123456789', admin: 'admin-key-0123456789' };
const API_KEYS = JSON.stringify([
  { key: KEYS.acme, scopes: ['read', 'write'], corpora: ['acme'] },
  { key: KEYS.beta, scopes: ['read', 'write'], corpora: ['beta*'] },
  { key: KEYS.admin, scopes: ['admin', 'read'], corpora: ['*'] },
]);
/** A hang guard, not a figure: replicas tail the store every 200 ms, and see the catalog within a second. */
const CONVERGE_MS = 60_000;

let cluster: PostgresCluster;
const replicas: ServerProcess[] = [];
const rootOf = (i: number) => join(WORK, `root-${i}`);

type Answer = { result?: Record<string, unknown>; error?: { code: number; message: string; data?: unknown } };

async function call(at: number, corpus: string, key: string, method: string, params: object): Promise<Answer> {
  const path = corpus === 'default' ? method : `corpora/${corpus}/${method}`;
  const response = await fetch(`${replicas[at]!.origin}/rcp/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return (await response.json()) as Answer;
}

async function texts(at: number, corpus: string, key: string): Promise<string[]> {
  const answer = await call(at, corpus, key, 'retrieve', { query: 'kinase', k: 10, mode: 'sparse' });
  expect(answer.error, JSON.stringify(answer.error)).toBeUndefined();
  return (answer.result!.hits as { text: string }[]).map((hit) => hit.text).sort();
}

const cli = (args: string[], input?: string) =>
  runCommand(args, { RCP_STORE_URL: cluster.url, RCP_STORE_POLL_MS: '200' }, input);

describe.skipIf(!HAS_POSTGRES && process.env.CI === undefined)('named corpora in a PostgreSQL store', () => {
  beforeAll(async () => {
    cluster = await PostgresCluster.create();
    for (const name of ['acme', 'beta']) {
      const created = await runCommand(['corpus', 'create', name, '--store', cluster.url]);
      expect(created.code, created.stderr).toBe(0);
      expect(created.stdout).toMatch(/in schema rcp_c_[0-9a-f]{24} of the store/);
    }
    for (const i of [0, 1]) {
      replicas.push(
        await startHttpProcess(
          ['serve', '--http', '127.0.0.1:0', '--data', join(WORK, `default-${i}`), '--corpora', rootOf(i)],
          { RCP_STORE_URL: cluster.url, RCP_STORE_POLL_MS: '200', RCP_API_KEYS: API_KEYS },
          { monitorKey: KEYS.admin },
        ),
      );
    }
  }, 180_000);

  afterAll(async () => {
    await Promise.all(replicas.map((replica) => replica.stop()));
    cluster?.destroy();
    rmSync(WORK, { recursive: true, force: true });
  });

  it('the CLI lists the corpora of the store and refuses a second create of one name', async () => {
    const listed = await runCommand(['corpus', 'list', '--store', cluster.url]);
    expect(listed.stdout.trim().split('\n')).toEqual(['acme', 'beta']);
    const again = await runCommand(['corpus', 'create', 'acme', '--store', cluster.url]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/corpus 'acme' already exists/);
  });

  it('a write to a corpus through one replica is read through the other; corpora with the same ids stay apart', async () => {
    const add = (at: number, corpus: string, key: string, documents: object[]) =>
      call(at, corpus, key, 'index/add', { documents });
    expect((await add(0, 'acme', KEYS.acme, [{ id: 'd1', text: 'acme kinase secret one' }])).error).toBeUndefined();
    expect((await add(1, 'beta', KEYS.beta, [{ id: 'd1', text: 'beta kinase note one' }])).error).toBeUndefined();
    await until(async () => (await texts(1, 'acme', KEYS.acme)).length === 1, 'acme written on 0 read on 1', {
      timeoutMs: CONVERGE_MS,
    });
    await until(async () => (await texts(0, 'beta', KEYS.beta)).length === 1, 'beta written on 1 read on 0', {
      timeoutMs: CONVERGE_MS,
    });
    expect(await texts(1, 'acme', KEYS.acme)).toEqual(['acme kinase secret one']);
    expect(await texts(0, 'beta', KEYS.beta)).toEqual(['beta kinase note one']);
    // §15.6 a key reaches its own corpus alone, and the default corpus (public schema) holds neither.
    expect((await call(0, 'beta', KEYS.acme, 'retrieve', { query: 'kinase', k: 5 })).error?.code).toBe(-32012);
    expect(await texts(0, 'default', KEYS.admin)).toEqual([]);
    // Each replica keeps its replica of a corpus in its own root, named as the corpus's schema.
    for (const i of [0, 1]) expect(readdirSync(rootOf(i)).filter((name) => name.startsWith('rcp_c_'))).toHaveLength(2);
  });

  it('a replica listens for the writes of all its corpora on one connection (connections bounded per process)', async () => {
    const db = new pg.Client({ connectionString: cluster.url });
    await db.connect();
    try {
      // Each replica has the default corpus, acme and beta open: one listening connection each, not three.
      const listening = await db.query<{ n: string }>(
        "SELECT count(*) AS n FROM pg_stat_activity WHERE query LIKE 'LISTEN %' AND pid <> pg_backend_pid()",
      );
      expect(Number(listening.rows[0]!.n)).toBe(2);
    } finally {
      await db.end();
    }
  });

  it('an HTTP session of a corpus opened on one replica continues on the other, and in no other corpus (§5.2)', async () => {
    const inSession = async (
      at: number,
      corpus: string,
      key: string,
      method: string,
      params: object,
      session: string,
    ) => {
      const response = await fetch(`${replicas[at]!.origin}/rcp/corpora/${corpus}/${method}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'rcp-session': session },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
      });
      return (await response.json()) as Answer;
    };
    const initialize = { protocolVersion: 1, client: { name: 't', version: '1' }, capabilities: {} };
    const opened = await inSession(0, 'acme', KEYS.acme, 'initialize', initialize, 'new');
    const token = (opened.result!._meta as { session: string }).session;
    expect((await inSession(1, 'acme', KEYS.acme, 'ping', {}, token)).error).toBeUndefined();
    // The admin key may use both corpora: the session is acme's, unknown in beta's store.
    const initializeAdmin = await inSession(0, 'acme', KEYS.admin, 'initialize', initialize, 'new');
    const adminToken = (initializeAdmin.result!._meta as { session: string }).session;
    expect((await inSession(1, 'beta', KEYS.admin, 'ping', {}, adminToken)).error?.code).toBe(-32001);
    expect((await inSession(1, 'acme', KEYS.acme, 'shutdown', {}, token)).error).toBeUndefined();
    expect((await inSession(0, 'acme', KEYS.acme, 'ping', {}, token)).error?.code).toBe(-32001);
  });

  it('catalog/list on either replica shows a key the corpora it may use, each at its endpoint', async () => {
    for (const i of [0, 1]) {
      const listed = await call(i, 'acme', KEYS.acme, 'catalog/list', {});
      const engines = listed.result!.engines as { id: string; endpoint: { url: string } }[];
      expect(engines.map((engine) => engine.id)).toEqual(['acme']);
      expect(engines[0]!.endpoint.url).toBe('/rcp/corpora/acme');
    }
  });

  it('over stdio and MCP, --corpus serves one corpus of the store', async () => {
    const run = await cli(
      ['serve', '--stdio', '--corpora', join(WORK, 'root-stdio'), '--corpus', 'beta'],
      STDIO_RETRIEVE.input('kinase'),
    );
    expect(run.code, run.stderr).toBe(0);
    expect(STDIO_RETRIEVE.texts(run.stdout)).toEqual(['beta kinase note one']);
    const unknown = await cli(['serve', '--stdio', '--corpora', join(WORK, 'root-stdio'), '--corpus', 'nope'], '');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/no corpus 'nope'/);

    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ['bin/rcp-server.js', 'mcp', '--corpora', join(WORK, 'root-mcp'), '--corpus', 'acme'],
      cwd: fileURLToPath(new URL('../..', import.meta.url)),
      env: { ...(process.env as Record<string, string>), RCP_LOG_LEVEL: 'warn', RCP_STORE_URL: cluster.url },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'tenants-pg-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      const found = (await client.callTool({ name: 'retrieve', arguments: { query: 'kinase', k: 10 } })) as {
        structuredContent?: { hits: { text: string }[] };
      };
      expect((found.structuredContent?.hits ?? []).map((hit) => hit.text)).toEqual(['acme kinase secret one']);
    } finally {
      await client.close();
    }
  });

  it('a drop is refused while a write to the corpus is in flight, then removes it from every replica', async () => {
    const db = new pg.Client({ connectionString: cluster.url });
    await db.connect();
    try {
      const id = (await db.query<{ id: string }>("SELECT id FROM rcp_corpora WHERE name = 'beta'")).rows[0]!.id;
      expect(await texts(0, 'beta', KEYS.beta)).toEqual(['beta kinase note one']);
      // A write in flight holds its corpus's write-order lock to its commit: this one is held here.
      await db.query('BEGIN');
      await db.query('SELECT pg_advisory_xact_lock($1)', [spaceOf(id).writeOrder]);
      const refused = await call(0, 'default', KEYS.admin, 'x-rcp-server/corpora/drop', { name: 'beta' });
      expect(refused.error?.code).toBe(-32010);
      expect(JSON.stringify(refused.error)).toMatch(/a write to corpus 'beta' is in flight/);
      // Refused, it stays open on the replica that was asked (its HTTP sessions with it).
      const listed = await call(0, 'default', KEYS.admin, 'x-rcp-server/corpora/list', {});
      expect(listed.result!.corpora).toContainEqual({ name: 'beta', open: true });
      await db.query('ROLLBACK');
      expect(await texts(1, 'beta', KEYS.beta)).toEqual(['beta kinase note one']);

      const dropped = await call(0, 'default', KEYS.admin, 'x-rcp-server/corpora/drop', { name: 'beta' });
      expect(dropped.result).toEqual({ name: 'beta', dropped: true, documents: 1, chunks: 1 });
      expect(existsSync(join(rootOf(0), spaceOf(id).schema))).toBe(false);
      const schemas = await db.query('SELECT 1 FROM information_schema.schemata WHERE schema_name = $1', [
        spaceOf(id).schema,
      ]);
      expect(schemas.rowCount).toBe(0);
      // The other replica had it open: it finds it gone and answers as for a corpus that does not exist.
      await until(
        async () => (await call(1, 'beta', KEYS.beta, 'retrieve', { query: 'kinase', k: 5 })).error?.code === -32012,
        'beta gone on replica 1',
        { timeoutMs: CONVERGE_MS },
      );
      // …and removes its replica of it.
      await until(() => !existsSync(join(rootOf(1), spaceOf(id).schema)), "replica 1's copy of beta removed");
      expect(await texts(1, 'acme', KEYS.acme)).toEqual(['acme kinase secret one']);
    } finally {
      await db.end();
    }
  });

  it('while the database is away, an open corpus goes on serving; any other name is -32010 alike, existing or not', async () => {
    expect(await texts(0, 'acme', KEYS.acme)).toEqual(['acme kinase secret one']);
    cluster.stop();
    try {
      const code = async (corpus: string) =>
        (await call(0, corpus, KEYS.admin, 'retrieve', { query: 'kinase', k: 5 })).error?.code;
      // Once the last reading of the catalog is out of date, a name not open here cannot be looked up.
      await until(async () => (await code('zeta')) === -32010, 'an unknown corpus answered -32010 with the store away');
      expect(await code('acme')).toBeUndefined();
      expect((await call(0, 'acme', KEYS.acme, 'catalog/list', {})).error?.code).toBe(-32010);
      const listed = await call(0, 'default', KEYS.admin, 'x-rcp-server/corpora/list', {});
      expect(listed.error?.code).toBe(-32010);
    } finally {
      cluster.start();
    }
    await until(
      async () => (await call(0, 'zeta', KEYS.admin, 'retrieve', { query: 'kinase', k: 5 })).error?.code === -32012,
      'an unknown corpus answered -32012 once the store is back',
      { timeoutMs: CONVERGE_MS },
    );
  });

  it('rows of the catalog not made by a server are no corpora: not listed, and dropped as rows alone', async () => {
    cluster.sql("INSERT INTO rcp_corpora (name, id) VALUES ('Bad/../Name', 'x'), ('badid', 'XYZ; drop table t')");
    const listed = await cli(['corpus', 'list']);
    expect(listed.stdout).not.toMatch(/Bad|badid/);
    const engines = (await call(0, 'acme', KEYS.admin, 'catalog/list', {})).result!.engines as { id: string }[];
    expect(engines.map((engine) => engine.id)).not.toContain('badid');
    const dropped = await cli(['corpus', 'drop', 'badid']);
    expect(dropped.stdout).toMatch(/dropped corpus 'badid': 0 documents, 0 chunks removed/);
    cluster.sql("DELETE FROM rcp_corpora WHERE name = 'Bad/../Name'");
  });

  it('a stdio process serving a corpus ends when the corpus is dropped from the store (exit 2, saying so)', async () => {
    expect((await cli(['corpus', 'create', 'epsilon'])).code).toBe(0);
    const argv = ['bin/rcp-server.js', 'serve', '--stdio', '--corpora', join(WORK, 'root-eps'), '--corpus', 'epsilon'];
    const stdio = spawnStdio(
      { config: { 'models.encoder': 'use-lite', 'store.url': cluster.url, 'store.pollMs': 200 } },
      argv,
    );
    const exited = new Promise<number | null>((resolve) => stdio.child.once('exit', (code) => resolve(code)));
    const answered = new Promise((resolve) => readFrames(stdio.child, resolve));
    stdio.child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' })}\n`);
    await answered;
    expect((await cli(['corpus', 'drop', 'epsilon'])).code).toBe(0);
    expect(await exited).toBe(2);
    expect(stdio.stderr()).toMatch(/no longer in its store of record \(dropped\)/);
  });

  it('a corpus whose schema is missing (dropped by hand) fails to open at once, not after a wait per request', async () => {
    expect((await cli(['corpus', 'create', 'delta'])).code).toBe(0);
    const id = cluster.sql("SELECT id FROM rcp_corpora WHERE name = 'delta'");
    cluster.sql(`DROP SCHEMA ${spaceOf(id).schema} CASCADE`);
    await until(
      async () => (await call(0, 'delta', KEYS.admin, 'retrieve', { query: 'kinase', k: 5 })).error?.code === -32010,
      'delta answered -32010',
    );
    const answer = await call(0, 'delta', KEYS.admin, 'retrieve', { query: 'kinase', k: 5 });
    expect(answer.error?.message).toBe('corpus unavailable');
    expect(replicas[0]!.stderr()).toMatch(/"corpus":"delta".*no schema has been selected to create in/);
  });

  it('a corpus dropped while a replica was away is removed from its root at its next start', async () => {
    const created = await cli(['corpus', 'create', 'gamma']);
    expect(created.code, created.stderr).toBe(0);
    const root = join(WORK, 'root-away');
    const args = ['serve', '--http', '127.0.0.1:0', '--data', join(WORK, 'default-away'), '--corpora', root];
    const env = { RCP_STORE_URL: cluster.url, RCP_STORE_POLL_MS: '200', RCP_API_KEYS: API_KEYS };
    const away = await startHttpProcess(args, env, { monitorKey: KEYS.admin });
    replicas.push(away);
    const gamma = await fetch(`${away.origin}/rcp/corpora/gamma/retrieve`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEYS.admin}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'retrieve', params: { query: 'kinase', k: 5 } }),
    });
    expect(((await gamma.json()) as Answer).error).toBeUndefined();
    const folders = readdirSync(root);
    expect(folders).toHaveLength(1);
    await away.stop();
    const dropped = await cli(['corpus', 'drop', 'gamma']);
    expect(dropped.stdout).toMatch(/dropped corpus 'gamma': 0 documents, 0 chunks removed/);
    replicas.push(await startHttpProcess(args, env, { monitorKey: KEYS.admin }));
    await until(() => !existsSync(join(root, folders[0]!)), 'the replica of gamma removed');
  });
});
