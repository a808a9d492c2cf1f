import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { error } from '../helpers/frames.js';
import { connect, INITIALIZE, request, ROOT, TRANSPORTS, type Connection, type Frame } from '../helpers/wire.js';
import { DOCUMENT_MEDIA_TYPES } from '../../src/documents/index.js';

const ENCODER = `${ROOT}/models/use-lite`;
type AddResult = { ids: string[]; chunks: number; indexVersion: string; 'x-rcp-server-indexVersion': string };
const result = <T>(frame: Frame | Frame[]) => (frame as Frame).result as T;

describe.each(TRANSPORTS)('index/add and index/delete over %s (§7.10, §7.11)', (transport) => {
  let client: Connection;
  let capabilities: Record<string, unknown>;
  let id = 0;
  const call = (method: string, params: object) => client.exchange(request(++id, method, params));
  const add = async (params: object) => result<AddResult>(await call('index/add', params));

  beforeAll(async () => {
    client = await connect(transport, {
      config: { 'models.encoder': ENCODER, 'index.maxDocumentBytes': 4096, 'index.maxDocumentsPerAdd': 8 },
    });
    capabilities = result<{ capabilities: Record<string, unknown> }>(await client.exchange(INITIALIZE())).capabilities;
  });
  afterAll(() => client.close());

  it('§6 advertises index {writable, chunking, contextual} and, §6.2-prefixed, the document formats it reads', () => {
    expect(capabilities.index).toEqual({
      writable: true,
      chunking: true,
      contextual: true,
      'x-rcp-server-documents': [...DOCUMENT_MEDIA_TYPES],
    });
  });

  it('§7.10 returns ids in input order, minting ids for documents without one', async () => {
    const { ids, chunks } = await add({
      documents: [{ id: 'b', text: 'second' }, { text: 'minted' }, { id: 'a', text: 'first' }],
    });
    expect(ids[0]).toBe('b');
    expect(ids[1]).toMatch(/^[0-9a-f-]{36}$/);
    expect(ids[2]).toBe('a');
    expect(chunks).toBe(3);
  });

  it('§7.10 upserts by id: re-adding is observationally one write, and each write moves indexVersion on', async () => {
    const first = await add({ documents: [{ id: 'up', text: 'conformance upsert probe one' }] });
    const second = await add({ documents: [{ id: 'up', text: 'conformance upsert probe two' }] });
    expect(second.ids).toEqual(['up']);
    expect(Number(second.indexVersion)).toBe(Number(first.indexVersion) + 1);
    // §6.2: the version under the vendor prefix; the unprefixed name is deprecated, sent for one release.
    expect(second['x-rcp-server-indexVersion']).toBe(second.indexVersion);
  });

  it('§7.10 ids are compared exactly: "é" in NFC and in NFD are two documents, each answered with its own id', async () => {
    const nfc = 'caf\u00e9';
    const nfd = 'cafe\u0301';
    const { ids } = await add({
      documents: [
        { id: nfc, text: 'composed accent document' },
        { id: nfd, text: 'decomposed accent document' },
      ],
    });
    expect(ids).toEqual([nfc, nfd]);
    const deleted = result<{ deleted: number }>(await call('index/delete', { ids: [nfd] }));
    expect(deleted.deleted).toBe(1);
    // The NFC document is still there: deleting it removes one more.
    expect(result<{ deleted: number }>(await call('index/delete', { ids: [nfc] })).deleted).toBe(1);
  });

  it('§7.10 _meta.idempotencyKey: a repeat returns the original result and writes nothing', async () => {
    const params = {
      documents: [{ text: 'no id, so only the key protects it' }],
      _meta: { idempotencyKey: `key-${transport}` },
    };
    const first = await add(params);
    const repeat = await add(params);
    expect(repeat).toEqual(first);
  });

  it('§13.1 a write answered -32014 was not applied; retried with its idempotency key it is applied once', async () => {
    const { indexVersion: before } = await add({ documents: [{ id: 'probe', text: 'version probe' }] });
    const params = { documents: [{ text: 'id-less and timed out' }], _meta: { idempotencyKey: `late-${transport}` } };
    // A 1 ms deadline: most attempts time out before their commit; one that commits first is answered its result.
    let applied = 0;
    for (let i = 0; i < 3; i++) {
      const answer = await call('index/add', { ...params, _meta: { ...params._meta, deadlineMs: 1 } });
      if ((answer as Frame).error === undefined)
        applied = 1; // the key makes any later attempt a repeat
      else expect(error(answer).code).toBe(-32014);
    }
    // What the answers said is what happened: the next write's version counts the attempts that were applied.
    const { indexVersion: after } = await add({ documents: [{ id: 'probe', text: 'version probe again' }] });
    expect(Number(after)).toBe(Number(before) + applied + 1);
    const retried = await add(params);
    expect(Number(retried.indexVersion)).toBe(applied === 1 ? Number(before) + 1 : Number(after) + 1);
    expect(await add(params)).toEqual(retried);
  });

  it('§7.11 an id with a lone surrogate is -32602 on ids.N', async () => {
    expect(error(await call('index/delete', { ids: ['fine', '\ud83d'] })).data.field).toBe('ids.1');
  });

  it('§7.11 delete is idempotent: deleted counts only what this call removed', async () => {
    await add({ documents: [{ id: 'gone', text: 'to be deleted' }] });
    expect(result(await call('index/delete', { ids: ['gone', 'never-there'] }))).toMatchObject({ deleted: 1 });
    expect(result(await call('index/delete', { ids: ['gone'] }))).toMatchObject({ deleted: 0 });
  });

  it('chunk: true splits a long document and reports the chunk count', async () => {
    const text = Array.from({ length: 60 }, (_, i) => `Sentence ${i} talks about proteins in the blood of mice.`).join(
      ' ',
    );
    expect(text.length).toBeLessThan(4096);
    const { chunks } = await add({
      documents: [{ id: 'long', text, meta: { title: 'Mice' } }],
      chunk: true,
      contextual: true,
    });
    expect(chunks).toBeGreaterThan(2);
  });

  const half = { id: 'half', text: 'a good document beside a bad one' };
  it.each([
    ['a document without text', { documents: [half, { id: 'x', text: '  ' }] }, -32602, 'documents.1.text'],
    [
      'a text over index.maxDocumentBytes',
      { documents: [half, { id: 'x', text: 'y'.repeat(5000) }] },
      -32602,
      'documents.1.text',
    ],
    [
      'metadata of the wrong shape',
      { documents: [half, { id: 'x', text: 'x', meta: 'year=2020' }] },
      -32602,
      'documents.1.meta',
    ],
    ['a non-string id', { documents: [half, { id: 7, text: 'x' }] }, -32602, 'documents.1.id'],
    // Ill-formed UTF-16 could not be kept exactly (the store keeps UTF-8): refused, never changed silently.
    ['an id with a lone surrogate', { documents: [half, { id: 'a\ud800b', text: 'x' }] }, -32602, 'documents.1.id'],
    ['a text with a lone surrogate', { documents: [half, { id: 'x', text: 'x\udc00' }] }, -32602, 'documents.1.text'],
    ['a missing documents array', {}, -32602, 'documents'],
    [
      'more documents than index.maxDocumentsPerAdd',
      { documents: Array.from({ length: 9 }, () => half) },
      -32013,
      'documents',
    ],
  ])('bad input, %s: a precise error, and the corpus exactly as it was', async (_name, params, code, field) => {
    const before = await add({ documents: [{ id: 'probe', text: 'probe' }] });
    const failed = await call('index/add', params);
    expect(error(failed).code).toBe(code);
    expect(error(failed).data.field).toBe(field);
    // Nothing was committed: the next write is the very next version, and the good half of the batch is absent.
    const after = await add({ documents: [{ id: 'probe', text: 'probe' }] });
    expect(Number(after.indexVersion)).toBe(Number(before.indexVersion) + 1);
    expect(result(await call('index/delete', { ids: ['half'] }))).toMatchObject({ deleted: 0 });
  });
});

describe.each(TRANSPORTS)('a 50 MB text over %s', (transport) => {
  it('is -32602 on documents.0.text when the body limit admits it, and -32013 (body bytes) when it does not', async () => {
    const text = 'x'.repeat(50 * 1024 * 1024);
    const roomy = await connect(transport, {
      config: { 'models.encoder': ENCODER, 'limits.maxBodyBytes': 64 * 1024 * 1024 },
    });
    await roomy.exchange(INITIALIZE());
    const frame = await roomy.exchange(request(1, 'index/add', { documents: [{ id: 'big', text }] }));
    expect(error(frame)).toMatchObject({ code: -32602, data: { field: 'documents.0.text' } });
    await roomy.close();
    const strict = await connect(transport, { config: { 'models.encoder': ENCODER } });
    await strict.exchange(INITIALIZE());
    const refused = await strict.exchange(request(1, 'index/add', { documents: [{ id: 'big', text }] }));
    // In-process has no body to limit; the transports refuse the frame before it is parsed.
    expect(error(refused).code).toBe(transport === 'in-process' ? -32602 : -32013);
    await strict.close();
  });
});

describe('a read-only corpus (index.writable: false, §15.3)', () => {
  it('advertises writable: false and refuses writes with -32003', async () => {
    const client = await connect('in-process', { config: { 'models.encoder': ENCODER, 'index.writable': false } });
    const init = result<{ capabilities: { index: object } }>(await client.exchange(INITIALIZE()));
    expect(init.capabilities.index).toMatchObject({ writable: false });
    const frame = await client.exchange(request(1, 'index/add', { documents: [{ text: 'x' }] }));
    expect(error(frame).code).toBe(-32003);
    expect(error(await client.exchange(request(2, 'index/delete', { ids: ['x'] }))).code).toBe(-32003);
    await client.close();
  });
});
