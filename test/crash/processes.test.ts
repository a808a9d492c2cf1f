import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, describe, expect, it } from 'vitest';
import { track } from '../helpers/children.js';
import { startHttpProcess, type ServerProcess } from '../helpers/processes.js';
import { INITIALIZE, readFrames, request, ROOT, spawnStdio, type StdioChild } from '../helpers/wire.js';

/**
 * One data dir, many processes (docs/architecture.md §5): three stdio servers, an HTTP server and an `rcp-server
 * ingest` at once over one dir; writes go through each; every process converges to the same hits, in the same order,
 * at the same indexVersion. Two of them write the same ids at once and converge to one version of each. A stdio
 * server killed (-9) in the middle of its writes loses none it acknowledged, and the others serve on.
 */
const ENCODER_DIR = join(ROOT, 'models', 'use-lite');
const WORK = mkdtempSync(join(tmpdir(), 'rcp-processes-'));
const DATA = join(WORK, 'data');
const started: { stop: () => unknown }[] = [];
afterAll(async () => {
  await Promise.all(started.map((process) => process.stop()));
  rmSync(WORK, { recursive: true, force: true });
});

type Reply = { id: number; result?: Record<string, unknown>; error?: { code: number; message: string } };
type Retrieved = { hits: { id: string; score: number }[]; indexVersion: string };

interface Client {
  call(method: string, params: object): Promise<Reply>;
  readonly server: StdioChild | ServerProcess;
}

/** A stdio server on the shared dir, initialized; killed at the end whatever happens. */
async function stdioServer(): Promise<Client> {
  const server = spawnStdio({ config: { 'models.encoder': ENCODER_DIR, dataDir: DATA } }, [
    'bin/rcp-server.js',
    'serve',
    '--stdio',
  ]);
  started.push({ stop: () => server.child.kill('SIGKILL') });
  const waiting = new Map<number, (reply: Reply) => void>();
  readFrames(server.child, (frame) => waiting.get((frame as Reply).id)?.(frame as Reply));
  let next = 1;
  const call = (method: string, params: object) =>
    new Promise<Reply>((resolve, reject) => {
      const id = next++;
      waiting.set(id, resolve);
      void server.exited.then(() => reject(new Error(`the server exited: ${server.stderr()}`)));
      server.child.stdin.write(`${JSON.stringify(request(id, method, params))}\n`);
    });
  const init = INITIALIZE(0).params as object;
  expect((await call('initialize', init)).result).toBeDefined();
  return { call, server };
}

async function httpServer(): Promise<Client> {
  const server = await startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', DATA], {
    RCP_MODELS_ENCODER: ENCODER_DIR,
  });
  started.push(server);
  const call = async (method: string, params: object) => {
    const response = await fetch(`${server.origin}/rcp/${method}`, {
      method: 'POST',
      body: JSON.stringify(request(1, method, params)),
    });
    return (await response.json()) as Reply;
  };
  return { call, server };
}

/** An `rcp-server mcp` process on the shared dir, through the MCP SDK's own client. */
async function mcpProcess(): Promise<McpClient> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ['bin/rcp-server.js', 'mcp', '--data', DATA],
    cwd: ROOT,
    env: { ...(process.env as Record<string, string>), RCP_LOG_LEVEL: 'warn', RCP_MODELS_ENCODER: ENCODER_DIR },
    stderr: 'pipe',
  });
  const client = new McpClient({ name: 'processes-test', version: '1.0.0' });
  await client.connect(transport);
  started.push({ stop: () => client.close() });
  return client;
}

type ToolResult = { isError?: boolean; structuredContent?: { hits?: { id: string }[] } };

/** The hit ids the MCP process serves for QUERY once they are `expected` (asked again until they are). */
async function mcpServes(client: McpClient, expected: readonly string[]): Promise<string[]> {
  for (;;) {
    const found = (await client.callTool({
      name: 'retrieve',
      arguments: { query: QUERY.query, k: QUERY.k, mode: QUERY.mode },
    })) as ToolResult;
    expect(found.isError).toBeFalsy();
    const ids = found.structuredContent?.hits?.map((hit) => hit.id) ?? [];
    if (ids.join() === expected.join()) return ids;
  }
}

function ingest(file: string): Promise<{ code: number | null; stderr: string; stdout: string }> {
  const child = spawn(process.execPath, ['bin/rcp-server.js', 'ingest', '--data', DATA, file], {
    cwd: ROOT,
    env: { ...process.env, RCP_LOG_LEVEL: 'warn', RCP_MODELS_ENCODER: ENCODER_DIR },
  });
  track(child);
  ingesting = child;
  let stderr = '';
  let stdout = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stderr, stdout })));
}

/** The ingest running now (for a test to kill). */
let ingesting: ReturnType<typeof spawn> | undefined;

const add = (client: Client, id: string, text: string) => client.call('index/add', { documents: [{ id, text }] });

const QUERY = { query: 'zebra heart blood', k: 20, mode: 'hybrid', includeText: false };

/** What a process serves for QUERY once it has reached `indexVersion` (asked again until it has). */
async function servedAt(client: Client, indexVersion: number): Promise<Retrieved> {
  for (;;) {
    const reply = await client.call('retrieve', QUERY);
    const result = reply.result as Retrieved | undefined;
    if (result === undefined) throw new Error(JSON.stringify(reply.error));
    if (Number(result.indexVersion) >= indexVersion) return result;
  }
}

/** Every process serves the same hits, in the same order, at the same indexVersion (once it has reached it). */
async function converged(clients: readonly Client[], indexVersion: number): Promise<Retrieved> {
  const served = await Promise.all(clients.map((client) => servedAt(client, indexVersion)));
  const seen = served.map(({ hits, indexVersion }) => ({ hits, indexVersion }));
  for (const other of seen.slice(1)) expect(other).toEqual(seen[0]);
  return served[0]!;
}

const versionOf = (reply: Reply) => Number((reply.result as { indexVersion: string }).indexVersion);

describe('one data dir, many processes (docs/architecture.md §5)', () => {
  it(
    'stdio, HTTP, MCP and ingest processes write side by side and converge to the same hits and indexVersion',
    {
      timeout: 300_000,
    },
    async () => {
      const stdio = await Promise.all([stdioServer(), stdioServer(), stdioServer()]);
      const http = await httpServer();
      const mcp = await mcpProcess();
      const all = [...stdio, http];
      const file = join(WORK, 'ingest.jsonl');
      const lines = Array.from({ length: 30 }, (_, i) => JSON.stringify({ _id: `ingested-${i}`, text: `zebra ${i}` }));
      writeFileSync(file, `${lines.join('\n')}\n`);
      const ingested = ingest(file);
      const writes = await Promise.all(
        all.flatMap((client, c) =>
          Array.from({ length: 5 }, (_, i) => add(client, `p${c}-${i}`, `zebra heart ${c} blood ${i}`)),
        ),
      );
      for (const reply of writes) expect(reply.error).toBeUndefined();
      const viaMcp = (await mcp.callTool({
        name: 'index_add',
        arguments: { documents: [{ id: 'mcp-0', text: 'zebra heart mcp blood' }] },
      })) as ToolResult;
      expect(viaMcp.isError).toBeFalsy();
      expect((await ingested).code, (await ingested).stderr).toBe(0);
      // The same ids written by two processes at once: one version of each, everywhere.
      const raced = await Promise.all(
        Array.from({ length: 6 }, (_, i) => add(stdio[i % 2]!, `same-${i % 3}`, `zebra heart same ${i}`)),
      );
      const head = Math.max(...[...writes, ...raced].map(versionOf));
      const served = await converged(all, head);
      expect(served.hits.length).toBe(20);
      // The MCP process serves the same hits, in the same order (its tool answers carry no indexVersion).
      await mcpServes(
        mcp,
        served.hits.map((hit) => hit.id),
      );
      const documents = await converged(all, head).then(() =>
        Promise.all(all.map((client) => client.call('retrieve', { ...QUERY, query: 'same', k: 3, mode: 'sparse' }))),
      );
      for (const other of documents.slice(1)) expect(other.result?.hits).toEqual(documents[0]!.result?.hits);
    },
  );

  it(
    'kill -9 of a stdio server mid-write loses no write it acknowledged; the others serve on',
    {
      timeout: 300_000,
    },
    async () => {
      const [victim, witness] = await Promise.all([stdioServer(), stdioServer()]);
      const acknowledged: string[] = [];
      let fifth: () => void = () => undefined;
      const fiveAcknowledged = new Promise<void>((resolve) => (fifth = resolve));
      const pending = Array.from({ length: 40 }, (_, i) =>
        add(victim, `killed-${i}`, `zebra kill ${i} okapi${i}`).then(
          (reply) => {
            if (reply.result !== undefined && acknowledged.push(`killed-${i}`) === 5) fifth();
          },
          () => undefined,
        ),
      );
      await Promise.race([fiveAcknowledged, Promise.all(pending)]);
      expect(acknowledged.length).toBeGreaterThanOrEqual(5);
      (victim.server as StdioChild).child.kill('SIGKILL');
      await Promise.all(pending);
      const head = Math.max(
        0,
        ...(await Promise.all([witness.call('index/add', { documents: [{ id: 'after', text: 'zebra after' }] })])).map(
          versionOf,
        ),
      );
      await servedAt(witness, head);
      for (const id of acknowledged) {
        const n = id.split('-')[1];
        const reply = await witness.call('retrieve', { query: `okapi${n}`, k: 1, mode: 'sparse', includeText: false });
        expect((reply.result as Retrieved).hits[0]?.id).toBe(`${id}#0`);
      }
    },
  );

  it(
    'kill -9 of an ingest beside a server loses no batch it wrote; run again, it resumes',
    { timeout: 300_000 },
    async () => {
      const witness = await stdioServer();
      const file = join(WORK, 'killed-ingest.jsonl');
      const total = 150;
      const lines = Array.from({ length: total }, (_, i) => JSON.stringify({ _id: `kiwi-${i}`, text: `kiwi ${i}` }));
      writeFileSync(file, `${lines.join('\n')}\n`);
      const kiwis = async () => {
        const reply = await witness.call('retrieve', { query: 'kiwi', k: 200, mode: 'sparse', includeText: false });
        return (reply.result as Retrieved).hits.length;
      };
      const first = ingest(file);
      let seen = await kiwis();
      while (seen === 0) seen = await kiwis();
      ingesting!.kill('SIGKILL');
      await first;
      expect(await kiwis()).toBeGreaterThanOrEqual(seen);
      const again = await ingest(file);
      expect(again.code, again.stderr).toBe(0);
      const [, added, unchanged] = /ingested (\d+) documents .*; (\d+) unchanged/.exec(again.stdout) ?? [];
      expect(Number(added) + Number(unchanged)).toBe(total);
      expect(Number(unchanged)).toBeGreaterThanOrEqual(seen);
      while ((await kiwis()) < total);
    },
  );
});
