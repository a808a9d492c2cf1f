import { afterEach, describe, expect, it } from 'vitest';
import { connect, request, ROOT, type Connection, type Frame } from '../helpers/wire.js';

/**
 * §17.1 notifications/log: emitted only to a client that advertised `log` at initialize, from its `_meta.logLevel` up,
 * in-band (stdout over stdio, never stderr; the SSE stream over HTTP), each naming its request. Every frame is checked
 * against the project's LogNotification schema (src/protocol/schemas) by the connection helper.
 */
const ENCODER = `${ROOT}/models/use-lite`;
type LogParams = { level: string; message: string; logger: string; data?: Record<string, unknown>; _meta: object };

let open: Connection | undefined;
afterEach(async () => {
  await open?.close();
  open = undefined;
});

async function session(
  transport: 'in-process' | 'stdio',
  capabilities: object,
  meta: object = {},
): Promise<Connection> {
  open = await connect(transport, { config: { 'models.encoder': ENCODER } });
  const init = request(0, 'initialize', { protocolVersion: 1, capabilities, _meta: meta });
  expect((await open.exchange(init)) as Frame).toHaveProperty('result');
  const add = request(1, 'index/add', { documents: [{ id: 'owl', text: 'Owls hunt at night with silent wings.' }] });
  expect((await open.exchange(add)) as Frame).toHaveProperty('result');
  return open;
}

const logs = (connection: Connection): LogParams[] =>
  connection.notifications.filter((frame) => frame.method === 'notifications/log').map((f) => f.params as LogParams);

async function retrieve(connection: Connection, id: number, params: object = {}): Promise<void> {
  connection.send(request(id, 'retrieve', { query: 'night birds', k: 1, ...params }));
  expect(await connection.reply(id)).toHaveProperty('result');
}

describe.each(['in-process', 'stdio'] as const)('notifications/log over %s', (transport) => {
  it('is advertised, and silent for a client that did not advertise log', async () => {
    const connection = await session(transport, {});
    connection.send(request('i', 'info'));
    const info = (await connection.reply('i')).result as { capabilities: Record<string, unknown> };
    expect(info.capabilities.log).toEqual({ levels: ['debug', 'info', 'notice', 'warning', 'error'] });
    await retrieve(connection, 2);
    expect(logs(connection)).toEqual([]);
  });

  it('reaches a client that advertised log, from _meta.logLevel up, naming the request', async () => {
    const connection = await session(transport, { log: {} }, { logLevel: 'debug' });
    await retrieve(connection, 2, { mode: 'hybrid', strict: false, modality: 'image' });
    const seen = logs(connection);
    expect(seen.map((log) => log.level)).toEqual(['debug', 'notice', 'info']);
    expect(seen[0]).toMatchObject({ logger: 'retrieve', message: 'recall: 1 candidates', _meta: { requestId: 2 } });
    expect(seen[0]?.data).toEqual({ lists: { dense: 1, sparse: 1 } });
    expect(seen[1]?.message).toContain('modality="image" is not supported');
    expect(seen[2]?.message).toBe('1 hits from 1 candidates (hybrid, convex)');
  });

  it('§6.2 a deprecated name is still served and logged at warning: rerank `documents`', async () => {
    const connection = await session(transport, { log: {} }, { logLevel: 'warning' });
    connection.send(request(2, 'rerank', { query: 'owls', documents: ['Owls hunt at night.', 'Stars form.'] }));
    expect((await connection.reply(2)).result).toHaveProperty('scores');
    const seen = logs(connection);
    expect(seen.map((log) => [log.level, log.logger])).toEqual([['warning', 'rerank']]);
    expect(seen[0]?.message).toContain('`documents` is a deprecated name for `passages`');
  });

  it('defaults to info and honours a stricter level', async () => {
    const connection = await session(transport, { log: {} });
    await retrieve(connection, 2);
    expect(logs(connection).map((log) => log.level)).toEqual(['info']);
    await connection.close();
    const strict = await session(transport, { log: {} }, { logLevel: 'warning' });
    await retrieve(strict, 3, { strict: false, modality: 'image' });
    expect(logs(strict)).toEqual([]);
  });
});

describe('notifications/log over HTTP', () => {
  it('travels on the SSE stream of the request it is about', async () => {
    open = await connect('http', { config: { 'models.encoder': ENCODER } });
    open.send(request(0, 'info'));
    await open.reply(0);
    const origin = open.origin!;
    const post = (body: object, headers: Record<string, string> = {}) =>
      fetch(`${origin}/rcp/sessions/log-test`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      });
    await post(
      request(1, 'initialize', { protocolVersion: 1, capabilities: { log: {} }, _meta: { logLevel: 'debug' } }),
    );
    await post(request(2, 'index/add', { documents: [{ id: 'owl', text: 'Owls hunt at night.' }] }));
    const response = await post(request(3, 'retrieve', { query: 'owls', k: 1 }), { accept: 'text/event-stream' });
    const frames = (await response.text())
      .split('\n\n')
      .filter((event) => event.startsWith('data: '))
      .map((event) => JSON.parse(event.slice(6)) as Frame);
    const levels = frames.filter((f) => f.method === 'notifications/log').map((f) => (f.params as LogParams).level);
    expect(levels).toEqual(['debug', 'info']);
    expect(frames.at(-1)).toMatchObject({ id: 3, result: { hits: [{ id: 'owl#0' }] } });
  });
});
