import { afterEach, describe, expect, it } from 'vitest';
import { until, untilLogged } from '../helpers/children.js';
import { INITIALIZE, readFrames, request, spawnStdio, type StdioChild } from '../helpers/wire.js';
import { assertValidFrame } from '../helpers/schema.js';

/** §5.1 stdio framing and lifecycle, against a real child process. */
describe('§5.1 stdio transport', () => {
  let server: StdioChild;
  let frames: Record<string, unknown>[];

  const start = (config: Record<string, unknown> = {}, argv?: string[]) => {
    server = spawnStdio({ config }, argv);
    frames = [];
    readFrames(server.child, (frame) => {
      assertValidFrame(frame);
      frames.push(frame as Record<string, unknown>);
    });
  };
  const waitFor = async (count: number) => {
    await until(
      () => frames.length >= count,
      () => `expected ${count} frames, got ${JSON.stringify(frames)}`,
    );
    return frames;
  };
  const line = (frame: object) => `${JSON.stringify(frame)}\n`;

  afterEach(() => {
    server.child.kill('SIGKILL');
  });

  it('§5.1 tolerates blank lines, CRLF, partial and coalesced reads, and multi-byte characters split across reads', async () => {
    start();
    const stdin = server.child.stdin;
    stdin.write('\n\r\n   \n');
    stdin.write(line(request(1, 'ping', { nonce: 1 })) + line(request(2, 'ping', { nonce: 2 })));
    const bytes = Buffer.from(`${JSON.stringify(request(3, 'ping', { nonce: 'é東🚀' }))}\r\n`, 'utf8');
    for (let i = 0; i < bytes.length; i += 3) {
      stdin.write(bytes.subarray(i, i + 3));
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    await waitFor(3);
    expect(frames.map((f) => f.result)).toEqual([{ nonce: 1 }, { nonce: 2 }, { nonce: 'é東🚀' }]);
  });

  it('§4.7 handles requests concurrently: a fast ping overtakes a slow request sent before it', async () => {
    start();
    server.child.stdin.write(line(INITIALIZE(0)));
    await waitFor(1);
    server.child.stdin.write(line(request('slow', 'x-test/sleep', { ms: 500 })) + line(request('fast', 'ping')));
    await waitFor(3);
    expect(frames.slice(1).map((f) => f.id)).toEqual(['fast', 'slow']);
  });

  it('§5.1 EOF is shutdown: in-flight requests are answered, then the process exits 0', async () => {
    start();
    server.child.stdin.write(line(INITIALIZE(0)) + line(request('late', 'x-test/sleep', { ms: 300 })));
    server.child.stdin.end();
    expect(await server.exited).toBe(0);
    expect(frames.map((f) => f.id)).toEqual([0, 'late']);
    expect(frames[1]).toMatchObject({ result: { slept: 300 } });
  });

  it('§13.1 after the shutdown answer nothing else is processed, and the process exits 0', async () => {
    start();
    server.child.stdin.write(line(request(1, 'shutdown')) + line(request(2, 'ping')));
    expect(await server.exited).toBe(0);
    expect(frames).toEqual([{ jsonrpc: '2.0', id: 1, result: {} }]);
  });

  it('§15.5 a frame over the size limit is -32013, discarded, and the next frame is served', async () => {
    start({ 'limits.maxBodyBytes': 2048 });
    server.child.stdin.write(line(request(1, 'ping', { nonce: 'x'.repeat(5000) })) + line(request(2, 'ping')));
    await waitFor(2);
    expect(frames[0]).toMatchObject({ id: null, error: { code: -32013 } });
    expect(frames[1]).toMatchObject({ id: 2, result: {} });
  });

  it('§12 a handler fault is a bare -32603 on the wire and a full log line on stderr', async () => {
    start();
    server.child.stdin.write(line(INITIALIZE(0)) + line(request(1, 'x-test/fail')));
    await waitFor(2);
    expect(frames[1]).toMatchObject({ id: 1, error: { code: -32603, message: 'internal error' } });
    expect(JSON.stringify(frames[1])).not.toContain('secret');
    await untilLogged(server, /secret internal detail/);
    expect(server.stderr()).toContain('method failed');
    expect(server.stderr()).toContain('secret internal detail');
  });

  it('§5.1 the real binary speaks stdio; stdout carries frames only, logs go to stderr', async () => {
    start({ 'log.level': 'info' }, ['bin/rcp-server.js', 'serve', '--stdio']);
    server.child.stdin.write(
      line(request(1, 'info')) + 'garbage\n' + line(request(2, 'initialize', { protocolVersion: 1 })),
    );
    server.child.stdin.end();
    expect(await server.exited).toBe(0);
    // Answers may come in any order (§4.7); the parse error is answered without waiting for the rest.
    expect(frames.map((f) => f.id).sort()).toEqual([1, 2, null]);
    expect(server.stderr()).toContain('stdio session ended');
  });
});
