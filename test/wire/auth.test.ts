import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { track } from '../helpers/children.js';
import { assertValidFrame } from '../helpers/schema.js';
import { connect, INITIALIZE, request, ROOT, testConfig, type Frame } from '../helpers/wire.js';

/** §5.2 §15.6 API keys over a real HTTP socket: who may ask what, and that nothing leaks before authentication. */
const READ_KEY = 'read-only-key-0123456789';
const WRITE_KEY = 'writer-key-0123456789abc';
const HASHED_KEY = 'hashed-admin-key-0123456789';
const ENCODER = `${ROOT}/models/use-lite`;

let app: App;
let origin: string;
beforeAll(async () => {
  app = createApp(
    testConfig({
      'models.encoder': ENCODER,
      'auth.apiKeys': [
        { key: READ_KEY, scopes: ['read'] },
        { key: WRITE_KEY, scopes: ['read', 'write'] },
        { sha256: createHash('sha256').update(HASHED_KEY).digest('hex'), scopes: ['admin'] },
      ],
    }),
  );
  origin = await (await app.buildHttp()).listen({ host: '127.0.0.1', port: 0 });
});
afterAll(() => app.close());

async function post(
  body: object | string,
  key?: string,
  path = '/rcp',
): Promise<{ status: number; json: Frame | Frame[] | undefined }> {
  const response = await fetch(`${origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key === undefined ? {} : { authorization: `Bearer ${key}` }) },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  const json = text === '' ? undefined : (JSON.parse(text) as Frame | Frame[]);
  if (json !== undefined) assertValidFrame(json);
  return { status: response.status, json };
}
const code = (frame: Frame | Frame[] | undefined) => ((frame as Frame).error as { code: number } | undefined)?.code;

describe('API keys (§15.6)', () => {
  it('without a key, even initialize and info are -32012: capabilities cannot be enumerated', async () => {
    for (const method of ['initialize', 'info', 'ping', 'retrieve']) {
      const { status, json } = await post(
        method === 'initialize' ? INITIALIZE(1) : request(1, method, { query: 'q', k: 1 }),
      );
      expect(status).toBe(200);
      expect(code(json)).toBe(-32012);
      expect(JSON.stringify(json)).not.toContain('capabilities');
    }
    expect(code((await post(INITIALIZE(2), 'not-a-key-at-all-123456')).json)).toBe(-32012);
  });

  it('a read key reads but cannot write; the corpus is untouched', async () => {
    await post(INITIALIZE('r'), READ_KEY);
    const before = (await app.corpus!.stats()).documents;
    const write = await post(request(2, 'index/add', { documents: [{ id: 'x', text: 'should not land' }] }), READ_KEY);
    expect(code(write.json)).toBe(-32012);
    expect((await app.corpus!.stats()).documents).toBe(before);
    expect(code((await post(request(3, 'retrieve', { query: 'q', k: 1 }), READ_KEY)).json)).toBeUndefined();
  });

  it('a write key writes; an admin key configured by its sha256 does everything', async () => {
    await post(INITIALIZE('w'), WRITE_KEY);
    const added = await post(
      request(4, 'index/add', { documents: [{ id: 'w1', text: 'written with the write scope' }] }),
      WRITE_KEY,
    );
    expect((added.json as Frame).result).toMatchObject({ ids: ['w1'] });
    await post(INITIALIZE('a'), HASHED_KEY);
    const removed = await post(request(5, 'index/delete', { ids: ['w1'] }), HASHED_KEY);
    expect((removed.json as Frame).result).toMatchObject({ deleted: 1 });
  });

  it("§10 §15.6 a cursor continues its own caller's request: another key replaying it is -32602", async () => {
    const documents = ['alpha', 'beta', 'gamma'].map((word, i) => ({ id: `c${i}`, text: `cursor ${word} cursor` }));
    await post(request(20, 'index/add', { documents }), WRITE_KEY);
    const page = async (key: string, cursor?: string) =>
      (
        await post(
          request(21, 'retrieve', { query: 'cursor', k: 1, mode: 'sparse', ...(cursor ? { cursor } : {}) }),
          key,
        )
      ).json as Frame;
    const first = (await page(READ_KEY)).result as { nextCursor?: string };
    expect(first.nextCursor).toBeDefined();
    expect((await page(HASHED_KEY, first.nextCursor)).error).toMatchObject({ code: -32602, data: { field: 'cursor' } });
    expect((await page(READ_KEY, first.nextCursor)).error).toBeUndefined();
  });

  it('in a batch, only the members the key may call run', async () => {
    const batch = [
      request(6, 'ping'),
      request(7, 'index/delete', { ids: ['nothing'] }),
      { jsonrpc: '2.0', method: 'index/add', params: { documents: [{ text: 'notification write' }] } },
    ];
    const before = (await app.corpus!.stats()).documents;
    const { json } = await post(batch, READ_KEY);
    const replies = json as Frame[];
    expect(replies.find((r) => r.id === 6)?.result).toBeDefined();
    expect(code(replies.find((r) => r.id === 7))).toBe(-32012);
    expect(replies).toHaveLength(2);
    expect((await app.corpus!.stats()).documents).toBe(before);
  });

  it('fuzz: no header, method or batch shape reaches a write without the write scope', async () => {
    const before = await app.corpus!.stats();
    const header = fc.oneof(
      fc.constant(undefined),
      fc.constant(READ_KEY),
      fc.string({ maxLength: 40 }),
      fc.constant(`${WRITE_KEY}x`),
      fc.constant(WRITE_KEY.toUpperCase()),
    );
    const member = fc.record(
      {
        jsonrpc: fc.constant('2.0'),
        id: fc.oneof(fc.integer(), fc.constant(undefined)),
        method: fc.constantFrom('index/add', 'index/delete', 'ping', 'initialize'),
        params: fc.constant({ documents: [{ id: 'fuzz', text: 'fuzz' }], ids: ['w1', 'x'] }),
      },
      { requiredKeys: ['jsonrpc', 'method', 'params'] },
    );
    await fc.assert(
      fc.asyncProperty(
        header,
        fc.oneof(member, fc.array(member, { minLength: 1, maxLength: 4 })),
        async (key, body) => {
          const { status } = await post(body, key);
          expect([200, 204]).toContain(status);
        },
      ),
      { numRuns: 150 },
    );
    expect(await app.corpus!.stats()).toEqual(before);
    expect(app.corpus!.getDocument('fuzz')).toBeUndefined();
  });
});

describe('stdio needs no credentials (the spawning host decides)', () => {
  it('serves a configured-keys server over stdio without any key', async () => {
    const client = await connect('stdio', { config: { 'auth.apiKeys': [{ key: READ_KEY, scopes: ['read'] }] } });
    expect(((await client.exchange(INITIALIZE())) as Frame).result).toBeDefined();
    await client.close();
  });
});

describe('binding (§15.6: loopback by default)', () => {
  const serve = (env: Record<string, string>) =>
    new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = track(
        spawn(process.execPath, ['bin/rcp-server.js', 'serve', '--http', '0.0.0.0:0'], {
          cwd: ROOT,
          env: { ...process.env, RCP_ENCODER: 'none', ...env },
        }),
      );
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        if (stderr.includes('listening')) child.kill('SIGTERM');
      });
      child.once('close', (exit) => resolve({ code: exit, stderr }));
    });

  it('refuses a public address without API keys, with exit 2 and the reason', async () => {
    const { code: exit, stderr } = await serve({});
    expect(exit).toBe(2);
    expect(stderr).toMatch(/refusing to serve 0\.0\.0\.0 without authentication/);
  });

  it('refuses operator endpoints on a public address (they ask no key), even with API keys', async () => {
    const keys = JSON.stringify([{ key: READ_KEY, scopes: ['read'] }]);
    const { stderr } = await serve({
      RCP_API_KEYS: keys,
      RCP_HTTP_OPERATOR_PORT: '0',
      RCP_HTTP_OPERATOR_HOST: '0.0.0.0',
    });
    // Port 0: no operator listener at all, so nothing to refuse.
    expect(stderr).toMatch(/listening/);
    const refused = await serve({
      RCP_API_KEYS: keys,
      RCP_HTTP_OPERATOR_PORT: '19464',
      RCP_HTTP_OPERATOR_HOST: '0.0.0.0',
    });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/refusing to serve the operator endpoints on 0\.0\.0\.0 without authentication/);
  });

  it('serves a public address with API keys, or when explicitly told to', async () => {
    expect((await serve({ RCP_API_KEYS: JSON.stringify([{ key: READ_KEY, scopes: ['read'] }]) })).stderr).toMatch(
      /listening/,
    );
    expect((await serve({ RCP_ALLOW_UNAUTHENTICATED: 'true' })).stderr).toMatch(/listening/);
  });
});

describe('rcp-server config --print', () => {
  it('prints the effective configuration from file and environment, with plain API keys, the cursor key and url passwords hidden', async () => {
    const child = track(
      spawn(process.execPath, ['bin/rcp-server.js', 'config', '--print'], {
        cwd: ROOT,
        env: {
          ...process.env,
          RCP_API_KEYS: JSON.stringify([{ key: WRITE_KEY, scopes: ['write'] }]),
          RCP_HTTP_PORT: '9099',
          RCP_REDIS_URL: 'redis://ops:hunter2@cache:6379/0',
          RCP_STORE_URL: 'postgres://rcp:swordfish@db:5432/rcp',
          RCP_RETRIEVE_CURSOR_SECRET: 'cursor-signing-key-42',
        },
      }),
    );
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const exit = await new Promise((resolve) => child.once('close', resolve));
    expect(exit).toBe(0);
    expect(stdout).not.toContain(WRITE_KEY);
    const printed = JSON.parse(stdout) as {
      http: { port: number };
      auth: { apiKeys: { key: string }[] };
      redis: { url: string };
      store: { url: string };
      retrieve: { cursorSecret: string };
    };
    expect(printed.http.port).toBe(9099);
    expect(printed.auth.apiKeys[0]?.key).toBe('***');
    expect(stdout).not.toContain('hunter2');
    expect(printed.redis.url).toBe('redis://ops:***@cache:6379/0');
    for (const secret of ['swordfish', 'cursor-signing-key-42']) expect(stdout).not.toContain(secret);
    expect(printed.store.url).toBe('postgres://rcp:***@db:5432/rcp');
    expect(printed.retrieve.cursorSecret).toBe('***');
  });
});
