import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpProcess, type ServerProcess } from '../helpers/processes.js';

/**
 * One index/add within every other limit can still make tens of thousands of chunks (a 1 MB document of one-letter
 * words made 4,063; sixteen of them 65,008), and every writer of the data dir waits while a write is indexed: two
 * minutes of everyone's writes, and a client cut before its answer came. `index.maxChunksPerAdd` bounds it: such a
 * call is -32013 while it is chunked, before anything is embedded or written (§15.5).
 */
let server: ServerProcess;

beforeAll(async () => {
  server = await startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', mkdtempSync(join(tmpdir(), 'rcp-'))], {
    RCP_INDEX_MAX_CHUNKS_PER_ADD: '64',
  });
}, 120_000);
afterAll(async () => {
  await server?.stop();
});

async function call(
  method: string,
  params: object,
): Promise<{
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: Record<string, unknown> };
}> {
  const response = await fetch(`${server.origin}/rcp/${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return (await response.json()) as never;
}

describe('§15.5 one index/add makes at most index.maxChunksPerAdd chunks', () => {
  it('a write past it is -32013 naming the bound, and nothing of it is written; one within it is', async () => {
    const words = 'a '.repeat(60_000); // about 470 chunks of the default encoder's 128 tokens
    const refused = await call('index/add', {
      documents: [
        { id: 'small', text: 'a small document first' },
        { id: 'huge', text: words },
      ],
      chunk: true,
    });
    expect(refused.error?.code).toBe(-32013);
    expect(refused.error?.data).toMatchObject({
      field: 'documents',
      detail: expect.stringMatching(/more than the 64 one index\/add may make; nothing was written/),
    });
    const gone = await call('index/delete', { ids: ['small', 'huge'] });
    expect(gone.result).toMatchObject({ deleted: 0 });
    const within = await call('index/add', { documents: [{ id: 'fits', text: 'a '.repeat(3_000) }], chunk: true });
    expect(within.error).toBeUndefined();
    expect(within.result?.chunks).toBeLessThanOrEqual(64);
  });
});
