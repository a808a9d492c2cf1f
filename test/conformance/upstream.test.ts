import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpProcess, type ServerProcess } from '../helpers/processes.js';
import { ROOT } from '../helpers/wire.js';

/**
 * The upstream harness and reference SDK clients (a checkout of the public 1ay1/rcp repository, named by
 * RCP_UPSTREAM): `conformance/check.py` over stdio and over HTTP (in a named session, §5.2), and two instances each
 * of the Python and Node SDK clients at once against one HTTP server on one host — each in its own session, with
 * overlapping request ids, one shutting down while the other works.
 */
const UPSTREAM = process.env.RCP_UPSTREAM === undefined ? undefined : resolve(process.env.RCP_UPSTREAM);
const run = promisify(execFile);
const dataDir = () => mkdtempSync(join(tmpdir(), 'rcp-upstream-'));

if (UPSTREAM !== undefined && !existsSync(join(UPSTREAM, 'conformance/check.py'))) {
  throw new Error(`RCP_UPSTREAM=${UPSTREAM} is not a checkout of 1ay1/rcp: conformance/check.py is missing`);
}

function upstreamSuite(up: string): void {
  describe('the upstream harness and SDK clients (RCP_UPSTREAM)', () => {
    let server: ServerProcess;
    beforeAll(async () => {
      server = await startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', dataDir()]);
    });
    afterAll(async () => server?.stop());

    it('check.py certifies L2 over stdio', async () => {
      const command = ['node', join(ROOT, 'bin/rcp-server.js'), 'serve', '--stdio', '--data', dataDir()];
      const { stdout } = await run('python3', [join(up, 'conformance/check.py'), '--', ...command]);
      expect(stdout).toMatch(/0 failed/);
      expect(stdout).toMatch(/CERTIFIED LEVEL: L2/);
    });

    it('check.py certifies L2 over HTTP in a named session', async () => {
      const url = `${server.origin}/rcp/sessions/conformance`;
      const { stdout } = await run('python3', [join(up, 'conformance/check.py'), '--http', url]);
      expect(stdout).toMatch(/0 failed/);
      expect(stdout).toMatch(/CERTIFIED LEVEL: L2/);
    });

    it('two Python SDK clients at once: both initialize and work; one shutting down leaves the other working', async () => {
      const program = (role: 'leaver' | 'stayer') => `
import sys, time, json
sys.path.insert(0, ${JSON.stringify(join(up, 'sdk/python'))})
from rcp import Client
c = Client().connect_http(${JSON.stringify(`${server.origin}/rcp`)})
out = {"dim": len(c.embed(["owls at night"])[0])}
if ${JSON.stringify(role)} == "leaver":
    c.shutdown()
else:
    time.sleep(0.5)
    out["hits"] = len(c.retrieve("owls", 3))
    out["ping"] = c.ping(7)
print(json.dumps(out))`;
      const [leaver, stayer] = await Promise.all([
        run('python3', ['-c', program('leaver')]),
        run('python3', ['-c', program('stayer')]),
      ]);
      expect(JSON.parse(leaver.stdout)).toEqual({ dim: 512 });
      expect(JSON.parse(stayer.stdout)).toMatchObject({ dim: 512, ping: { nonce: 7 } });
    });

    it('two Node SDK clients at once, ids overlapping: both work; one shutting down leaves the other working', async () => {
      const sdk = (await import(pathToFileURL(join(up, 'sdk/node/src/index.js')).href)) as {
        Client: new () => {
          connectHttp(url: string): Promise<unknown>;
          embed(texts: string[]): Promise<number[][]>;
          retrieve(query: string, k: number): Promise<unknown[]>;
          ping(nonce: number): Promise<unknown>;
          shutdown(): Promise<void>;
        };
      };
      const [a, b] = [new sdk.Client(), new sdk.Client()];
      await Promise.all([a.connectHttp(`${server.origin}/rcp`), b.connectHttp(`${server.origin}/rcp`)]);
      const both = await Promise.all([a, b].flatMap((client) => [client.embed(['x']), client.retrieve('owls', 2)]));
      expect(both).toHaveLength(4);
      await a.shutdown();
      expect(await b.ping(9)).toEqual({ nonce: 9 });
      await b.shutdown();
    });
  });
}

// Only what can run is declared: without a checkout, one skipped test says what is missing; with one, none is skipped.
if (UPSTREAM !== undefined) upstreamSuite(UPSTREAM);
else {
  describe('the upstream harness and SDK clients', () => {
    it.skip('need RCP_UPSTREAM=<a checkout of github.com/1ay1/rcp>', () => undefined);
  });
}
