import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, INITIALIZE, request, ROOT, TRANSPORTS, type Connection, type Frame } from '../helpers/wire.js';

/**
 * §7.7.2 units: `passage` (a chunk's best window of sentences for the query), `page` (the text between two page
 * breaks) beside `chunk` and `document`, each hit stating its unit and level; and every hit's quote, the sentence
 * that best answers the query (`citation["x-rcp-server-quote"]`, §6.2), over each transport.
 */
const PAGES = [
  'Ponds are small bodies of still water. Frogs lay their eggs in spring. The tadpoles hatch within two weeks.',
  'Dragonflies hunt over the water at noon. Their larvae live in the mud for years. Herons wade at the edge.',
  'Duckweed covers the surface in summer. It shades the water below. Algae then grow more slowly.',
];
const POND = PAGES.join('\n\f\n');
const NOTE = 'Owls hunt at night. They see well in the dark. Mice are their usual prey.';

interface Hit {
  id: string;
  unit: string;
  level: number;
  text: string;
  citation: {
    start: number;
    end: number;
    page?: number;
    'x-rcp-server-quote'?: { text: string; start: number; end: number };
  };
  chunk: { docId: string; index: number };
}
type Answer = { hits: Hit[]; indexVersion: string; usage: { tokens?: number } };

describe.each(TRANSPORTS)('§7.7.2 units and quotes over %s', (transport) => {
  let client: Connection;
  let capabilities: { retrieve: { units: string[] } };
  let id = 0;
  const retrieve = async (params: object): Promise<Answer> => {
    const frame = (await client.exchange(request(++id, 'retrieve', { k: 3, mode: 'sparse', ...params }))) as Frame;
    expect(frame.error, JSON.stringify(frame.error)).toBeUndefined();
    return frame.result as Answer;
  };
  const add = (documents: object[]) =>
    client.exchange(request(++id, 'index/add', { documents, chunk: true })) as Promise<Frame>;

  beforeAll(async () => {
    client = await connect(transport, { config: { 'models.encoder': `${ROOT}/models/use-lite` } });
    capabilities = ((await client.exchange(INITIALIZE())) as { result: { capabilities: typeof capabilities } }).result
      .capabilities;
    await add([
      { id: 'pond', text: POND },
      { id: 'note', text: NOTE },
    ]);
  });
  afterAll(() => client.close());

  it('advertises chunk, passage, page and document', () => {
    expect(capabilities.retrieve.units).toEqual(['chunk', 'passage', 'page', 'document']);
  });

  it('a page hit is the text of its page, named doc#pN, cited on that page at level 0', async () => {
    const [hit] = (await retrieve({ query: 'dragonfly larvae', unit: 'page' })).hits;
    expect(hit).toMatchObject({ id: 'pond#p2', unit: 'page', level: 0, text: PAGES[1], citation: { page: 2 } });
    expect(POND.slice(hit!.citation.start, hit!.citation.end)).toBe(PAGES[1]);
  });

  it('a document stored whole (one chunk over every page): the page hit is the page the match is on', async () => {
    await client.exchange(
      request(++id, 'index/add', { documents: [{ id: 'whole', text: POND.replace(/Duckweed/, 'Quillwort') }] }),
    );
    const [hit] = (await retrieve({ query: 'quillwort', unit: 'page', filter: undefined })).hits;
    expect(hit).toMatchObject({ id: 'whole#p3', unit: 'page', citation: { page: 3 } });
    expect(hit!.text).toContain('Quillwort covers the surface');
    const quote = hit!.citation['x-rcp-server-quote']!;
    expect(quote.start).toBeGreaterThanOrEqual(hit!.citation.start);
    expect(quote.end).toBeLessThanOrEqual(hit!.citation.end);
  });

  it('a page 1 hit of a paginated document cites page 1', async () => {
    const [hit] = (await retrieve({ query: 'tadpoles hatch', unit: 'page' })).hits;
    expect(hit).toMatchObject({ id: 'pond#p1', citation: { page: 1 } });
  });

  it('one hit per page, and a document without breaks is one page', async () => {
    const { hits } = await retrieve({ query: 'water owls', unit: 'page', k: 10 });
    const ids = hits.map((hit) => hit.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(hits.find((hit) => hit.chunk.docId === 'note')).toMatchObject({ id: 'note#p1', text: NOTE });
  });

  it('a passage is the window of sentences that answers, a verbatim slice named by its offsets', async () => {
    const [hit] = (await retrieve({ query: 'when do tadpoles hatch', unit: 'passage' })).hits;
    const { start, end } = hit!.citation;
    expect(hit).toMatchObject({ unit: 'passage', level: 0, id: `pond#${hit!.chunk.index}:${start}-${end}` });
    expect(POND.slice(start, end)).toBe(hit!.text);
    expect(hit!.text).toContain('The tadpoles hatch within two weeks.');
    expect(hit!.text.length).toBeLessThan(PAGES[0]!.length + 1);
  });

  it('every hit quotes the sentence that best answers, with its offsets in the document', async () => {
    for (const unit of ['chunk', 'passage', 'page', 'document']) {
      const [hit] = (await retrieve({ query: 'herons wading', unit })).hits;
      const quote = hit!.citation['x-rcp-server-quote']!;
      expect(quote.text, unit).toBe('Herons wade at the edge.');
      expect(POND.slice(quote.start, quote.end)).toBe(quote.text);
    }
  });

  it('no quote where no sentence holds a query term (a dense match)', async () => {
    const { hits } = await retrieve({ query: 'zzzz nocturnal raptor', mode: 'dense', k: 1 });
    expect(hits[0]?.citation['x-rcp-server-quote']).toBeUndefined();
  });

  it('§7.7.2 tokenBudget counts a passage, not its chunk', async () => {
    const chunk = await retrieve({ query: 'tadpoles', k: 1, tokenBudget: 1000 });
    const passage = await retrieve({ query: 'tadpoles', k: 1, tokenBudget: 1000, unit: 'passage' });
    expect(passage.usage.tokens).toBeLessThanOrEqual(chunk.usage.tokens!);
  });

  it('§7.7.3 a session does not return a chunk again as another passage', async () => {
    const first = await retrieve({ query: 'frogs eggs spring', unit: 'passage', k: 1, sessionId: 's' });
    const second = await retrieve({ query: 'frogs eggs spring', unit: 'passage', k: 1, sessionId: 's' });
    expect(second.hits.map((hit) => hit.chunk)).not.toContainEqual(first.hits[0]!.chunk);
  });

  it('§7.7.1 a pinned version quotes alike after later writes', async () => {
    const before = await retrieve({ query: 'duckweed shades the water', unit: 'passage' });
    await add([{ id: 'more', text: 'Water water water. Shade and duckweed everywhere. Water again.' }]);
    const pinned = await retrieve({
      query: 'duckweed shades the water',
      unit: 'passage',
      indexVersion: before.indexVersion,
    });
    expect(pinned.hits).toEqual(before.hits);
  });
});

describe('retrieve.quotes off', () => {
  it('hits carry no quote, and a passage is still the window that answers', async () => {
    const client = await connect('in-process', {
      config: { 'models.encoder': `${ROOT}/models/use-lite`, 'retrieve.quotes': false },
    });
    try {
      await client.exchange(INITIALIZE());
      await client.exchange(request(1, 'index/add', { documents: [{ id: 'pond', text: POND }], chunk: true }));
      for (const unit of ['chunk', 'passage']) {
        const frame = (await client.exchange(request(2, 'retrieve', { query: 'herons wading', k: 1, unit }))) as Frame;
        const [hit] = (frame.result as Answer).hits;
        expect(hit!.citation['x-rcp-server-quote'], unit).toBeUndefined();
        if (unit === 'passage') expect(hit!.text).toContain('Herons wade at the edge.');
      }
    } finally {
      await client.close();
    }
  });
});
