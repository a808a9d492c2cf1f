import { describe, expect, it } from 'vitest';
import { until } from '../helpers/children.js';
import { readFrames, request, spawnStdio, type Frame } from '../helpers/wire.js';

/**
 * §15.6: the operator's request log (JSON lines on stderr, one per answered request at debug) names the method, code
 * and time, never query or document bodies unless `log.bodies` is on, and censors `log.redact` paths even then.
 * The real binary, over a real pipe; stdout stays protocol-only throughout (readFrames fails on anything else).
 */
/** A secret no log line holds by chance (a bare number did: a timestamp held 4242). */
const SECRET = 'patient Zq7-4242 has condition X';

/**
 * Runs the real binary over stdio with `config`, sends `requests` one at a time (each answered before the next:
 * requests on one connection run concurrently, §4.7), closes stdin, and returns the answers, stderr and exit code.
 */
async function runBinary(
  config: Record<string, unknown>,
  requests: Frame[],
): Promise<{ answers: Frame[]; stderr: string; code: number | null }> {
  const server = spawnStdio({ config: { 'models.encoder': 'use-lite', ...config } }, [
    'bin/rcp-server.js',
    'serve',
    '--stdio',
  ]);
  const answers: Frame[] = [];
  readFrames(server.child, (frame) => answers.push(frame as Frame));
  for (const frame of requests) {
    server.child.stdin.write(`${JSON.stringify(frame)}\n`);
    await until(
      () => answers.some((answer) => answer.id === frame.id),
      () => `no answer to ${JSON.stringify(frame.id)}: ${server.stderr()}`,
    );
  }
  server.child.stdin.end();
  return { answers, stderr: server.stderr(), code: await server.exited };
}

const INIT = request(0, 'initialize', { protocolVersion: 1, capabilities: {} });

async function embedSecret(config: Record<string, unknown>): Promise<{ stderr: string; code: number | null }> {
  const { answers, stderr, code } = await runBinary({ 'log.level': 'debug', ...config }, [
    INIT,
    request(1, 'embed', { inputs: [SECRET] }),
  ]);
  expect(answers.find((frame) => frame.id === 1)).toHaveProperty('result');
  return { stderr, code };
}

describe('the request log (§15.6)', () => {
  it('by default names method, code and time, and no body', async () => {
    const { stderr, code } = await embedSecret({});
    expect(code).toBe(0);
    const answered = stderr
      .split('\n')
      .filter((line) => line.includes('"msg":"answered"'))
      .map((line) => JSON.parse(line) as { method: string; code: number; ms: number });
    expect(answered.map((line) => [line.method, line.code])).toEqual([
      ['initialize', 0],
      ['embed', 0],
    ]);
    expect(answered[1]?.ms).toBeGreaterThanOrEqual(0);
    expect(stderr).not.toContain('Zq7-4242');
  });

  it('logs bodies only when log.bodies is on, and censors log.redact paths even then', async () => {
    expect((await embedSecret({ 'log.bodies': true })).stderr).toContain(SECRET);
    const redacted = await embedSecret({ 'log.bodies': true, 'log.redact': ['params.inputs'] });
    expect(redacted.stderr).not.toContain('Zq7-4242');
    expect(redacted.stderr).toMatch(/"method":"embed".*"params":\{"inputs":"\[Redacted\]"/);
  });

  it('logs a hit that feedback flags as poisoned, with its document and source, for review (§7.16, §15.3)', async () => {
    const { answers, stderr, code } = await runBinary({ 'log.level': 'info' }, [
      INIT,
      request(1, 'index/add', { documents: [{ id: 'doc', text: 'bad advice', meta: { source: 'forum' } }] }),
      request(2, 'feedback', { signals: [{ hitId: 'doc#0', poisonSuspected: true }] }),
    ]);
    expect(answers.find((frame) => frame.id === 2)).toMatchObject({ result: { accepted: 1 } });
    expect(code).toBe(0);
    const flag = stderr.split('\n').find((line) => line.includes('feedback flags a hit for review'));
    expect(JSON.parse(flag ?? '{}')).toMatchObject({
      kind: 'poison',
      hitId: 'doc#0',
      documentId: 'doc',
      source: 'forum',
    });
  });

  it('refuses a malformed redact path at start with a clear message', async () => {
    const server = spawnStdio({ config: { 'log.redact': ['params..query'] } }, [
      'bin/rcp-server.js',
      'serve',
      '--stdio',
    ]);
    expect(await server.exited).toBe(2);
    expect(server.stderr()).toMatch(/invalid configuration:\n {2}log.redact: /);
  });
});
