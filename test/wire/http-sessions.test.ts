import { afterEach, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { connect as connectClient } from '../../src/client/index.js';
import { registerTestMethods } from '../fixtures/test-methods.js';
import { assertValidFrame } from '../helpers/schema.js';
import { INITIALIZE, request, ROOT, testConfig, type Frame } from '../helpers/wire.js';

/**
 * §5.2 HTTP sessions, §15.6 keys and scopes, proxies and the operator endpoints, over a real socket. Several clients
 * share one host here (every request comes from 127.0.0.1), as agents on one machine or behind one proxy do.
 */
const KEYS = {
  read: 'read-key-0123456789abcdef',
  write: 'write-key-0123456789abcdef',
  monitor: 'monitor-key-0123456789abcd',
  admin: 'admin-key-0123456789abcdef',
} as const;
type KeyName = keyof typeof KEYS;

let app: App | undefined;
let origin: string;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

async function start(overrides: Record<string, unknown> = {}, withModel = false): Promise<void> {
  const model = withModel ? { 'models.encoder': `${ROOT}/models/use-lite` } : {};
  app = createApp(testConfig({ 'http.port': 0, ...model, ...overrides }), { register: registerTestMethods });
  origin = await (await app.buildHttp()).listen({ host: '127.0.0.1', port: 0 });
}

const withKeys = (): Record<string, unknown> => ({
  'auth.apiKeys': Object.entries(KEYS).map(([scope, key]) => ({ key, scopes: [scope] })),
});

interface Answer {
  status: number;
  text: string;
  json: Frame | undefined;
}

async function post(path: string, body: object | string, headers: Record<string, string> = {}): Promise<Answer> {
  const response = await fetch(`${origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  const json = text === '' ? undefined : (JSON.parse(text) as Frame);
  if (json !== undefined && response.status === 200) assertValidFrame(json);
  return { status: response.status, text, json };
}

const code = (answer: Answer): number | undefined => (answer.json?.error as { code: number } | undefined)?.code;
const bearer = (key: KeyName): Record<string, string> => ({ authorization: `Bearer ${KEYS[key]}` });
const tokenOf = (answer: Answer): string => ((answer.json?.result as Frame)._meta as { session: string }).session;

describe('§5.2 a session belongs to one client', () => {
  it('two clients on one host that send no session header both initialize and work (no -32600 for the second)', async () => {
    await start();
    const first = await post('/rcp/initialize', INITIALIZE(1));
    const second = await post('/rcp/initialize', INITIALIZE(1));
    expect(first.json?.result).toMatchObject({ protocolVersion: 1 });
    expect(second.json?.result).toMatchObject({ protocolVersion: 1 });
    // Without a header, a request is answered statelessly (§5.2), implicitly initialized; a client that wants a
    // session of its own asks for one, and each asker gets its own.
    const opened = await Promise.all(
      [1, 2].map(() => post('/rcp/initialize', INITIALIZE(1), { 'rcp-session': 'new' })),
    );
    expect(tokenOf(opened[0]!)).not.toBe(tokenOf(opened[1]!));
    expect((await post('/rcp/x-test/echo', request(2, 'x-test/echo', { text: 'a' }))).json?.result).toEqual({
      text: 'a',
    });
  });

  it('overlapping ids, a cancel and a shutdown from one client never touch another', async () => {
    await start();
    const slow = post('/rcp/x-test/sleep', request(7, 'x-test/sleep', { ms: 400 }));
    await new Promise((resolve) => setTimeout(resolve, 50));
    // Another client, same host, same id: not "already in flight", and its cancel and shutdown reach nothing else.
    expect((await post('/rcp/x-test/sleep', request(7, 'x-test/sleep', { ms: 1 }))).json?.result).toEqual({ slept: 1 });
    expect(
      (await post('/rcp/notifications/cancel', { jsonrpc: '2.0', method: 'notifications/cancel', params: { id: 7 } }))
        .status,
    ).toBe(204);
    expect((await post('/rcp/shutdown', request(8, 'shutdown'))).json?.result).toEqual({});
    expect((await slow).json?.result).toEqual({ slept: 400 });
    expect((await post('/rcp/x-test/echo', request(9, 'x-test/echo', { text: 'b' }))).json?.result).toEqual({
      text: 'b',
    });
  });

  it('the typed client: two instances on one host, each in its own session, ids overlapping, one shutting down', async () => {
    await start();
    const [a, b] = await Promise.all([
      connectClient({ url: `${origin}/rcp` }),
      connectClient({ url: `${origin}/rcp` }),
    ]);
    try {
      const calls = [a, b].flatMap((client) =>
        Array.from({ length: 5 }, (_, i) => client.request('x-test/sleep', { ms: 20 + i })),
      );
      expect(await Promise.all(calls)).toHaveLength(10);
      await a.request('shutdown');
      expect(await b.request('x-test/echo', { text: 'still here' })).toEqual({ text: 'still here' });
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('a session named in the path keeps the whole §13 lifecycle, as the upstream harness expects', async () => {
    await start();
    const path = '/rcp/sessions/harness';
    expect(code(await post(`${path}/x-test/echo`, request(1, 'x-test/echo', { text: 'x' })))).toBe(-32001);
    expect(code(await post(`${path}/initialize`, { ...INITIALIZE(2), params: { protocolVersion: 0 } }))).toBe(-32002);
    expect(code(await post(`${path}/x-test/echo`, request(3, 'x-test/echo', { text: 'x' })))).toBe(-32001);
    expect((await post(`${path}/initialize`, INITIALIZE(4))).json?.result).toMatchObject({ protocolVersion: 1 });
    expect(code(await post(`${path}/initialize`, INITIALIZE(5)))).toBe(-32600);
    expect((await post(`${path}/x-test/echo`, request(6, 'x-test/echo', { text: 'x' }))).json?.result).toEqual({
      text: 'x',
    });
    // §4.5: a notification is not answered, even in a session the server does not know.
    const cancel = { jsonrpc: '2.0', method: 'notifications/cancel', params: { id: 1 } };
    expect((await post('/rcp/notifications/cancel', cancel, { 'rcp-session': 'unknown' })).status).toBe(204);
    // Another name is another session; a name outside the allowed characters is -32600.
    expect(code(await post('/rcp/sessions/other/x-test/echo', request(7, 'x-test/echo', { text: 'x' })))).toBe(-32001);
    for (const length of [65, 101, 600]) {
      const refused = await post(`/rcp/sessions/${'n'.repeat(length)}/ping`, request(8, 'ping'));
      expect(refused.json?.error).toMatchObject({ code: -32600, message: expect.stringContaining('session name') });
    }
    expect((await post(`/rcp/sessions/${'n'.repeat(64)}/ping`, request(9, 'ping'))).json?.result).toEqual({});
  });

  it('§11 a batch with an unknown token is answered member by member; refused members keep their own answer', async () => {
    await start(withKeys());
    const batch = [request(1, 'ping'), request(2, 'index/add', { documents: [] }), { jsonrpc: '2.0', method: 'ping' }];
    const answer = await post('/rcp', batch, { ...bearer('read'), 'rcp-session': 'expired' });
    const byId = new Map((answer.json as unknown as Frame[]).map((member) => [member.id, member]));
    expect([...byId.keys()].sort()).toEqual([1, 2]);
    expect(byId.get(1)?.error).toMatchObject({ code: -32001 });
    expect(byId.get(2)?.error).toMatchObject({ code: -32012 });
  });

  it('a batch holding initialize with an unknown token opens the session it asks for', async () => {
    await start();
    const answer = await post('/rcp', [INITIALIZE(1)], { 'rcp-session': 'new' });
    const [member] = answer.json as unknown as Frame[];
    expect(((member?.result as Frame)._meta as { session?: string }).session).toMatch(/^[\w-]{20,}$/);
  });

  it('§7.10 §7.7.3 what a write or a retrieve leaves behind belongs to its caller', async () => {
    await start(withKeys(), true);
    const add = (key: KeyName, id: string) =>
      post(
        '/rcp/index/add',
        request(1, 'index/add', {
          documents: [{ id, text: `${id} owls hunt at night` }],
          _meta: { idempotencyKey: 'nightly' },
        }),
        bearer(key),
      );
    expect((await add('admin', 'first')).json).toMatchObject({ result: { ids: ['first'] } });
    // The same idempotency key from another key is another write: applied, not answered with the first's result.
    expect((await add('write', 'second')).json?.result).toMatchObject({ ids: ['second'] });
    // The same key from the same caller is the same write.
    expect((await add('admin', 'third')).json?.result).toMatchObject({ ids: ['first'] });
    const seen = async (key: KeyName) =>
      (
        (
          await post(
            '/rcp/retrieve',
            request(2, 'retrieve', { query: 'owls', k: 1, sessionId: 'agent-1' }),
            bearer(key),
          )
        ).json?.result as { hits: { id: string }[] }
      ).hits.map((hit) => hit.id);
    const first = await seen('admin');
    // Another key's session of the same name has seen nothing: it gets the same best hit.
    expect(await seen('read')).toEqual(first);
    expect(await seen('admin')).not.toEqual(first);
  });

  it('a token works only with the key that opened it', async () => {
    await start(withKeys());
    const token = tokenOf(await post('/rcp/initialize', INITIALIZE(1), { ...bearer('admin'), 'rcp-session': 'new' }));
    const echo = request(2, 'x-test/echo', { text: 'x' });
    expect((await post('/rcp/x-test/echo', echo, { ...bearer('admin'), 'rcp-session': token })).json?.result).toEqual({
      text: 'x',
    });
    expect(code(await post('/rcp/x-test/echo', echo, { ...bearer('read'), 'rcp-session': token }))).toBe(-32001);
    expect(code(await post('/rcp/shutdown', request(3, 'shutdown'), { ...bearer('read'), 'rcp-session': token }))).toBe(
      -32001,
    );
    // The read key cannot reach the admin key's session, so its shutdown ended nothing: the token still works.
    expect((await post('/rcp/x-test/echo', echo, { ...bearer('admin'), 'rcp-session': token })).json?.result).toEqual({
      text: 'x',
    });
  });

  it("a flood of sessions from one key evicts that key's own sessions, never another key's", async () => {
    await start({ ...withKeys(), 'http.maxSessions': 100, 'http.maxSessionsPerCaller': 16 });
    const token = tokenOf(await post('/rcp/initialize', INITIALIZE(1), { ...bearer('read'), 'rcp-session': 'new' }));
    for (let round = 0; round < 30; round++) {
      await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          post('/rcp/initialize', INITIALIZE(i), { ...bearer('admin'), 'rcp-session': 'new' }),
        ),
      );
    }
    const echo = request(2, 'x-test/echo', { text: 'kept' });
    expect((await post('/rcp/x-test/echo', echo, { ...bearer('read'), 'rcp-session': token })).json?.result).toEqual({
      text: 'kept',
    });
  });
});

describe('§15.6 scopes: what each key may call, with and without a session token', () => {
  const METHODS: { method: string; params: object; access: 'lifecycle' | 'read' | 'write' }[] = [
    { method: 'info', params: {}, access: 'lifecycle' },
    { method: 'ping', params: {}, access: 'lifecycle' },
    { method: 'retrieve', params: { query: 'q', k: 1 }, access: 'read' },
    { method: 'embed', params: { inputs: ['q'] }, access: 'read' },
    { method: 'x-test/echo', params: { text: 'x' }, access: 'read' },
    { method: 'index/add', params: { documents: [{ id: 'm', text: 'matrix' }] }, access: 'write' },
    { method: 'index/delete', params: { ids: ['m'] }, access: 'write' },
    { method: 'shutdown', params: {}, access: 'lifecycle' },
  ];
  const allowed = (key: KeyName, access: string) => access === 'lifecycle' || key === 'admin' || key === access;

  it("scopes × methods × (no token, own token, another key's token)", { timeout: 60_000 }, async () => {
    await start(withKeys(), true);
    const open = async (key: KeyName) =>
      tokenOf(await post('/rcp/initialize', INITIALIZE('i'), { ...bearer(key), 'rcp-session': 'new' }));
    const cells: string[] = [];
    for (const key of Object.keys(KEYS) as KeyName[]) {
      for (const { method, params, access } of METHODS) {
        const other = key === 'admin' ? 'read' : 'admin';
        const tokens = { none: undefined, own: await open(key), foreign: await open(other) };
        for (const [mode, token] of Object.entries(tokens)) {
          const headers = { ...bearer(key), ...(token === undefined ? {} : { 'rcp-session': token }) };
          const got = code(await post(`/rcp/${method}`, request(1, method, params), headers));
          const want = !allowed(key, access) ? -32012 : mode === 'foreign' ? -32001 : undefined;
          cells.push(`${key} ${method} ${mode}: ${got ?? 'ok'}${got === want ? '' : ` (want ${want ?? 'ok'})`}`);
        }
      }
    }
    expect(cells.filter((cell) => cell.includes('want'))).toEqual([]);
  });

  it('a write-only key can initialize and write (every key runs the §13 lifecycle)', async () => {
    await start(withKeys(), true);
    expect((await post('/rcp/initialize', INITIALIZE(1), bearer('write'))).json?.result).toMatchObject({
      protocolVersion: 1,
    });
    const added = await post(
      '/rcp/index/add',
      request(2, 'index/add', { documents: [{ id: 'w', text: 'w' }] }),
      bearer('write'),
    );
    expect(added.json?.result).toMatchObject({ ids: ['w'] });
    expect(code(await post('/rcp/retrieve', request(3, 'retrieve', { query: 'w' }), bearer('write')))).toBe(-32012);
  });
});

describe('§15.6 unauthenticated answers and the operator endpoints', () => {
  it('without a key every RCP request gets the same answer, whatever its path, method, shape or batch', async () => {
    await start(withKeys());
    const bodies = [
      '[]',
      '{}',
      'not json',
      JSON.stringify(request(1, 'retrieve', { query: 'q' })),
      JSON.stringify([request(1, 'ping'), request(2, 'info')]),
      JSON.stringify({ jsonrpc: '2.0', method: 'ping' }),
    ];
    const paths = ['/rcp', '/rcp/retrieve', '/rcp/ping', '/rcp/sessions/s/ping'];
    const answers = new Set<string>();
    for (const path of paths)
      for (const body of bodies) {
        const { status, text } = await post(path, body);
        answers.add(`${status} ${text}`);
      }
    expect([...answers]).toHaveLength(1);
    expect([...answers][0]).toContain('-32012');
  });

  it('/readyz and the metrics need a monitor or admin key when keys are configured; /healthz stays open', async () => {
    await start(withKeys());
    const get = async (path: string, key?: KeyName) => {
      const response = await fetch(`${origin}${path}`, { headers: key === undefined ? {} : bearer(key) });
      return { status: response.status, text: await response.text() };
    };
    const refusals = new Set<string>();
    for (const path of ['/readyz', '/metrics']) {
      for (const key of [undefined, 'read', 'write'] as const) {
        const { status, text } = await get(path, key);
        expect(status).toBe(401);
        refusals.add(text);
      }
      expect((await get(path, 'monitor')).status).toBe(200);
      expect((await get(path, 'admin')).status).toBe(200);
    }
    expect(refusals.size).toBe(1);
    expect((await get('/healthz')).status).toBe(200);
  });

  it('with an operator listener, readiness and metrics move there and need no key; the RCP port keeps /healthz', async () => {
    await start({ ...withKeys(), 'http.operatorPort': 1 });
    const operator = await app!.buildOperatorHttp().then((server) => server.listen({ host: '127.0.0.1', port: 0 }));
    expect((await fetch(`${operator}/readyz`)).status).toBe(200);
    expect((await fetch(`${operator}/metrics`)).status).toBe(200);
    expect((await fetch(`${origin}/readyz`, { headers: bearer('monitor') })).status).toBe(404);
    expect((await fetch(`${origin}/healthz`)).status).toBe(200);
  });

  it('without keys the operator endpoints are open, as before', async () => {
    await start();
    expect((await fetch(`${origin}/readyz`)).status).toBe(200);
    expect((await fetch(`${origin}/metrics`)).status).toBe(200);
  });
});

describe('proxies: X-Forwarded-For is believed only from configured proxies', () => {
  const burst = async (): Promise<number> => {
    let admitted = 0;
    for (let i = 0; i < 20; i++) {
      const answer = await post('/rcp/x-test/echo', request(i, 'x-test/echo', { text: 'x' }), {
        'x-forwarded-for': `203.0.113.${i + 1}`,
      });
      if (answer.json?.result !== undefined) admitted++;
    }
    return admitted;
  };
  const RATE = { 'limits.rateLimit': { reads: 1, writes: 0, models: 0 } };

  it('by default a client cannot pick a fresh rate-limit bucket per request with the header', async () => {
    await start(RATE);
    expect(await burst()).toBeLessThanOrEqual(2);
  });

  it('behind a configured proxy each forwarded client has its own bucket', async () => {
    await start({ ...RATE, 'http.trustProxy': ['127.0.0.1'] });
    expect(await burst()).toBe(20);
  });

  it('§15.6 forwarded IPv6 clients of one /64 network are one caller: one bucket, however many addresses', async () => {
    await start({ ...RATE, 'http.trustProxy': ['127.0.0.1'] });
    let admitted = 0;
    for (let i = 0; i < 20; i++) {
      const answer = await post('/rcp/x-test/echo', request(i, 'x-test/echo', { text: 'x' }), {
        'x-forwarded-for': `2001:db8:7:9:${(i + 1).toString(16)}::1`,
      });
      if (answer.json?.result !== undefined) admitted++;
    }
    // Counted one by one, every address had a bucket of its own: 20 of 20.
    expect(admitted).toBeLessThanOrEqual(2);
  });

  it('`true` is not a proxy list: the configuration is refused', () => {
    expect(() => testConfig({ 'http.trustProxy': true })).toThrow(/trustProxy/);
  });
});
