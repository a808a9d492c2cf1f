import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll } from 'vitest';

/**
 * How long a test waits for a process's event (a line printed, a port open, an answer) before it fails. An outer
 * bound against hangs, not a latency figure: on a loaded 2-core machine a server loading its model can take tens of
 * seconds to say it listens. Under the 120 s test and hook timeouts (vitest.config.ts), so the wait fails first and
 * says what it waited for.
 */
export const EVENT_TIMEOUT_MS = 90_000;

/** Every process a test file started that has not exited yet. */
const live = new Set<ChildProcess>();

/**
 * Registers a process the moment it is spawned, before anything waits on it: whatever happens to the test (a failed
 * wait or assertion, a timeout), it is ended with its own children when the file's tests are done, or when this
 * worker exits first. Tests that stop it themselves still do; ending an exited process is a no-op.
 */
export function track<T extends ChildProcess>(child: T): T {
  if (child.exitCode === null && child.signalCode === null) live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

// Benches (bench/) start servers through the same helpers outside vitest: there the exit hook below ends them.
if (process.env.VITEST !== undefined) {
  afterAll(async () => {
    await Promise.all([...live].map((child) => end(child)));
  });
}
process.once('exit', () => {
  for (const child of live) kill(child);
});

/** SIGKILL to a process and every process below it (a gateway's stdio engines), then its exit. */
export async function end(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  kill(child);
  await exited;
}

function kill(child: ChildProcess): void {
  if (child.pid === undefined) return;
  for (const pid of [...descendants(child.pid), child.pid]) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone already.
    }
  }
}

/** The pids below `root`, from one `ps` listing (children first found, then theirs). */
function descendants(root: number): number[] {
  let listing: string;
  try {
    listing = execFileSync('ps', ['-e', '-o', 'pid=,ppid='], { encoding: 'utf8' });
  } catch {
    return [];
  }
  const parents = listing
    .trim()
    .split('\n')
    .map((line) => line.trim().split(/\s+/).map(Number) as [number, number]);
  const found: number[] = [];
  for (let frontier = [root]; frontier.length > 0;) {
    frontier = parents.filter(([, ppid]) => frontier.includes(ppid)).map(([pid]) => pid);
    found.push(...frontier);
  }
  return found;
}

/** What a waiting test reads from a process: the process, and everything it has written to a stream so far. */
export interface Output {
  readonly child: ChildProcess;
  /** All the process has written so far (stderr, for the server's log). */
  stderr(): string;
}

/**
 * The first match of `pattern` in the process's stderr: at once if already written, else as soon as a chunk that
 * completes it arrives. Fails, with the log so far, if the process exits first or nothing matches within
 * `timeoutMs` (an outer bound, EVENT_TIMEOUT_MS by default).
 */
export function untilLogged(server: Output, pattern: RegExp, timeoutMs = EVENT_TIMEOUT_MS): Promise<RegExpExecArray> {
  const { child } = server;
  return new Promise((resolve, reject) => {
    const check = (): boolean => {
      const match = pattern.exec(server.stderr());
      if (match !== null) settle(() => resolve(match));
      return match !== null;
    };
    const gone = () => {
      if (!check())
        settle(() =>
          reject(
            new Error(`exited (${child.exitCode ?? child.signalCode}) before logging ${pattern}: ${server.stderr()}`),
          ),
        );
    };
    const timer = setTimeout(
      () => settle(() => reject(new Error(`nothing logged ${pattern} within ${timeoutMs} ms: ${server.stderr()}`))),
      timeoutMs,
    );
    const settle = (then: () => void) => {
      clearTimeout(timer);
      child.stderr?.off('data', check);
      child.off('close', gone);
      then();
    };
    // Our listener runs after the one that accumulates stderr (added at spawn), so the chunk is already in.
    child.stderr?.on('data', check);
    child.once('close', gone);
    // Already closed (no 'close' to come): what it wrote is all there is.
    if (!check() && (child.stderr === null || child.stderr.destroyed)) gone();
  });
}

/**
 * Polls `condition` (every `intervalMs`, a polling interval, not a guess at how long something takes) until it
 * holds; fails with `what` if it does not within `timeoutMs`.
 */
export async function until(
  condition: () => boolean | Promise<boolean>,
  what: string | (() => string),
  { timeoutMs = EVENT_TIMEOUT_MS, intervalMs = 25 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline)
      throw new Error(`not within ${timeoutMs} ms: ${typeof what === 'string' ? what : what()}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** What a command run to its end printed, and how it exited. */
export interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `node bin/rcp-server.js ARGS...` (tracked) to its end, `input` on its stdin, logging at `warn` unless `env`
 * says otherwise.
 */
export function runCommand(args: readonly string[], env: NodeJS.ProcessEnv = {}, input?: string): Promise<Run> {
  const child = track(
    spawn(process.execPath, ['bin/rcp-server.js', ...args], {
      cwd: fileURLToPath(new URL('../..', import.meta.url)),
      env: { ...process.env, RCP_LOG_LEVEL: 'warn', ...env },
    }),
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  if (input !== undefined) child.stdin.end(input);
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

/** A seeded generator (xorshift32) in [0, 1): the same numbers every run. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 2 ** 32;
  };
}
