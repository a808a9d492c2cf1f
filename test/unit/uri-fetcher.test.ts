import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isPrivateAddress, PolicyUriFetcher, type FetchPolicy } from '../../src/backend/content/uri-fetcher.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { RpcError } from '../../src/protocol/errors.js';

/** §15.5 SSRF policy of the Content uri fetcher: what it refuses, over real files and real sockets. */
const POLICY: FetchPolicy = {
  schemes: ['https'],
  hosts: [],
  fileRoots: [],
  allowPrivate: false,
  maxBytes: 1024,
  timeoutMs: 1000,
};
const signal = new AbortController().signal;

async function refusal(policy: Partial<FetchPolicy>, uri: string, fetcher?: PolicyUriFetcher): Promise<RpcError> {
  const error = await (fetcher ?? new PolicyUriFetcher({ ...POLICY, ...policy }))
    .fetchText(uri, 'inputs.0.uri', signal)
    .catch((e: unknown) => e);
  // Never print what was served: it may be a file of secrets (the very thing refused here).
  expect(error instanceof RpcError ? 'refused' : 'served', uri).toBe('refused');
  expect((error as RpcError).code, uri).toBe(-32602);
  return error as RpcError;
}

/** Settles with the fetch's outcome, or 'still running' after `ms`: a hang fails the test instead of stalling it. */
async function within<T>(ms: number, work: Promise<T>): Promise<T | 'still running'> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'still running'>((resolve) => (timer = setTimeout(() => resolve('still running'), ms)));
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

const fileUri = (path: string) => pathToFileURL(path).href;

describe('private addresses (§15.5)', () => {
  it('covers loopback, RFC 1918, link-local, CGNAT, unique-local, unspecified, multicast and IPv4-mapped forms', () => {
    for (const address of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.1',
      '::1',
      '::',
      'fd00::1',
      'fe80::1',
      '::ffff:127.0.0.1',
      '::ffff:10.0.0.1',
      'not-an-address',
    ]) {
      expect(isPrivateAddress(address), address).toBe(true);
    }
    for (const address of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8']) {
      expect(isPrivateAddress(address), address).toBe(false);
    }
  });

  it('§15.5 judges an IPv6 address by the IPv4 one it carries: compatible, translated, NAT64, 6to4', () => {
    for (const address of [
      '::127.0.0.1', // IPv4-compatible
      '::7f00:1',
      '::a9fe:a9fe',
      '::ffff:0:127.0.0.1', // IPv4-translated
      '::ffff:0:7f00:1',
      '::ffff:0:a00:1',
      '64:ff9b::a9fe:a9fe', // NAT64 of 169.254.169.254
      '64:ff9b::169.254.169.254',
      '64:ff9b::a00:1',
      '64:ff9b::6440:1', // NAT64 of CGNAT 100.64.0.1
      '64:ff9b:1::808:808', // local-use NAT64: wholly refused
      '2002:7f00:1::', // 6to4 of 127.0.0.1
      '2002:c0a8:101::1', // 6to4 of 192.168.1.1
      '2001::1', // Teredo
      '::ffff:7f00:1', // IPv4-mapped, hexadecimal
      'fec0::1', // site-local
      'ff02::1', // multicast
      'fe80::1%eth0', // link-local with a zone id
    ]) {
      expect(isPrivateAddress(address), address).toBe(true);
    }
    for (const address of ['64:ff9b::808:808', '64:ff9b::8.8.8.8', '2002:808:808::1', '::ffff:808:808']) {
      expect(isPrivateAddress(address), address).toBe(false);
    }
  });
});

describe('the uri fetch policy (§15.5)', () => {
  it('refuses every uri while no scheme is configured (the default)', async () => {
    const error = await refusal({ schemes: [] }, 'https://example.com/a.txt');
    expect(error.code).toBe(-32602);
    expect(error.data).toMatchObject({ field: 'inputs.0.uri' });
    expect(error.message + JSON.stringify(error.data)).toMatch(/does not dereference content uris/);
  });

  it('refuses unlisted schemes, file:// unless listed by name, unlisted hosts, and private addresses', async () => {
    expect((await refusal({}, 'http://example.com/')).message).toMatch(/scheme 'http' is not allowed/);
    expect((await refusal({}, 'file:///etc/passwd')).message).toMatch(/scheme 'file' is not allowed/);
    expect((await refusal({}, 'not a uri')).message).toMatch(/not an absolute URI/);
    expect((await refusal({ hosts: ['docs.example.com'] }, 'https://evil.example.org/')).message).toMatch(
      /host 'evil.example.org' is not allowed/,
    );
    for (const uri of [
      'https://127.0.0.1/',
      'https://[::1]/',
      'https://169.254.169.254/latest/meta-data',
      'https://localhost/',
    ]) {
      expect((await refusal({}, uri)).message, uri).toMatch(/private network/);
    }
    expect((await refusal({ schemes: ['gopher'] }, 'gopher://example.com/')).message).toMatch(/cannot be fetched/);
  });

  it('§15.5 refuses IPv6 literals that carry a private IPv4 address, before connecting', async () => {
    for (const uri of [
      'https://[::127.0.0.1]/',
      'https://[::ffff:0:127.0.0.1]/',
      'https://[64:ff9b::a9fe:a9fe]/latest/meta-data',
      'https://[2002:7f00:1::]/',
      'https://[::ffff:7f00:1]/',
    ]) {
      expect((await refusal({}, uri)).message, uri).toMatch(/is on a private network/);
    }
  });
});

describe('file uris (§4.8, §15.5)', () => {
  const base = realpathSync(mkdtempSync(join(tmpdir(), 'rcp-uri-')));
  const root = join(base, 'root');
  beforeAll(() => {
    mkdirSync(join(root, 'sub'), { recursive: true });
    mkdirSync(join(root, 'data'));
    writeFileSync(join(root, 'small.txt'), 'small text');
    writeFileSync(join(root, 'sub', 'deep.txt'), 'deep text');
    writeFileSync(join(root, 'large.txt'), 'x'.repeat(2048));
    writeFileSync(join(root, 'data', 'docs.sqlite'), 'stored documents');
    writeFileSync(join(root, 'rcp.json'), '{"auth": {"apiKeys": [{"key": "secret"}]}}');
    writeFileSync(join(base, 'outside.txt'), 'outside text');
    symlinkSync(join(base, 'outside.txt'), join(root, 'link-out.txt'));
    symlinkSync(join(root, 'small.txt'), join(root, 'link-in.txt'));
    symlinkSync('/proc/self/environ', join(root, 'environ'));
    symlinkSync(join(root, 'data'), join(root, 'data-alias'));
  });
  const reader = (fileRoots: string[]) =>
    new PolicyUriFetcher({ ...POLICY, schemes: ['file'], fileRoots }, [
      { path: join(root, 'data'), what: "the server's data directory" },
      { path: join(root, 'rcp.json'), what: "the server's configuration file" },
    ]);

  it('§15.5 reads a file under fileRoots within maxBytes, and refuses a larger or missing one', async () => {
    const fetcher = reader([root]);
    expect(await fetcher.fetchText(fileUri(join(root, 'small.txt')), 'q', signal)).toBe('small text');
    expect(await fetcher.fetchText(fileUri(join(root, 'sub', 'deep.txt')), 'q', signal)).toBe('deep text');
    expect(await fetcher.fetchText(fileUri(join(root, 'link-in.txt')), 'q', signal)).toBe('small text');
    expect((await refusal({}, fileUri(join(root, 'large.txt')), fetcher)).message).toMatch(/exceeds 1024 bytes/);
    expect((await refusal({}, fileUri(join(root, 'none.txt')), fetcher)).message).toMatch(/cannot be read/);
  });

  it('§15.5 refuses every file uri when no fileRoots are configured', async () => {
    const error = await refusal({}, fileUri(join(root, 'small.txt')), reader([]));
    expect(error.message).toMatch(/served only from content.fetch.fileRoots, and none is set/);
    expect(error.data).toMatchObject({ field: 'inputs.0.uri' });
  });

  it('§15.5 judges the real path: files outside the roots, `..` and symlinks that lead out are refused', async () => {
    const fetcher = reader([join(root, 'sub')]);
    expect((await refusal({}, fileUri(join(root, 'small.txt')), fetcher)).message).toMatch(
      /'.*small\.txt' is outside content\.fetch\.fileRoots/,
    );
    expect((await refusal({}, `file://${root}/sub/../small.txt`, fetcher)).message).toMatch(/is outside/);
    expect((await refusal({}, `file://${root}/sub/%2e%2e/small.txt`, fetcher)).message).toMatch(/is outside/);
    expect((await refusal({}, 'file:///etc/passwd', fetcher)).message).toMatch(/is outside/);
    const wide = reader([root]);
    expect((await refusal({}, fileUri(join(root, 'link-out.txt')), wide)).message).toMatch(
      /'.*link-out\.txt' resolves outside content\.fetch\.fileRoots/,
    );
    expect((await refusal({}, 'file://elsewhere/etc/passwd', wide)).message).toMatch(/name a local path/);
  });

  it('§15.5 never serves /proc, /sys, /dev, the data dir or the config file, even under a root', async () => {
    const everything = reader(['/']);
    for (const [path, what] of [
      ['/proc/self/environ', '/proc'],
      ['/proc/self/cmdline', '/proc'],
      ['/sys/kernel/hostname', '/sys'],
      ['/dev/null', '/dev'],
      [join(root, 'data', 'docs.sqlite'), "the server's data directory"],
      [join(root, 'rcp.json'), "the server's configuration file"],
    ] as const) {
      const error = await refusal({}, fileUri(path), everything);
      expect(error.message, path).toContain(`is inside ${what}, which is never served`);
    }
    // Through a symlink inside a root: judged by where it leads.
    const fetcher = reader([root]);
    for (const [path, what] of [
      [join(root, 'environ'), '/proc'],
      [join(root, 'data-alias', 'docs.sqlite'), "the server's data directory"],
    ] as const) {
      expect((await refusal({}, fileUri(path), fetcher)).message, path).toContain(`is inside ${what}`);
    }
  });

  it('§15.5 refuses what is not a regular file (a FIFO would block the read forever)', async () => {
    const fifo = join(root, 'pipe');
    execFileSync('mkfifo', [fifo]);
    const outcome = await within(3000, refusal({}, fileUri(fifo), reader([root])));
    expect(outcome).not.toBe('still running');
    expect((outcome as RpcError).message).toMatch(/is not a regular file/);
  });
});

describe('content.fetch configuration (§15.5)', () => {
  it('refuses to start with `file` among the schemes and no fileRoots; reads roots from the environment', () => {
    expect(() => loadConfig({ overrides: { 'content.fetch.schemes': ['file'] } })).toThrow(ConfigError);
    expect(() => loadConfig({ overrides: { 'content.fetch.schemes': ['file'] } })).toThrow(
      /content\.fetch\.fileRoots is empty/,
    );
    const config = loadConfig({
      env: { RCP_CONTENT_FETCH_SCHEMES: 'file,https', RCP_CONTENT_FETCH_FILE_ROOTS: '/srv/docs,/srv/more' },
    });
    expect(config.content.fetch.fileRoots).toEqual(['/srv/docs', '/srv/more']);
    expect(loadConfig().content.fetch.fileRoots).toEqual([]);
  });
});

describe('fetch deadline (§15.5)', () => {
  const drips = new Set<NodeJS.Timeout>();
  /** Calls `write` every 50 ms until the stream closes. */
  const drip = (write: () => void, stream: NodeJS.EventEmitter) => {
    const timer = setInterval(write, 50);
    drips.add(timer);
    stream.once('close', () => clearInterval(timer));
  };
  let body: Server;
  let headers: TcpServer;
  const sockets = new Set<Socket>();
  beforeAll(async () => {
    // Headers at once, then one byte of body every 50 ms, forever.
    body = createHttpServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      drip(() => res.write('x'), res);
    });
    // A status line, then one byte of a header every 50 ms, forever: the headers never end.
    headers = createTcpServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.write('HTTP/1.1 200 OK\r\nX-Slow: ');
      drip(() => socket.write('a'), socket);
    });
    await Promise.all([
      new Promise<void>((resolve) => body.listen(0, '127.0.0.1', resolve)),
      new Promise<void>((resolve) => headers.listen(0, '127.0.0.1', resolve)),
    ]);
  });
  afterAll(async () => {
    drips.forEach((timer) => clearInterval(timer));
    sockets.forEach((socket) => socket.destroy());
    body.closeAllConnections();
    await Promise.all([
      new Promise((resolve) => body.close(resolve)),
      new Promise((resolve) => headers.close(resolve)),
    ]);
  });
  const port = (server: Server | TcpServer) => (server.address() as { port: number }).port;

  it('§15.5 timeoutMs bounds the whole transfer: a server dripping its body or its headers is cut', async () => {
    const fetcher = new PolicyUriFetcher({ ...POLICY, schemes: ['http'], allowPrivate: true, timeoutMs: 300 });
    for (const server of [body, headers]) {
      const started = Date.now();
      const outcome = await within(3000, refusal({}, `http://127.0.0.1:${port(server)}/drip.txt`, fetcher));
      expect(outcome).not.toBe('still running');
      expect((outcome as RpcError).message).toMatch(/no complete answer within 300 ms/);
      expect(Date.now() - started).toBeLessThan(2000);
    }
  });

  it('§13.1 the request being cancelled still ends the fetch with the cancel reason', async () => {
    const fetcher = new PolicyUriFetcher({ ...POLICY, schemes: ['http'], allowPrivate: true, timeoutMs: 10_000 });
    const cancel = new AbortController();
    setTimeout(() => cancel.abort(RpcError.cancelled()), 100);
    const outcome = await within(
      3000,
      fetcher.fetchText(`http://127.0.0.1:${port(body)}/drip.txt`, 'q', cancel.signal).catch((e: unknown) => e),
    );
    expect(outcome).toMatchObject({ code: -32006 });
  });
});
