import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpProcess, type ServerProcess } from '../helpers/processes.js';

/**
 * §5.2 CORS decides what a page may read, not what it may send: a page on any site can POST a `text/plain` or form
 * body to a server on its visitor's machine without a preflight, and a page whose host name was rebound to this
 * address posts as same-origin. Such a request is refused (403) before it runs, whatever `http.corsOrigins` holds;
 * clients that are not browsers (no `Origin`, no `Sec-Fetch-Site`) and allowed origins are served.
 */
const DATA = mkdtempSync(join(tmpdir(), 'rcp-cross-site-'));
let server: ServerProcess;
beforeAll(async () => {
  server = await startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', DATA], {
    RCP_CORS_ORIGINS: 'https://app.example',
  });
}, 120_000);
afterAll(async () => {
  await server?.stop();
  rmSync(DATA, { recursive: true, force: true });
});

const frame = (id: number, method: string, params: object) => JSON.stringify({ jsonrpc: '2.0', id, method, params });

async function post(method: string, body: string, headers: Record<string, string>) {
  const response = await fetch(`${server.origin}/rcp/${method}`, { method: 'POST', body, headers });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

async function stored(id: string): Promise<boolean> {
  const found = await post('retrieve', frame(9, 'retrieve', { query: `planted ${id}`, k: 10, mode: 'sparse' }), {});
  const hits = ((found.json.result as { hits?: { id: string }[] }).hits ?? []).map((hit) => hit.id);
  return hits.some((hit) => hit.startsWith(id));
}

describe('cross-site requests from browsers', () => {
  it('a page on another site cannot write or read: refused 403 before the write runs', async () => {
    const add = (id: string) => frame(1, 'index/add', { documents: [{ id, text: `planted ${id} by a foreign page` }] });
    const attempts: Record<string, string>[] = [
      { 'content-type': 'text/plain;charset=UTF-8', origin: 'https://evil.example' },
      { 'content-type': 'application/x-www-form-urlencoded', origin: 'null' },
      // DNS rebinding: the page's own origin, under a name now pointing here.
      { 'content-type': 'text/plain', origin: `http://evil.example:${new URL(server.origin).port}` },
      { 'content-type': 'text/plain', 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors' },
    ];
    for (const [i, headers] of attempts.entries()) {
      const answer = await post('index/add', add(`csrf${i}`), headers);
      expect(answer.status, JSON.stringify(headers)).toBe(403);
      expect(await stored(`csrf${i}`)).toBe(false);
    }
    const read = await post('retrieve', frame(2, 'retrieve', { query: 'planted' }), { origin: 'https://evil.example' });
    expect(read.status).toBe(403);
  });

  it('clients that are not browsers, and pages of an allowed origin, are served', async () => {
    expect(
      (await post('index/add', frame(3, 'index/add', { documents: [{ id: 'tool', text: 'planted tool' }] }), {}))
        .status,
    ).toBe(200);
    expect(await stored('tool')).toBe(true);
    const allowed = {
      origin: 'https://app.example',
      'content-type': 'application/json',
      'sec-fetch-site': 'cross-site',
    };
    const page = await post(
      'index/add',
      frame(4, 'index/add', { documents: [{ id: 'page', text: 'planted page' }] }),
      allowed,
    );
    expect(page.status).toBe(200);
    expect(await stored('page')).toBe(true);
  });
});
