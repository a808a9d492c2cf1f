import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { whilePinging } from '../helpers/pinging.js';
import { startHttpProcess, type ServerProcess } from '../helpers/processes.js';
import { request, type Frame } from '../helpers/wire.js';

/**
 * §15.5 bounds against characters that expand under Unicode normalisation: U+FDFA is one UTF-16 unit that NFKC and
 * NFKD make 18, so a text within every size bound was 18 times longer by the time the tokenizer and the analyzer
 * read it, in one go on the event loop. A real server with the default model, and another client's `ping` timed
 * while each runs: the 90th percentile of its round trips was seconds (the whole request held the loop); bounded by
 * what is read after normalising, in time slices, it is milliseconds. The bound separates the two on a loaded machine.
 */
const STALL_MS = 1000;
const EXPANDING = '\ufdfa';
const QUERY_CHARS = 340_000;
let server: ServerProcess;
beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rcp-unicode-'));
  // A query as long as a document (an operator may allow it): its cost is what it decomposes to, not its length.
  server = await startHttpProcess(['serve', '--http', '127.0.0.1:0', '--data', dir], {
    RCP_LIMITS_MAX_QUERY_CHARS: String(QUERY_CHARS),
  });
});
afterAll(() => server.stop());

async function call(method: string, params: object): Promise<Frame> {
  const body = JSON.stringify(request(1, method, params));
  const response = await fetch(`${server.origin}/rcp/${method}`, { method: 'POST', body });
  return (await response.json()) as Frame;
}

const ping = () => call('ping', {});

/** The figures, for the record (`npx vitest run test/hostile/unicode-expansion.test.ts` prints them). */
async function report(what: string, measured: { worstPingMs: number; slowPingMs: number }): Promise<void> {
  const idle = await whilePinging(ping, () => new Promise((resolve) => setTimeout(resolve, 500)));
  console.log(
    `${what}: victim ping p90 ${measured.slowPingMs.toFixed(0)} ms, worst ${measured.worstPingMs.toFixed(0)} ms` +
      ` (idle: p90 ${idle.slowPingMs.toFixed(0)} ms, worst ${idle.worstPingMs.toFixed(0)} ms)`,
  );
}

describe('characters that expand under normalisation (§15.5, §4.6)', () => {
  it('embed/sparse of 340,000 × U+FDFA (1 MB) is answered while ping keeps answering', async () => {
    const text = EXPANDING.repeat(340_000);
    const measured = await whilePinging(ping, () => call('embed/sparse', { texts: [text], kind: 'document' }));
    await report('embed/sparse 340,000 × U+FDFA', measured);
    const sparse = (measured.answer.result as { sparse: { indices: number[] }[] }).sparse;
    // Its terms, whole: the analysis in parts is the analysis of the whole text.
    expect(sparse[0]!.indices.length).toBeGreaterThan(4);
    expect(measured.slowPingMs).toBeLessThan(STALL_MS);
  }, 60_000);

  it('index/add with chunk: true of 100,000 × U+FDFA is written while ping keeps answering', async () => {
    const text = EXPANDING.repeat(100_000);
    const measured = await whilePinging(ping, () =>
      call('index/add', { documents: [{ id: 'expanding', text }], chunk: true }),
    );
    await report('index/add chunk:true 100,000 × U+FDFA', measured);
    expect(measured.answer.result).toMatchObject({ ids: ['expanding'] });
    expect(measured.slowPingMs).toBeLessThan(STALL_MS);
  }, 120_000);

  it('embed/multi of 8 × 100,000 × U+FDFA (token offsets through NFKC) is answered while ping keeps answering', async () => {
    const texts = Array.from({ length: 8 }, () => EXPANDING.repeat(100_000));
    const measured = await whilePinging(ping, () => call('embed/multi', { inputs: texts, kind: 'document' }));
    await report('embed/multi 8 × 100,000 × U+FDFA', measured);
    const result = measured.answer.result as { matrices: unknown[][]; 'x-rcp-server-offsets': number[][][] };
    expect(result.matrices).toHaveLength(8);
    // Each row's span is whole U+FDFA characters of the input, however many tokens one of them became.
    expect(result['x-rcp-server-offsets'][0]!.every(([start, end]) => end! <= 100_000 && start! <= end!)).toBe(true);
    expect(measured.slowPingMs).toBeLessThan(STALL_MS);
  }, 120_000);

  it('retrieve with a query of 340,000 × U+FDFA, twice, leaves ping answered', async () => {
    const plain = await call('index/add', { documents: [{ id: 'plain', text: 'an ordinary document' }] });
    expect(plain.result).toBeDefined();
    const query = EXPANDING.repeat(QUERY_CHARS);
    const measured = await whilePinging(ping, async () => [
      await call('retrieve', { query, k: 3 }),
      await call('retrieve', { query, k: 3, mode: 'sparse' }),
    ]);
    await report('retrieve 2 × (340,000 × U+FDFA)', measured);
    for (const answer of measured.answer) expect(answer.result).toMatchObject({ hits: expect.any(Array) });
    // Each retrieve held the loop for over a second in one go (analysing the query whole); now tens of milliseconds.
    expect(measured.slowPingMs).toBeLessThan(STALL_MS / 2);
  }, 120_000);
});
