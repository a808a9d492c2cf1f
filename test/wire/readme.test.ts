import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { startHttpProcess, type ServerProcess } from '../helpers/processes.js';
import { assertValidFrame } from '../helpers/schema.js';
import { ROOT } from '../helpers/wire.js';

/**
 * The README's quickstart, run as written: every `curl -s localhost:8080/...` line of it, with real curl, against a
 * freshly started server (only the port differs), and each answer checked against the `# {...}` line under it. An
 * answer line is abridged: it names the fields the answer must have (objects may hold more), and `[...N numbers]`
 * stands for an array of N numbers.
 *
 * With RCP_README_SERVER=running the lines run verbatim through the shell, against the server the README's own
 * `npm ci && npm start` line is serving on localhost:8080 (CI runs that line as written, then this).
 */
const RUNNING = process.env.RCP_README_SERVER === 'running';
const run = promisify(execFile);
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

interface Example {
  command: string;
  expected: unknown;
}

function examples(): Example[] {
  const lines = README.split('\n');
  return lines.flatMap((line, i) => {
    const next = lines[i + 1] ?? '';
    if (!line.startsWith('curl -s localhost:8080/') || !next.startsWith('# ')) return [];
    const pattern = next.slice(2).replace(/\[\.\.\.(\d+) numbers\]/g, '"<$1 numbers>"');
    return [{ command: line, expected: JSON.parse(pattern) as unknown }];
  });
}

/** The answer has what the abridged answer names. */
function matches(actual: unknown, expected: unknown): boolean {
  const numbers = typeof expected === 'string' ? /^<(\d+) numbers>$/.exec(expected) : null;
  if (numbers !== null) {
    return Array.isArray(actual) && actual.length === Number(numbers[1]) && actual.every((n) => typeof n === 'number');
  }
  if (Array.isArray(expected)) {
    return (
      Array.isArray(actual) && actual.length === expected.length && expected.every((e, i) => matches(actual[i], e))
    );
  }
  if (typeof expected === 'object' && expected !== null) {
    if (typeof actual !== 'object' || actual === null) return false;
    return Object.entries(expected).every(([key, value]) => matches((actual as Record<string, unknown>)[key], value));
  }
  return actual === expected;
}

/** `curl -s URL -d 'BODY'` split the way the shell would (the README quotes each body in single quotes). */
function argv(command: string, origin: string): string[] {
  const parsed = /^curl (-s) localhost:8080(\S+) -d '([^']*)'$/.exec(command);
  if (parsed === null) throw new Error(`not a README curl line this test can run: ${command}`);
  return [parsed[1]!, `${origin}${parsed[2]}`, '-d', parsed[3]!];
}

let server: ServerProcess | undefined;
afterAll(async () => server?.stop());

/** Runs one README curl line: verbatim against the running README server, or against a fresh one on its own port. */
async function answer(command: string): Promise<string> {
  if (RUNNING) return (await run('sh', ['-c', command])).stdout;
  server ??= await startHttpProcess([
    'serve',
    '--http',
    '127.0.0.1:0',
    '--data',
    mkdtempSync(join(tmpdir(), 'rcp-readme-')),
  ]);
  return (await run('curl', argv(command, server.origin))).stdout;
}

describe('the README quickstart, as written', () => {
  it(
    `every curl line answers what the README says, on ${RUNNING ? 'the README server' : 'a fresh server'}`,
    { timeout: 60_000 },
    async () => {
      const found = examples();
      expect(found.map((example) => /localhost:8080\/rcp\/(\S+)/.exec(example.command)?.[1])).toEqual(
        expect.arrayContaining(['ping', 'embed', 'index/add', 'retrieve']),
      );
      for (const { command, expected } of found) {
        const stdout = await answer(command);
        const frame = JSON.parse(stdout) as unknown;
        assertValidFrame(frame, /localhost:8080\/rcp\/(\S+)/.exec(command)?.[1]);
        expect(matches(frame, expected), `${command}\n=> ${stdout.slice(0, 300)}`).toBe(true);
      }
    },
  );
});
