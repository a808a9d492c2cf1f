import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createServer } from 'node:net';
import { end, EVENT_TIMEOUT_MS, track, until, untilLogged } from './children.js';
import { ROOT } from './wire.js';

/** One JSON-RPC request over `POST {origin}/rcp/{method}`: its result, or an Error naming the error it answered. */
export async function callHttp(origin: string, method: string, params: object): Promise<Record<string, unknown>> {
  const response = await fetch(`${origin}/rcp/${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const answer = (await response.json()) as { result?: Record<string, unknown>; error?: unknown };
  if (answer.result === undefined) throw new Error(`${method}: ${JSON.stringify(answer.error)}`);
  return answer.result;
}

/** A port nobody listens on right now (for servers that must know each other's address before they start). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export interface ServerProcess {
  readonly child: ChildProcessWithoutNullStreams;
  /** `http://127.0.0.1:PORT` once listening. */
  readonly origin: string;
  stderr(): string;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

/**
 * Runs `node bin/rcp-server.js ARGS...` with `env` over HTTP and waits until it logs that it listens, then (unless
 * `ready` is false: a server expected never to be ready) until `GET /readyz` says ready — a test must not race the
 * server's own start-up (models and corpus loading). Each wait is for the event, within EVENT_TIMEOUT_MS. The process
 * is tracked from the moment it is spawned: a start that fails ends it before the error reaches the test, and one
 * the test never stops is ended when the file's tests are done (children.ts).
 */
export async function startHttpProcess(
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
  {
    ready = true,
    monitorKey,
    readyWithinMs = EVENT_TIMEOUT_MS,
  }: { ready?: boolean; monitorKey?: string | undefined; readyWithinMs?: number } = {},
): Promise<ServerProcess> {
  const child = track(
    spawn(process.execPath, ['bin/rcp-server.js', ...args], {
      cwd: ROOT,
      env: { ...process.env, RCP_LOG_LEVEL: 'info', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    }),
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  const server = { child, stderr: () => stderr };
  let origin: string;
  try {
    origin = (await untilLogged(server, /"address":"(http:\/\/[^"]+)"/))[1]!;
    if (ready) await untilReady(origin, monitorKey, readyWithinMs, () => `${args.join(' ')}: ${stderr}`);
  } catch (error) {
    await end(child);
    throw new Error(`${args.join(' ')}: ${(error as Error).message}`);
  }
  return {
    child,
    origin,
    stderr: () => stderr,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

/**
 * Polls `GET /readyz` until 200 (with `monitorKey` where the server has keys); fails (with `describe()`) if the
 * server is not ready within EVENT_TIMEOUT_MS.
 */
async function untilReady(
  origin: string,
  monitorKey: string | undefined,
  timeoutMs: number,
  describe: () => string,
): Promise<void> {
  const headers: Record<string, string> = monitorKey === undefined ? {} : { authorization: `Bearer ${monitorKey}` };
  const ready = () =>
    fetch(`${origin}/readyz`, { headers }).then(
      (response) => response.status === 200,
      () => false,
    );
  await until(ready, () => `never ready: ${describe()}`, { timeoutMs, intervalMs: 100 });
}
