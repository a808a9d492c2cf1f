import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { linkSync, mkdirSync, mkdtempSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isPrivateAddress, PolicyUriFetcher, type FetchPolicy } from '../../../src/content/uri-fetcher.js';
import { ConfigError, loadConfig } from '../../../src/config/index.js';
import { RpcError } from '../../../src/protocol/errors.js';
import { track } from '../../helpers/children.js';

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

  it('§15.5 judges the file actually opened: a directory swapped for a symlink between check and open leaks nothing', async () => {
    // race/a is a real directory holding a harmless `environ`; race/b is a symlink to /proc/self. A second process
    // swaps them as fast as it can, so a path checked while race/a was the directory may be opened through
    // /proc/self, which would be this process's environment (its API keys).
    const race = join(root, 'race');
    mkdirSync(join(race, 'a'), { recursive: true });
    writeFileSync(join(race, 'a', 'environ'), 'harmless');
    symlinkSync('/proc/self', join(race, 'b'));
    const swapper = await startSwapper(join(race, 'a'), join(race, 'b'));
    // Room for a whole environment: a limit smaller than what leaks would hide the leak behind 'exceeds'.
    const fetcher = new PolicyUriFetcher({ ...POLICY, schemes: ['file'], fileRoots: [root], maxBytes: 1 << 20 });
    const uri = fileUri(join(race, 'a', 'environ'));
    let served = 0;
    let leaked = 0;
    try {
      for (let round = 0; round < 60; round++) {
        const outcomes = await Promise.all(
          Array.from({ length: 20 }, () => fetcher.fetchText(uri, 'q', signal).catch((e: unknown) => e)),
        );
        for (const outcome of outcomes) {
          // Never print what was served: a leak is this process's environment.
          if (outcome === 'harmless') served++;
          else if (typeof outcome === 'string') leaked++;
          else expect((outcome as RpcError).code).toBe(-32602);
        }
      }
      expect(swapper.exitCode, 'the swapper kept running').toBeNull();
    } finally {
      swapper.kill('SIGKILL');
    }
    expect(leaked, `${leaked} of 1200 reads served something other than the file under the root`).toBe(0);
    expect(served, 'some reads found the directory in place and were served').toBeGreaterThan(0);
  });

  it('§15.5 refuses a file with several hard links: another name may be the data dir or the config file', async () => {
    linkSync(join(root, 'data', 'docs.sqlite'), join(root, 'docs-link.txt'));
    linkSync(join(root, 'rcp.json'), join(root, 'config-link.txt'));
    writeFileSync(join(base, 'elsewhere.txt'), 'outside the roots');
    linkSync(join(base, 'elsewhere.txt'), join(root, 'elsewhere-link.txt'));
    const fetcher = reader([root]);
    for (const name of ['docs-link.txt', 'config-link.txt', 'elsewhere-link.txt']) {
      const error = await refusal({}, fileUri(join(root, name)), fetcher);
      expect(error.message, name).toMatch(/has 2 hard links, and a file with several names is never served/);
    }
    expect(await fetcher.fetchText(fileUri(join(root, 'small.txt')), 'q', signal)).toBe('small text');
  });

  it('§15.5 refuses what is not a regular file (a FIFO would block the read forever)', async () => {
    const fifo = join(root, 'pipe');
    execFileSync('mkfifo', [fifo]);
    const outcome = await within(3000, refusal({}, fileUri(fifo), reader([root])));
    expect(outcome).not.toBe('still running');
    expect((outcome as RpcError).message).toMatch(/is not a regular file/);
  });
});

/**
 * Swaps `a` and `b` (a directory and a symlink) in a tight loop in another process until killed: renameat2's
 * RENAME_EXCHANGE through python3's ctypes where there is one (no moment where neither exists), else a cycle of
 * renames in Node. Resolves once the loop runs.
 */
async function startSwapper(a: string, b: string): Promise<ChildProcess> {
  const python = [
    'import ctypes, sys',
    'libc = ctypes.CDLL(None, use_errno=True)',
    'a, b = (p.encode() for p in sys.argv[1:3])',
    'if libc.renameat2(-100, a, -100, b, 2) != 0: sys.exit(3)',
    'print("ready", flush=True)',
    'while libc.renameat2(-100, a, -100, b, 2) == 0: pass',
  ].join('\n');
  const node = [
    "const { renameSync } = require('node:fs');",
    'const [a, b] = process.argv.slice(1);',
    "console.log('ready');",
    "for (;;) { renameSync(a, a + '.dir'); renameSync(b, a); renameSync(a, b); renameSync(a + '.dir', a); }",
  ].join('\n');
  const started = (child: ChildProcess) =>
    new Promise<boolean>((resolve) => {
      child.once('error', () => resolve(false));
      child.once('exit', () => resolve(false));
      child.stdout?.once('data', () => resolve(true));
    });
  const viaPython = track(spawn('python3', ['-c', python, a, b], { stdio: ['ignore', 'pipe', 'ignore'] }));
  if (await started(viaPython)) return viaPython;
  const viaNode = track(spawn(process.execPath, ['-e', node, a, b], { stdio: ['ignore', 'pipe', 'ignore'] }));
  if (await started(viaNode)) return viaNode;
  throw new Error('could not start a process swapping the directories');
}

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

describe('name resolution (§15.5)', () => {
  /**
   * A DNS server on loopback UDP: answers the names in `answers` (A and AAAA records) and never answers anything
   * else, like a black-holed resolver. `queries` counts the questions it received, per name.
   */
  const answers = new Map<string, { A?: string[]; AAAA?: Buffer[] }>([
    ['loopback.test', { A: ['127.0.0.1'] }],
    ['mixed.test', { A: ['93.184.215.14'], AAAA: [Buffer.from('00000000000000000000000000000001', 'hex')] }],
  ]);
  const queries = new Map<string, number>();
  let dns: UdpSocket;
  let dnsServer = '';
  let http: Server;
  let httpPort = 0;
  beforeAll(async () => {
    dns = createSocket('udp4');
    dns.on('message', (query, peer) => {
      let at = 12;
      const labels: string[] = [];
      while (query[at]! > 0) {
        labels.push(query.toString('latin1', at + 1, at + 1 + query[at]!));
        at += query[at]! + 1;
      }
      const name = labels.join('.').toLowerCase();
      const type = query.readUInt16BE(at + 1);
      queries.set(name, (queries.get(name) ?? 0) + 1);
      const known = answers.get(name);
      if (known === undefined) return; // black hole
      const records =
        type === 1
          ? (known.A ?? []).map((ip) => Buffer.from(ip.split('.').map(Number)))
          : type === 28
            ? (known.AAAA ?? [])
            : [];
      const header = Buffer.alloc(12);
      query.copy(header, 0, 0, 2); // the id
      header.writeUInt16BE(0x8180, 2); // a response, recursion desired and available, no error
      header.writeUInt16BE(1, 4);
      header.writeUInt16BE(records.length, 6);
      const question = query.subarray(12, at + 5);
      const rrs = records.map((data) => {
        const rr = Buffer.alloc(12);
        rr.writeUInt16BE(0xc00c, 0); // the name: a pointer to the question's
        rr.writeUInt16BE(type, 2);
        rr.writeUInt16BE(1, 4); // IN
        rr.writeUInt32BE(60, 6);
        rr.writeUInt16BE(data.length, 10);
        return Buffer.concat([rr, data]);
      });
      dns.send(Buffer.concat([header, question, ...rrs]), peer.port, peer.address);
    });
    http = createHttpServer((req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('local text'));
    await Promise.all([
      new Promise<void>((resolve) => dns.bind(0, '127.0.0.1', resolve)),
      new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve)),
    ]);
    dnsServer = `127.0.0.1:${dns.address().port}`;
    httpPort = (http.address() as { port: number }).port;
  });
  afterAll(async () => {
    dns.close();
    http.closeAllConnections();
    await new Promise((resolve) => http.close(resolve));
  });
  const fetcher = (policy: Partial<FetchPolicy>) =>
    new PolicyUriFetcher({ ...POLICY, schemes: ['http'], ...policy }, [], { dnsServers: [dnsServer] });

  it('§15.5 timeoutMs bounds the name lookup: a resolver that never answers is cut then', async () => {
    const started = Date.now();
    const outcome = await within(5000, refusal({}, 'http://never.test/a.txt', fetcher({ timeoutMs: 400 })));
    const took = Date.now() - started;
    expect(outcome).not.toBe('still running');
    expect((outcome as RpcError).message).toMatch(/host 'never\.test' did not resolve within 400 ms/);
    expect(took).toBeLessThan(400 + 1000); // unbounded, a black-holed lookup took 10 s
    expect(queries.get('never.test'), 'the configured resolver was asked').toBeGreaterThan(0);
  });

  it('§15.5 lookups that hang hold up no other fetch: loopback, localhost and IP literals are served meanwhile', async () => {
    const policy = fetcher({ allowPrivate: true, timeoutMs: 3000 });
    let hung = 0;
    const stuck = Array.from({ length: 8 }, (_, i) =>
      policy
        .fetchText(`http://stuck-${i}.test/`, 'q', signal)
        .catch((e: unknown) => e)
        .finally(() => hung++),
    );
    for (const host of ['127.0.0.1', 'localhost', 'docs.localhost', 'loopback.test']) {
      const started = Date.now();
      expect(await policy.fetchText(`http://${host}:${httpPort}/`, 'q', signal), host).toBe('local text');
      expect(Date.now() - started, host).toBeLessThan(1000);
    }
    expect(hung, 'the hung lookups were still pending').toBe(0);
    for (const outcome of await Promise.all(stuck)) expect((outcome as RpcError).message).toMatch(/did not resolve/);
  });

  it('§15.5 every address a name has must pass, A and AAAA alike; localhost is loopback without a lookup', async () => {
    const strict = fetcher({});
    expect((await refusal({}, `http://loopback.test:${httpPort}/`, strict)).message).toMatch(/private network/);
    expect((await refusal({}, 'http://mixed.test/', strict)).message).toMatch(/private network/);
    for (const host of ['localhost', 'api.localhost']) {
      expect((await refusal({}, `http://${host}:${httpPort}/`, strict)).message).toMatch(/private network/);
      expect(queries.get(host), host).toBeUndefined();
    }
  });

  it('§13.1 cancelling the request ends a hung lookup at once, with the cancel reason', async () => {
    const cancel = new AbortController();
    setTimeout(() => cancel.abort(RpcError.cancelled()), 100);
    const started = Date.now();
    const outcome = await within(
      3000,
      fetcher({ timeoutMs: 10_000 })
        .fetchText('http://cancelled.test/', 'q', cancel.signal)
        .catch((e: unknown) => e),
    );
    expect(outcome).toMatchObject({ code: -32006 });
    expect(Date.now() - started).toBeLessThan(1000);
  });
});
