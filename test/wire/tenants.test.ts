import { existsSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type Socket } from 'node:net';
import { runCommand, until, untilLogged } from '../helpers/children.js';
import { readFrames, spawnStdio, STDIO_RETRIEVE } from '../helpers/wire.js';
import { startHttpProcess, type ServerProcess } from '../helpers/processes.js';

/**
 * Named corpora in one process (docs/tenants.md, §7.13, §15.6): two tenants, each with a key bound to its corpus,
 * corpora holding the same document ids. Every way of reaching the other tenant's data fails the same way as a corpus
 * that does not exist; what one corpus issues (cursors, sessions, idempotency keys) means nothing in another. A real
 * server process over a real root made by the CLI.
 */
const WORK = mkdtempSync(join(tmpdir(), 'rcp-tenants-'));
const ROOT = join(WORK, 'corpora');
const KEYS = {
  acme: 'acme-key-0123456789',
  beta: 'beta-key-0123456789',
  admin: 'admin-key-0123456789',
  operator: 'operator-key-0123456789',
};
const API_KEYS = JSON.stringify([
  { key: KEYS.acme, scopes: ['read', 'write'], corpora: ['acme'] },
  { key: KEYS.beta, scopes: ['read', 'write'], corpora: ['beta*'] },
  { key: KEYS.admin, scopes: ['admin'], corpora: ['*'] },
  { key: KEYS.operator, scopes: ['admin'] },
]);
let server: ServerProcess;

beforeAll(async () => {
  for (const name of ['acme', 'beta']) {
    const created = await runCommand(['corpus', 'create', name, '--data', ROOT]);
    expect(created.code, created.stderr).toBe(0);
  }
  server = await startHttpProcess(
    ['serve', '--http', '127.0.0.1:0', '--data', join(WORK, 'default'), '--corpora', ROOT],
    { RCP_API_KEYS: API_KEYS, RCP_CORPORA_IDLE_SECONDS: '2', RCP_RETRIEVE_CURSOR_SECRET: 'one-secret-for-all' },
    { monitorKey: KEYS.admin },
  );
  await add('acme', KEYS.acme, [
    { id: 'd1', text: 'acme kinase pathway secret one' },
    { id: 'd2', text: 'acme kinase inhibitor secret two' },
    { id: 'd3', text: 'acme kinase assay secret three' },
  ]);
  await add('beta', KEYS.beta, [
    { id: 'd1', text: 'beta kinase public note one' },
    { id: 'd2', text: 'beta kinase public note two' },
  ]);
});
afterAll(async () => {
  await server?.stop();
  rmSync(WORK, { recursive: true, force: true });
});

type Answer = { result?: Record<string, unknown>; error?: { code: number; message: string; data?: unknown } };

async function post(path: string, key: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${server.origin}/rcp/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as Answer | Answer[] };
}

async function call(corpus: string, key: string, method: string, params: object, headers?: Record<string, string>) {
  const path = corpus === 'default' ? method : `corpora/${corpus}/${method}`;
  return (await post(path, key, { jsonrpc: '2.0', id: 1, method, params }, headers)).body as Answer;
}

/** One call, without a key, to corpus `corpus` of the server at `origin` (one started by a test of its own). */
async function callAt(origin: string, corpus: string, method: string, params: object): Promise<Answer> {
  const response = await fetch(`${origin}/rcp/corpora/${corpus}/${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return (await response.json()) as Answer;
}

async function add(corpus: string, key: string, documents: object[]) {
  const answer = await call(corpus, key, 'index/add', { documents });
  expect(answer.error).toBeUndefined();
  return answer.result!;
}

/** The server's log from now on: what it writes after this call (a close logged before it does not count). */
function logFromNow() {
  const from = server.stderr().length;
  return { child: server.child, stderr: () => server.stderr().slice(from) };
}

const closedIdle = (name: string) => new RegExp(`"corpus":"${name}","why":"idle","msg":"corpus closed"`);

/**
 * A request to `corpus` on a socket of its own: an index/add of 300 documents, which holds the corpus open while they
 * are embedded (a request holds its corpus from the end of its body until it is answered). `done` once answered.
 */
async function busy(origin: string, corpus: string, key?: string): Promise<{ socket: Socket; done: () => boolean }> {
  const socket = connect(Number(new URL(origin).port), '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  const words = ['kinase', 'protein', 'membrane', 'signal', 'neuron', 'enzyme', 'tumour', 'virus'];
  const documents = Array.from({ length: 300 }, (_, i) => ({
    id: `busy-${i}`,
    text: Array.from({ length: 40 }, (_, w) => `${words[(i + w) % 8]}${(i * w) % 97}`).join(' '),
  }));
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'index/add', params: { documents } });
  const auth = key === undefined ? '' : `Authorization: Bearer ${key}\r\n`;
  let answered = false;
  socket.on('data', () => (answered = true));
  socket.on('error', () => undefined);
  socket.write(
    `POST /rcp/corpora/${corpus}/index/add HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${auth}` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
  return { socket, done: () => answered || socket.destroyed };
}

async function texts(corpus: string, key: string, query = 'kinase'): Promise<string[]> {
  const answer = await call(corpus, key, 'retrieve', { query, k: 10, mode: 'sparse' });
  expect(answer.error).toBeUndefined();
  return (answer.result!.hits as { text: string }[]).map((hit) => hit.text).sort();
}

describe('named corpora: each tenant confined to its own (§15.6)', () => {
  it('a key retrieves its own corpus only, with the same ids in both', async () => {
    expect(await texts('acme', KEYS.acme)).toEqual([
      'acme kinase assay secret three',
      'acme kinase inhibitor secret two',
      'acme kinase pathway secret one',
    ]);
    expect(await texts('beta', KEYS.beta)).toEqual(['beta kinase public note one', 'beta kinase public note two']);
  });

  it("another tenant's corpus, a corpus that does not exist and a malformed name are one answer (§15.6)", async () => {
    const refusals = await Promise.all([
      call('beta', KEYS.acme, 'retrieve', { query: 'kinase' }),
      call('nope', KEYS.acme, 'retrieve', { query: 'kinase' }),
      call('default', KEYS.acme, 'retrieve', { query: 'kinase' }),
      call('acme', KEYS.beta, 'index/delete', { ids: ['d1'] }),
      call('beta-two', KEYS.beta, 'retrieve', { query: 'kinase' }),
      call('..', KEYS.beta, 'retrieve', { query: 'kinase' }),
      call('Acme', KEYS.admin, 'retrieve', { query: 'kinase' }),
      post('corpora/acme', KEYS.beta, [
        { jsonrpc: '2.0', id: 1, method: 'retrieve', params: { query: 'kinase' } },
      ]).then((answer) => answer.body as Answer),
    ]);
    for (const refusal of refusals) {
      expect(refusal).toEqual(refusals[0]);
    }
    expect(refusals[0].error).toMatchObject({ code: -32012 });
    expect(JSON.stringify(refusals[0])).not.toMatch(/acme|beta|nope/);
    // Nothing of acme was deleted by beta's attempt.
    expect(await texts('acme', KEYS.acme)).toHaveLength(3);
  });

  it('catalog/list shows a key the corpora it may use, each with its endpoint (§7.13)', async () => {
    const listed = async (key: string, corpus: string) => {
      const answer = await call(corpus, key, 'catalog/list', {});
      const engines = answer.result!.engines as { id: string; endpoint: { url: string } }[];
      return engines.map((engine) => `${engine.id} ${engine.endpoint.url}`);
    };
    expect(await listed(KEYS.acme, 'acme')).toEqual(['acme /rcp/corpora/acme']);
    expect(await listed(KEYS.beta, 'beta')).toEqual(['beta /rcp/corpora/beta']);
    expect(await listed(KEYS.admin, 'default')).toEqual([
      'default /rcp',
      'acme /rcp/corpora/acme',
      'beta /rcp/corpora/beta',
    ]);
  });

  it('index/delete of an id removes it from the caller’s corpus alone', async () => {
    await add('beta', KEYS.beta, [{ id: 'd9', text: 'beta kinase throwaway' }]);
    await add('acme', KEYS.acme, [{ id: 'd9', text: 'acme kinase throwaway' }]);
    const deleted = await call('beta', KEYS.beta, 'index/delete', { ids: ['d9'] });
    expect(deleted.result).toMatchObject({ deleted: 1 });
    expect(await texts('acme', KEYS.acme)).toContain('acme kinase throwaway');
    expect(await texts('beta', KEYS.beta)).not.toContain('beta kinase throwaway');
    await call('acme', KEYS.acme, 'index/delete', { ids: ['d9'] });
  });

  it('a cursor of one corpus is no cursor in another (§10), even for one key that may use both', async () => {
    const params = { query: 'kinase', k: 1, mode: 'sparse' };
    const first = await call('acme', KEYS.admin, 'retrieve', params);
    const cursor = first.result!.nextCursor as string;
    expect(typeof cursor).toBe('string');
    const next = await call('acme', KEYS.admin, 'retrieve', { ...params, cursor });
    expect(next.error).toBeUndefined();
    const replayed = await call('beta', KEYS.admin, 'retrieve', { ...params, cursor });
    expect(replayed.error).toMatchObject({ code: -32602 });
  });

  it('an HTTP session of one corpus is unknown in another (§5.2)', async () => {
    const init = { protocolVersion: 1, client: { name: 't', version: '1' }, capabilities: {} };
    const opened = await call('acme', KEYS.admin, 'initialize', init, { 'rcp-session': 'new' });
    const token = (opened.result!._meta as { session: string }).session;
    const own = await call('acme', KEYS.admin, 'ping', {}, { 'rcp-session': token });
    expect(own.error).toBeUndefined();
    const elsewhere = await call('beta', KEYS.admin, 'ping', {}, { 'rcp-session': token });
    expect(elsewhere.error).toMatchObject({ code: -32001 });
  });

  it('an idempotency key used in one corpus is a new key in another (§7.10)', async () => {
    const meta = { idempotencyKey: 'same-key' };
    const inAcme = await call('acme', KEYS.admin, 'index/add', {
      documents: [{ id: 'k1', text: 'acme kinase keyed' }],
      _meta: meta,
    });
    const inBeta = await call('beta', KEYS.admin, 'index/add', {
      documents: [{ id: 'k1', text: 'beta kinase keyed' }],
      _meta: meta,
    });
    expect(inAcme.error).toBeUndefined();
    expect(inBeta.error).toBeUndefined();
    expect(await texts('beta', KEYS.beta)).toContain('beta kinase keyed');
    expect(await texts('acme', KEYS.acme)).toContain('acme kinase keyed');
  });
});

describe('named corpora: opened on demand, closed when idle, dropped from the CLI', () => {
  it('a corpus unused for corpora.idleSeconds is closed, and the next request opens it again whole', async () => {
    const log = logFromNow();
    const before = await texts('acme', KEYS.acme);
    await untilLogged(log, closedIdle('acme'));
    expect(await texts('acme', KEYS.acme)).toEqual(before);
  });

  it('over stdio, --corpus serves one named corpus as the process’s own', async () => {
    const input = STDIO_RETRIEVE.input('kinase');
    const run = await runCommand(['serve', '--stdio', '--corpora', ROOT, '--corpus', 'beta'], {}, input);
    expect(run.code, run.stderr).toBe(0);
    const texts = STDIO_RETRIEVE.texts(run.stdout);
    expect(texts.length).toBeGreaterThan(0);
    expect(texts.every((text) => text.startsWith('beta'))).toBe(true);
    const unknown = await runCommand(['serve', '--stdio', '--corpora', ROOT, '--corpus', 'nope'], {}, '');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/no corpus 'nope'/);
    const aFile = await runCommand(['serve', '--stdio', '--corpora', join(ROOT, 'acme', 'corpus.json')], {}, '');
    expect(aFile.code).toBe(2);
    expect(aFile.stderr).toMatch(/is not a folder/);
  });

  it("§15.5 a process serving one corpus never serves another corpus's files by file uri", async () => {
    const embed = (path: string) => ({
      jsonrpc: '2.0',
      id: 2,
      method: 'embed',
      params: { inputs: [{ type: 'text', uri: pathToFileURL(path).href }] },
    });
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: 1, client: { name: 't', version: '1' } },
    };
    const input =
      [init, embed(join(ROOT, 'acme', 'corpus.json'))].map((line) => JSON.stringify(line)).join('\n') + '\n';
    const env = { RCP_CONTENT_FETCH_SCHEMES: '["file"]', RCP_CONTENT_FETCH_FILE_ROOTS: JSON.stringify([WORK]) };
    const run = await runCommand(['serve', '--stdio', '--corpora', ROOT, '--corpus', 'beta'], env, input);
    const answer = run.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Answer & { id: number })
      .find((a) => a.id === 2);
    expect(answer?.error).toMatchObject({ code: -32602 });
    expect(answer?.error?.message).toMatch(/server's corpora, which is never served/);
  });

  it('over MCP, --corpus bridges one named corpus', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: ['bin/rcp-server.js', 'mcp', '--corpora', ROOT, '--corpus', 'acme'],
      cwd: fileURLToPath(new URL('../..', import.meta.url)),
      env: { ...(process.env as Record<string, string>), RCP_LOG_LEVEL: 'warn' },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'tenants-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      const found = (await client.callTool({ name: 'retrieve', arguments: { query: 'kinase', k: 10 } })) as {
        structuredContent?: { hits: { text: string }[] };
      };
      const hits = found.structuredContent?.hits ?? [];
      expect(hits.length).toBeGreaterThan(0);
      expect(hits.every((hit) => hit.text.startsWith('acme'))).toBe(true);
    } finally {
      await client.close();
    }
  });

  it('drop is refused while a process has the corpus open, then removes it; the server then knows it not', async () => {
    const log = logFromNow();
    // A stdio process serving beta holds it open for as long as it runs.
    const argv = ['bin/rcp-server.js', 'serve', '--stdio', '--corpora', ROOT, '--corpus', 'beta'];
    const stdio = spawnStdio({ config: { 'models.encoder': 'use-lite' } }, argv);
    const answered = new Promise((resolve) => readFrames(stdio.child, resolve));
    stdio.child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' })}\n`);
    await answered;
    const refused = await runCommand(['corpus', 'drop', 'beta', '--data', ROOT]);
    stdio.child.stdin.end();
    await stdio.exited;
    await texts('beta', KEYS.beta);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/open in another process/);
    expect(existsSync(join(ROOT, 'beta'))).toBe(true);
    await untilLogged(log, closedIdle('beta'));
    const dropped = await runCommand(['corpus', 'drop', 'beta', '--data', ROOT]);
    expect(dropped.code, dropped.stderr).toBe(0);
    expect(dropped.stdout).toMatch(/dropped corpus 'beta': \d+ files, \d+ bytes removed/);
    expect(existsSync(join(ROOT, 'beta'))).toBe(false);
    const listed = await runCommand(['corpus', 'list', '--data', ROOT]);
    expect(listed.stdout.trim().split('\n')).toEqual(['acme']);
    const gone = await call('beta', KEYS.beta, 'retrieve', { query: 'kinase' });
    expect(gone.error).toMatchObject({ code: -32012 });
  });

  it('a corpus created while the server runs is served at its first request', async () => {
    expect((await runCommand(['corpus', 'create', 'beta-two', '--data', ROOT])).code).toBe(0);
    await add('beta-two', KEYS.beta, [{ id: 'd1', text: 'beta two kinase' }]);
    expect(await texts('beta-two', KEYS.beta)).toEqual(['beta two kinase']);
  });
});

describe('named corpora through the server: x-rcp-server/corpora/* (the admin scope)', () => {
  const admin = (method: string, params: object, key = KEYS.admin) =>
    call('default', key, `x-rcp-server/corpora/${method}`, params);

  it('a tenant key may not call them (-32012); an admin creates, lists and drops, and drop says what it removed', async () => {
    expect((await admin('list', {}, KEYS.acme)).error).toMatchObject({ code: -32012 });
    expect((await admin('create', { name: 'gamma' })).result).toEqual({ name: 'gamma', created: true });
    expect((await admin('create', { name: 'gamma' })).error).toMatchObject({ code: -32602 });
    expect((await admin('create', { name: '../x' })).error).toMatchObject({ code: -32602 });
    await add('gamma', KEYS.admin, [{ id: 'g1', text: 'gamma kinase' }]);
    const listed = (await admin('list', {})).result!.corpora as { name: string; open: boolean }[];
    expect(listed).toContainEqual({ name: 'gamma', open: true });
    // An admin key manages the corpora it may use: one without `corpora`, the default one alone (§15.6).
    expect((await admin('list', {}, KEYS.operator)).result).toEqual({ corpora: [] });
    expect((await admin('create', { name: 'zeta' }, KEYS.operator)).error).toMatchObject({ code: -32012 });
    expect((await admin('drop', { name: 'gamma' }, KEYS.operator)).error).toMatchObject({ code: -32012 });
    // Refused while a request holds it (a write in flight would be one), removed once it is answered.
    let held = await busy(server.origin, 'gamma', KEYS.admin);
    await until(async () => {
      const answer = await admin('drop', { name: 'gamma' });
      if (answer.error === undefined) await admin('create', { name: 'gamma' }); // it came before the write held gamma
      if (answer.error?.code !== -32011 && held.done()) held = await busy(server.origin, 'gamma', KEYS.admin);
      return answer.error?.code === -32011;
    }, 'drop refused while a write holds gamma');
    await until(() => held.done(), 'the write answered');
    held.socket.destroy();
    let dropped: Answer | undefined;
    await until(async () => {
      dropped = await admin('drop', { name: 'gamma' });
      return dropped.error === undefined;
    }, 'drop once nothing holds gamma');
    expect(dropped!.result).toMatchObject({ name: 'gamma', dropped: true, files: expect.any(Number) });
    expect((dropped!.result!.bytes as number) > 0).toBe(true);
    expect((await call('gamma', KEYS.admin, 'retrieve', { query: 'kinase' })).error).toMatchObject({ code: -32012 });
    expect((await admin('drop', { name: 'gamma' })).error).toMatchObject({ code: -32015 });
  });

  it('a corpus dropped and made again under its name is another corpus: its cursors are not the old one’s', async () => {
    const documents = [1, 2, 3].map((i) => ({ id: `y${i}`, text: `kinase note ${i}` }));
    const params = { query: 'kinase', k: 1, mode: 'sparse' };
    await admin('create', { name: 'delta' });
    await add('delta', KEYS.admin, documents);
    const cursor = (await call('delta', KEYS.admin, 'retrieve', params)).result!.nextCursor as string;
    await until(async () => (await admin('drop', { name: 'delta' })).error === undefined, 'delta dropped');
    await admin('create', { name: 'delta' });
    await add('delta', KEYS.admin, documents);
    expect((await call('delta', KEYS.admin, 'retrieve', { ...params, cursor })).error).toMatchObject({ code: -32602 });
  });

  it('metrics count answered requests by corpus and the corpora open, for the operator', async () => {
    await texts('acme', KEYS.acme);
    const response = await fetch(`${server.origin}/metrics`, { headers: { authorization: `Bearer ${KEYS.admin}` } });
    const text = await response.text();
    expect(Number(/rcp_corpus_requests_total\{corpus="acme"\} (\d+)/.exec(text)?.[1])).toBeGreaterThan(0);
    expect(text).toMatch(/rcp_corpora_open \d+/);
  });

  it('§15.6 initialize and info tell no key how many corpora there are', async () => {
    const info = await call('acme', KEYS.acme, 'info', {});
    expect((info.result!.capabilities as { catalog: object }).catalog).toEqual({});
  });
});

describe('named corpora behind a gateway (§16)', () => {
  it('federates named corpora of one server like any other engines, each reached at its endpoint', async () => {
    const registry = join(WORK, 'rcp.json');
    const headers = { authorization: `Bearer ${KEYS.admin}` };
    const engines = ['acme', 'beta-two'].map((name) => ({
      id: name,
      transport: 'http',
      url: `${server.origin}/rcp/corpora/${name}`,
      headers,
    }));
    writeFileSync(registry, JSON.stringify({ engines }));
    await add('beta-two', KEYS.beta, [{ id: 'b2', text: 'beta two kinase only here' }]);
    const gateway = await startHttpProcess(['gateway', '--registry', registry, '--http', '127.0.0.1:0']);
    try {
      const answer = await fetch(`${gateway.origin}/rcp/retrieve`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'retrieve', params: { query: 'kinase', k: 20 } }),
      });
      const hits = ((await answer.json()) as Answer).result!.hits as { text: string }[];
      // §16.3: a document's identity across engines is its id (acme's d1 and beta-two's d1 are fused as one hit).
      const texts = hits.map((hit) => hit.text);
      expect(texts).toContain('acme kinase assay secret three');
      expect(texts).toContain('beta two kinase only here');
      expect(texts.some((text) => text.startsWith('beta kinase public'))).toBe(false);
    } finally {
      await gateway.stop();
    }
  });
});

describe('named corpora: only folders of the root', () => {
  it('a link in the root to a folder elsewhere is no corpus (the root’s protections would not cover it)', async () => {
    const elsewhere = join(WORK, 'elsewhere');
    expect((await runCommand(['corpus', 'create', 'target', '--data', elsewhere])).code).toBe(0);
    symlinkSync(join(elsewhere, 'target'), join(ROOT, 'linked'));
    const listed = await runCommand(['corpus', 'list', '--data', ROOT]);
    expect(listed.stdout).not.toMatch(/linked/);
    expect((await call('linked', KEYS.admin, 'ping', {})).error).toMatchObject({ code: -32012 });
    // Nor is one made through it: the link is not followed, the folder it points to keeps its own mark.
    const made = await call('default', KEYS.admin, 'x-rcp-server/corpora/create', { name: 'linked' });
    expect(made.error).toMatchObject({ code: -32602 });
  });
});

describe('named corpora: at most corpora.maxOpen open at once', () => {
  it('the corpus unused longest is closed to make room; with every one in use, -32011 at once', async () => {
    for (const name of ['small-a', 'small-b', 'small-c'])
      expect((await runCommand(['corpus', 'create', name, '--data', ROOT])).code).toBe(0);
    const small = await startHttpProcess(
      ['serve', '--http', '127.0.0.1:0', '--data', join(WORK, 'default'), '--corpora', ROOT],
      { RCP_CORPORA_MAX_OPEN: '1' },
    );
    try {
      const ping = async (corpus: string) => {
        const response = await fetch(`${small.origin}/rcp/corpora/${corpus}/ping`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: {} }),
        });
        return (await response.json()) as Answer;
      };
      // A client gone while its corpus opens, or while its write runs, leaves it held by nothing.
      for (let i = 0; i < 3; i++) (await busy(small.origin, 'small-b')).socket.destroy();
      await until(async () => (await ping('small-a')).error === undefined, 'small-a served after hang-ups');
      expect((await ping('small-b')).error).toBeUndefined();
      await untilLogged(small, /"corpus":"small-a","why":"room","msg":"corpus closed"/);
      // A write to small-b holds it while it runs: no place is left for small-a. One that was answered (or refused,
      // having come while small-a was in use) before small-a was asked for is sent again.
      let held = await busy(small.origin, 'small-b');
      await until(async () => {
        if (held.done()) held = await busy(small.origin, 'small-b');
        return (await ping('small-a')).error?.code === -32011;
      }, 'small-a refused while a write holds small-b');
      await until(() => held.done(), 'the write answered');
      held.socket.destroy();
      await until(async () => (await ping('small-a')).error === undefined, 'small-a served once small-b is released');
      // Opened all at once: never more than one in memory (open, or still closing), by the order of the log.
      await Promise.all(['small-a', 'small-b', 'small-c', 'small-b', 'small-c'].map(ping));
      let inMemory = 0;
      let most = 0;
      for (const [, event] of small
        .stderr()
        .matchAll(/"corpus":"small-.","(?:why":"\w+","msg":"corpus (closed)|.*?"msg":"corpus (ready))/g)) {
        inMemory += event === undefined ? 1 : -1;
        most = Math.max(most, inMemory);
      }
      expect(most).toBe(1);
    } finally {
      await small.stop();
    }
  });
});

describe('named corpora: quotas', () => {
  it('corpora.maxDocuments refuses a write past it whole (-32013); replacing and deleting stay allowed', async () => {
    expect((await runCommand(['corpus', 'create', 'quota', '--data', ROOT])).code).toBe(0);
    const limited = await startHttpProcess(
      ['serve', '--http', '127.0.0.1:0', '--data', join(WORK, 'default'), '--corpora', ROOT],
      { RCP_CORPORA_MAX_DOCUMENTS: '3' },
    );
    try {
      const write = (method: string, params: object) => callAt(limited.origin, 'quota', method, params);
      const docs = (...ids: string[]) => ({ documents: ids.map((id) => ({ id, text: `quota note ${id}` })) });
      expect((await write('index/add', docs('q1', 'q2'))).error).toBeUndefined();
      const past = await write('index/add', docs('q2', 'q3', 'q4'));
      expect(past.error).toMatchObject({ code: -32013 });
      expect(JSON.stringify(past.error)).toMatch(/holds 2 documents of its quota of 3, and this write adds 2/);
      // Nothing of the refused write was applied: q3 is not there.
      const found = await write('retrieve', { query: 'quota note', k: 10, mode: 'sparse' });
      expect((found.result!.hits as { id: string }[]).map((hit) => hit.id).sort()).toEqual(['q1#0', 'q2#0']);
      expect((await write('index/add', docs('q1', 'q2', 'q3'))).error).toBeUndefined();
      expect((await write('index/delete', { ids: ['q1'] })).error).toBeUndefined();
      expect((await write('index/add', docs('q4'))).error).toBeUndefined();
    } finally {
      await limited.stop();
    }
  });
});

describe('named corpora: a quota in bytes of text', () => {
  it('corpora.maxBytes refuses a write past it whole (-32013); deleting and replacing give bytes back, also after a restart', async () => {
    expect((await runCommand(['corpus', 'create', 'qbytes', '--data', ROOT])).code).toBe(0);
    const args = ['serve', '--http', '127.0.0.1:0', '--data', join(WORK, 'default'), '--corpora', ROOT];
    let limited = await startHttpProcess(args, { RCP_CORPORA_MAX_BYTES: '100' });
    const write = (method: string, params: object) => callAt(limited.origin, 'qbytes', method, params);
    // Texts of `bytes` UTF-8 bytes: 'é' is two.
    const doc = (id: string, bytes: number) => ({ documents: [{ id, text: `${'é'.repeat(bytes / 2)}` }] });
    try {
      expect((await write('index/add', doc('a', 40))).error).toBeUndefined();
      expect((await write('index/add', doc('b', 40))).error).toBeUndefined();
      const past = await write('index/add', doc('c', 30));
      expect(past.error).toMatchObject({ code: -32013 });
      expect(JSON.stringify(past.error)).toMatch(/holds 80 bytes of text of its quota of 100, and this write adds 30/);
      // Replacing a with a shorter text gives 30 bytes back.
      expect((await write('index/add', doc('a', 10))).error).toBeUndefined();
      expect((await write('index/add', doc('c', 30))).error).toBeUndefined();
      await limited.stop();
      // Counted again from the store at the next start.
      limited = await startHttpProcess(args, { RCP_CORPORA_MAX_BYTES: '100' });
      const again = await write('index/add', doc('d', 30));
      expect(JSON.stringify(again.error)).toMatch(/holds 80 bytes of text of its quota of 100, and this write adds 30/);
      expect((await write('index/delete', { ids: ['b'] })).error).toBeUndefined();
      expect((await write('index/add', doc('d', 30))).error).toBeUndefined();
    } finally {
      await limited.stop();
    }
  });
});

describe('named corpora: room is made among the asking caller’s own corpora first', () => {
  it('a tenant going through its corpora closes its own for room, not another tenant’s', async () => {
    for (const name of ['fair-a', 'fair-b', 'fair-c'])
      expect((await runCommand(['corpus', 'create', name, '--data', ROOT])).code).toBe(0);
    const keys = JSON.stringify([
      { key: 'ops-key-0123456789', scopes: ['monitor'] },
      { key: 'one-key-0123456789', scopes: ['read'], corpora: ['fair-a'] },
      { key: 'two-key-0123456789', scopes: ['read'], corpora: ['fair-b', 'fair-c'] },
    ]);
    const fair = await startHttpProcess(
      ['serve', '--http', '127.0.0.1:0', '--data', join(WORK, 'default'), '--corpora', ROOT],
      { RCP_CORPORA_MAX_OPEN: '2', RCP_API_KEYS: keys },
      { monitorKey: 'ops-key-0123456789' },
    );
    try {
      const ping = async (corpus: string, key: string) => {
        const response = await fetch(`${fair.origin}/rcp/corpora/${corpus}/ping`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: {} }),
        });
        return (await response.json()) as Answer;
      };
      expect((await ping('fair-a', 'one-key-0123456789')).error).toBeUndefined();
      expect((await ping('fair-b', 'two-key-0123456789')).error).toBeUndefined();
      // fair-a is the one unused longest, but fair-b is the asking tenant's own.
      expect((await ping('fair-c', 'two-key-0123456789')).error).toBeUndefined();
      await untilLogged(fair, /"corpus":"fair-b","why":"room","msg":"corpus closed"/);
      expect(fair.stderr()).not.toMatch(/"corpus":"fair-a","why":"room"/);
    } finally {
      await fair.stop();
    }
  });
});
