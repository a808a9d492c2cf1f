import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { INITIALIZE, request, ROOT, testConfig } from '../helpers/wire.js';

/** §17: Prometheus metrics on the HTTP port, from real traffic. */
let app: App;
let origin: string;
beforeAll(async () => {
  app = createApp(
    testConfig({
      'models.encoder': `${ROOT}/models/use-lite`,
      // One model call per 20 s: the second embed below is refused however slowly the calls between run.
      'limits.rateLimit': { reads: 0, writes: 0, models: 0.05 },
    }),
  );
  origin = await (await app.buildHttp()).listen({ host: '127.0.0.1', port: 0 });
  await app.corpus?.ready;
});
afterAll(() => app.close());

const post = (body: object) =>
  fetch(`${origin}/rcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

describe('GET /metrics', () => {
  it('counts requests by method and code, times methods and stages, and reports batches, queues, refusals, corpus size and build info', async () => {
    await post(INITIALIZE(1));
    await post(request(2, 'ping'));
    await post(request(3, 'ping'));
    await post(request(4, 'embed', { inputs: ['metrics'] }));
    await post(request(5, 'no/such/method'));
    await post(request(6, 'index/add', { documents: [{ id: 'm', text: 'counted' }] }));
    await post(request(7, 'retrieve', { query: 'counted', k: 1 }));
    const refused = (await (await post(request(8, 'embed', { inputs: ['over the limit'] }))).json()) as {
      error: { code: number };
    };
    expect(refused.error.code).toBe(-32011);
    await post(request(9, 'feedback', { signals: [{ hitId: 'm#0', used: true, poisonSuspected: true }] }));
    const response = await fetch(`${origin}/metrics`);
    expect(response.headers.get('content-type')).toContain('text/plain');
    const text = await response.text();
    expect(text).toContain('rcp_requests_total{method="ping",code="0"} 2');
    expect(text).toContain('rcp_requests_total{method="embed",code="0"} 1');
    expect(text).toContain('rcp_requests_total{method="other",code="-32004"} 1');
    expect(text).toMatch(/rcp_request_duration_seconds_bucket\{le="[\d.]+",method="embed"\} 1/);
    expect(text).toContain('rcp_model_queue_depth{model="encoder"} 0');
    expect(text).toContain('rcp_corpus_size{kind="documents"} 1');
    expect(text).toMatch(/rcp_build_info\{version="[\d.]+"\} 1/);
    expect(text).toContain('rcp_process_resident_memory_bytes');
    for (const stage of ['recall', 'fuse', 'pack']) {
      expect(text).toMatch(new RegExp(`rcp_stage_duration_seconds_count\\{method="retrieve",stage="${stage}"\\} 1`));
    }
    // The embed call, the document's chunk and the retrieve's query: each a model call of one text.
    expect(text).toMatch(/rcp_model_batch_size_count\{model="encoder"\} [1-9]/);
    expect(text).toMatch(/rcp_model_batch_duration_seconds_count\{model="encoder"\} [1-9]/);
    expect(text).toContain('rcp_refused_total{reason="rate_limit",method="embed"} 1');
    expect(text).toContain('rcp_feedback_signals_total{signal="used"} 1');
    expect(text).toContain('rcp_feedback_flags_total{kind="poison"} 1');
  });

  it('counts each answer once, however often the metrics are read between answers', async () => {
    const pings = async () =>
      (await (await fetch(`${origin}/metrics`)).text()).match(
        /rcp_requests_total\{method="ping",code="0"\} (\d+)/,
      )?.[1];
    const before = Number(await pings());
    await post(request(20, 'ping'));
    expect(Number(await pings())).toBe(before + 1);
    expect(Number(await pings())).toBe(before + 1);
    await post(request(21, 'ping'));
    await post(request(22, 'ping'));
    expect(Number(await pings())).toBe(before + 3);
  });
});

describe('metrics turned off', () => {
  it('serves no /metrics when metrics.path is empty', async () => {
    const quiet = createApp(testConfig({ 'metrics.path': '' }));
    const where = await (await quiet.buildHttp()).listen({ host: '127.0.0.1', port: 0 });
    expect((await fetch(`${where}/metrics`)).status).toBe(404);
    await quiet.close();
  });
});
