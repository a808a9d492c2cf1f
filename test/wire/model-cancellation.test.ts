import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../../src/app.js';
import { serialize } from '../../src/protocol/frames.js';
import type { Session } from '../../src/protocol/session.js';
import { EVENT_TIMEOUT_MS } from '../helpers/children.js';
import { assertValidFrame } from '../helpers/schema.js';
import { connect, INITIALIZE, request, ROOT, testConfig, type Connection, type Frame } from '../helpers/wire.js';

/**
 * §7.14 and §13.1: cancelling a long embed, embed/multi, rerank or index/add (notifications/cancel, or an HTTP client
 * hanging up) stops its work — the model's queue drops the request's waiting texts at once — and is answered -32006;
 * a write cancelled before its commit says nothing was written, one cancelled after it is answered with its result
 * (docs/architecture.md §8). §9: the progress frames these methods emit per model batch are what the tests wait for.
 */
const ENCODER = `${ROOT}/models/use-lite`;
/**
 * The answer cap raised past 256 matrices of 128 rows (~400 MB as JSON), so that embed/multi admits the long request;
 * it is cancelled long before any answer is built.
 */
const CONFIG = { 'models.encoder': ENCODER, 'models.colbert': true, 'limits.maxResponseBytes': 2 ** 30 };
/** 256 texts past the encoder's 128 tokens: sixteen model batches of sixteen. */
const COUNT = 256;
const SENTENCE = 'the heart pumps blood through the arteries and veins of the body while the lungs move oxygen ';
const LONG = Array.from({ length: COUNT }, (_, i) => `${i} ${SENTENCE.repeat(8)}`);
/** Items the model may still run for a request after its cancel: the batch running, and one taken as it ended. */
const AFTER_CANCEL = 32;

type Progress = { method: string; params: { progressToken: string | number; stage: string; progress: number } };

/** What each long request is, with the progress stage after which the test cancels it. */
const LONG_REQUESTS: [string, Record<string, unknown>, string][] = [
  ['embed', { inputs: LONG }, 'embed'],
  ['embed/multi', { inputs: LONG, kind: 'document' }, 'embed'],
  ['rerank', { query: 'heart blood', passages: LONG, method: 'colbert' }, 'rerank'],
  ['index/add', { documents: LONG.map((text, i) => ({ id: `long-${i}`, text })) }, 'embed'],
];

/** Texts the encoder has run since `start()`, counted from its batches. */
function batchCounter(app: App) {
  let items = 0;
  app.models.observeBatches((role, count) => {
    if (role === 'encoder') items += count;
  });
  return {
    reset: () => (items = 0),
    get items() {
      return items;
    },
  };
}

/** An in-process session over `app`: every frame checked against the schemas, notifications kept in order. */
function inProcess(app: App) {
  const session: Session = app.createSession();
  const notifications: Frame[] = [];
  const waiters: (() => void)[] = [];
  const sink = (frame: unknown): void => {
    assertValidFrame(JSON.parse(serialize(frame)));
    notifications.push(frame as Frame);
    waiters.splice(0).forEach((wake) => wake());
  };
  const call = async (frame: Frame): Promise<Frame> => {
    const reply = await session.handle(frame, sink);
    assertValidFrame(JSON.parse(serialize(reply)), frame.method as string);
    return reply as unknown as Frame;
  };
  /** Resolves with the first notification matching `match`, waiting for it. */
  const notification = async (match: (frame: Frame) => boolean): Promise<Frame> => {
    const deadline = Date.now() + EVENT_TIMEOUT_MS;
    for (;;) {
      const found = notifications.find(match);
      if (found !== undefined) return found;
      if (Date.now() > deadline) throw new Error('no such notification');
      await new Promise<void>((resolve) => waiters.push(resolve));
    }
  };
  const cancel = (id: string | number) =>
    session.handle({ jsonrpc: '2.0', method: 'notifications/cancel', params: { id, reason: 'test' } });
  /** The stages of the progress frames sent for `token`, in order, each once. */
  const stages = (token: string) => [
    ...new Set(notifications.filter(progressOf(token)).map((frame) => (frame as Progress).params.stage)),
  ];
  return { call, notification, cancel, stages };
}

const progressOf = (token: string | number, stage?: string) => (frame: Frame) =>
  frame.method === 'notifications/progress' &&
  (frame as Progress).params.progressToken === token &&
  (stage === undefined || (frame as Progress).params.stage === stage);

describe('cancellation in process (§7.14 notifications/cancel)', () => {
  let app: App;
  let client: ReturnType<typeof inProcess>;
  let batches: ReturnType<typeof batchCounter>;
  beforeAll(async () => {
    app = createApp(testConfig(CONFIG));
    await app.corpus?.ready;
    batches = batchCounter(app);
    client = inProcess(app);
    await client.call(INITIALIZE());
  });
  afterAll(() => app.close());

  it.each(LONG_REQUESTS)(
    '§7.14 a long %s cancelled after its first batch is answered -32006 and its waiting texts leave the queue',
    async (method, params, stage) => {
      batches.reset();
      const id = `long-${method}`;
      const answer = client.call(request(id, method, { ...params, _meta: { progressToken: id } }));
      await client.notification(progressOf(id, stage));
      await client.cancel(id);
      const reply = await answer;
      expect(reply.error).toMatchObject({ code: -32006 });
      if (method === 'index/add') expect((reply.error as { message: string }).message).toContain('nothing was written');
      expect(app.models.queueDepths().encoder).toBe(0);
      // A small request now is served at once: nothing of the cancelled one waits before it.
      expect((await client.call(request(`after-${method}`, 'embed', { inputs: ['x'] }))).result).toBeDefined();
      expect(batches.items).toBeLessThan(COUNT / 2);
      expect(batches.items).toBeLessThanOrEqual(2 * AFTER_CANCEL);
    },
  );

  it('§7.10 a cancelled index/add wrote nothing: none of its documents is found', async () => {
    const found = await client.call(request('find', 'retrieve', { query: 'heart blood', k: 5, mode: 'sparse' }));
    expect((found.result as { hits: unknown[] }).hits).toEqual([]);
  });

  it('§7.10 §13.1 an index/add cancelled after its commit stands and is answered with its result', async () => {
    const id = 'committed-add';
    const documents = [{ id: 'kept', text: 'Zyxtrophin is a rare protein found in the retina of owls.' }];
    const answer = client.call(request(id, 'index/add', { documents, _meta: { progressToken: id } }));
    await client.notification(progressOf(id, 'write'));
    await client.cancel(id);
    expect((await answer).result).toMatchObject({ ids: ['kept'] });
    const found = await client.call(request('find-kept', 'retrieve', { query: 'zyxtrophin', k: 1, mode: 'sparse' }));
    expect((found.result as { hits: { chunk: { docId: string } }[] }).hits[0]?.chunk.docId).toBe('kept');
  });

  it('§9 index/add reports read, chunk, embed, write and index; index/delete write and index', async () => {
    const id = 'staged-add';
    const documents = [{ id: 'staged', text: `${SENTENCE.repeat(60)}` }];
    await client.call(request(id, 'index/add', { documents, chunk: true, _meta: { progressToken: id } }));
    const deleted = await client.call(
      request('del', 'index/delete', { ids: ['staged'], _meta: { progressToken: 'del' } }),
    );
    expect(deleted.result).toMatchObject({ deleted: 1 });
    expect(client.stages(id)).toEqual(['read', 'chunk', 'embed', 'write', 'index']);
    expect(client.stages('del')).toEqual(['write', 'index']);
  });
});

/** Resolves once `condition` holds, looking again each turn of the timers (for state only a poll can see). */
async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + EVENT_TIMEOUT_MS;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`not within ${EVENT_TIMEOUT_MS} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('cancellation over HTTP (§13.1 a client that hangs up; §9 progress over SSE)', () => {
  let app: App;
  let origin: string;
  let batches: ReturnType<typeof batchCounter>;
  beforeAll(async () => {
    app = createApp(testConfig({ ...CONFIG, 'http.port': 0 }));
    origin = await (await app.buildHttp()).listen({ host: '127.0.0.1', port: 0 });
    await app.corpus?.ready;
    batches = batchCounter(app);
  });
  afterAll(() => app.close());

  const post = async (method: string, params: object) => {
    const response = await fetch(`${origin}/rcp/${method}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(request(1, method, params)),
    });
    return (await response.json()) as Frame;
  };

  /** POSTs for an SSE answer and hangs up once a progress frame of `stage` has come. */
  const hangUpAfter = async (method: string, params: object, stage: string): Promise<void> => {
    const aborter = new AbortController();
    const response = await fetch(`${origin}/rcp/${method}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify(request('long', method, { ...params, _meta: { progressToken: 'long' } })),
      signal: aborter.signal,
    });
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) throw new Error(`${method} answered before any ${stage} progress: ${text.slice(0, 300)}`);
      text += decoder.decode(value as Uint8Array, { stream: true });
      const events = text.split('\n\n').slice(0, -1);
      const frames = events.map((event) => JSON.parse(event.slice('data: '.length)) as Frame);
      frames.forEach((frame) => assertValidFrame(frame));
      if (frames.some(progressOf('long', stage))) break;
    }
    aborter.abort();
    await reader.cancel().catch(() => undefined);
  };

  it.each(LONG_REQUESTS)(
    '§13.1 a long %s whose client hangs up after its first batch leaves the queue: nothing more of it runs',
    async (method, params, stage) => {
      batches.reset();
      await hangUpAfter(method, params, stage);
      await until(() => app.models.queueDepths().encoder === 0, 'the queue empty');
      expect((await post('embed', { inputs: ['x'] })).result).toBeDefined();
      expect(batches.items).toBeLessThan(COUNT / 2);
    },
  );

  it('§7.10 the index/add whose client hung up wrote nothing', async () => {
    const found = await post('retrieve', { query: 'heart blood', k: 5, mode: 'sparse' });
    expect((found.result as { hits: unknown[] }).hits).toEqual([]);
  });
});

describe('cancellation over stdio (§7.14 notifications/cancel to a real process)', () => {
  let client: Connection;
  beforeAll(async () => {
    client = await connect('stdio', { config: CONFIG });
    await client.exchange(INITIALIZE());
  });
  afterAll(() => client.close());

  it.each(LONG_REQUESTS)(
    '§7.14 a long %s cancelled after its first batch is answered -32006',
    async (method, params, stage) => {
      const id = `stdio-${method}`;
      client.send(request(id, method, { ...params, _meta: { progressToken: id } }));
      await until(() => client.notifications.some(progressOf(id, stage)), `${stage} progress of ${method}`);
      client.send({ jsonrpc: '2.0', method: 'notifications/cancel', params: { id } });
      const reply = await client.reply(id);
      expect(reply.error).toMatchObject({ code: -32006 });
      // The following request is answered, not left behind the cancelled one's texts.
      expect(
        ((await client.exchange(request(`${id}-after`, 'embed', { inputs: ['x'] }))) as Frame).result,
      ).toBeDefined();
    },
  );

  it('§7.10 the cancelled index/add wrote nothing', async () => {
    const found = (await client.exchange(
      request('find', 'retrieve', { query: 'heart blood', k: 5, mode: 'sparse' }),
    )) as Frame;
    expect((found.result as { hits: unknown[] }).hits).toEqual([]);
  });
});
