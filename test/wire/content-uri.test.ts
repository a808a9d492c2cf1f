import { linkSync, mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connect, INITIALIZE, request, ROOT, type Connection, type Frame } from '../helpers/wire.js';

/**
 * §4.8 / §15.5 Content uris over a real pipe and socket: never dereferenced by default; under a configured policy a
 * text uri reads the same as the text inline, and private networks, other hosts, redirects, non-text and oversized
 * bodies are -32602 naming the block's uri. The documents come from a real HTTP server on loopback and real files.
 */
const TEXT = 'Owls hunt at night with silent wings.';
let origin = '';
let server: Server;
beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === '/owl.txt') return void res.writeHead(200, { 'content-type': 'text/plain' }).end(TEXT);
    if (req.url === '/big.txt') return void res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(5000));
    if (req.url === '/owl.png') return void res.writeHead(200, { 'content-type': 'image/png' }).end('PNG');
    if (req.url === '/moved') return void res.writeHead(302, { location: '/owl.txt' }).end();
    if (req.url === '/drip') {
      // One byte every 100 ms, forever: only a bound on the whole transfer ends it.
      res.writeHead(200, { 'content-type': 'text/plain' });
      const timer = setInterval(() => res.write('x'), 100);
      return void res.once('close', () => clearInterval(timer));
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(() => {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(resolve));
});

let open: Connection | undefined;
afterEach(async () => {
  await open?.close();
  open = undefined;
});

const FETCH = {
  schemes: ['http'],
  hosts: ['127.0.0.1'],
  fileRoots: [],
  allowPrivate: true,
  maxBytes: 1000,
  timeoutMs: 2000,
};
type Failure = { code: number; message: string; data: { field?: string; option?: string } };

describe.each(['stdio', 'http'] as const)('Content uris over %s', (transport) => {
  let nextId = 1;
  const call = async (method: string, params: object): Promise<Frame> => {
    const id = nextId++;
    open!.send(request(id, method, params));
    return open!.reply(id);
  };
  const start = async (fetch?: object, more: object = {}) => {
    open = await connect(transport, {
      config: {
        'models.encoder': `${ROOT}/models/use-lite`,
        ...(fetch === undefined ? {} : { 'content.fetch': fetch }),
        ...more,
      },
    });
    expect(await open.exchange(INITIALIZE(0))).toHaveProperty('result');
  };
  const block = (path: string) => ({ type: 'text', uri: `${origin}${path}` });

  it('are never dereferenced by default: -32602 on the uri', async () => {
    await start();
    const error = (await call('embed', { inputs: ['inline', block('/owl.txt')] })).error as Failure;
    expect(error).toMatchObject({ code: -32602, data: { field: 'inputs.1.uri' } });
    expect(error.message).toMatch(/does not dereference content uris/);
  });

  it('refuse a private address unless allowPrivate, whatever else allows it', async () => {
    await start({ ...FETCH, allowPrivate: false });
    const error = (await call('embed', { inputs: [block('/owl.txt')] })).error as Failure;
    expect(error).toMatchObject({ code: -32602, data: { field: 'inputs.0.uri' } });
    expect(error.message).toMatch(/private network/);
  });

  it('under the policy, read like the text inline in embed, rerank and retrieve; refuse what the policy forbids', async () => {
    await start(FETCH);
    const inline = (await call('embed', { inputs: [TEXT] })).result as { vectors: number[][] };
    const byUri = (await call('embed', { inputs: [block('/owl.txt')] })).result as { vectors: number[][] };
    expect(byUri.vectors).toEqual(inline.vectors);
    const blob = { type: 'blob', mimeType: 'text/plain', uri: `${origin}/owl.txt` };
    expect(((await call('embed', { inputs: [blob] })).result as { vectors: number[][] }).vectors).toEqual(
      inline.vectors,
    );
    const reranked = (
      await call('rerank', { query: 'night birds', passages: [TEXT, block('/owl.txt')], method: 'colbert' })
    ).result as { scores: number[] };
    expect(reranked.scores[1]).toBeCloseTo(reranked.scores[0]!, 5);
    expect(await call('index/add', { documents: [{ id: 'owl', text: TEXT }] })).toHaveProperty('result');
    const hits = (await call('retrieve', { query: block('/owl.txt'), k: 1 })).result as { hits: { id: string }[] };
    expect(hits.hits[0]?.id).toBe('owl#0');

    const refused = async (input: object, pattern: RegExp, code = -32602) => {
      const error = (await call('embed', { inputs: [input] })).error as Failure;
      expect(error.code).toBe(code);
      if (code === -32602) expect(error.message).toMatch(pattern);
      return error;
    };
    await refused(block('/big.txt'), /exceeds 1000 bytes/);
    await refused(block('/owl.png'), /content type 'image\/png' is not text/);
    await refused(block('/moved'), /HTTP 302 \(redirects are not followed\)/);
    await refused(block('/missing'), /HTTP 404/);
    await refused({ type: 'text', uri: `http://localhost:1/owl.txt` }, /host 'localhost' is not allowed/);
    await refused({ type: 'text', uri: `${origin}/owl.txt`, text: 'both' }, /never both/);
    expect(
      await refused({ type: 'image', mimeType: 'image/png', uri: `${origin}/owl.png` }, /./, -32005),
    ).toMatchObject({
      data: { option: 'inputs.0.type' },
    });
  });

  it('§15.5 refuse IPv6 forms that carry a private IPv4 address, whatever the host list allows', async () => {
    await start({ ...FETCH, hosts: [], allowPrivate: false });
    const port = new URL(origin).port;
    for (const host of ['[::127.0.0.1]', '[::ffff:0:127.0.0.1]', '[64:ff9b::a9fe:a9fe]', '[::ffff:7f00:1]']) {
      const error = (await call('embed', { inputs: [{ type: 'text', uri: `http://${host}:${port}/owl.txt` }] }))
        .error as Failure;
      expect(error, host).toMatchObject({ code: -32602, data: { field: 'inputs.0.uri' } });
      expect(error.message, host).toMatch(/is on a private network/);
    }
  });

  it('§15.5 timeoutMs bounds the whole fetch: a server dripping its body is cut then, not at the request deadline', async () => {
    await start({ ...FETCH, timeoutMs: 300 });
    const started = Date.now();
    const error = (await call('embed', { inputs: [block('/drip')] })).error as Failure;
    expect(error).toMatchObject({ code: -32602, data: { field: 'inputs.0.uri' } });
    expect(error.message).toMatch(/no complete answer within 300 ms/);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('§15.5 file uris: served under fileRoots only, never from /proc or the data dir (nor a hard link to it)', async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'rcp-files-')));
    const dataDir = join(dir, 'data');
    mkdirSync(dataDir);
    writeFileSync(join(dir, 'owl.txt'), TEXT);
    writeFileSync(join(dataDir, 'notes.txt'), 'private notes');
    linkSync(join(dataDir, 'notes.txt'), join(dir, 'notes-link.txt'));
    await start({ ...FETCH, schemes: ['file'], fileRoots: [dir, '/proc'] }, { dataDir });
    const file = (path: string) => ({ type: 'text', uri: pathToFileURL(path).href });
    const inline = (await call('embed', { inputs: [TEXT] })).result as { vectors: number[][] };
    const byFile = (await call('embed', { inputs: [file(join(dir, 'owl.txt'))] })).result as { vectors: number[][] };
    expect(byFile.vectors).toEqual(inline.vectors);
    for (const [path, pattern] of [
      ['/proc/self/environ', /is inside \/proc, which is never served/],
      [join(dataDir, 'notes.txt'), /is inside the server's data directory, which is never served/],
      ['/etc/hostname', /is outside content\.fetch\.fileRoots/],
      [join(dir, 'notes-link.txt'), /has 2 hard links, and a file with several names is never served/],
    ] as const) {
      const error = (await call('embed', { inputs: [file(path)] })).error as Failure;
      expect(error, path).toMatchObject({ code: -32602, data: { field: 'inputs.0.uri' } });
      expect(error.message, path).toMatch(pattern);
    }
  });
});
