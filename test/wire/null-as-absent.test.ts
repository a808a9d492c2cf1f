import { Type, type TSchema } from '@sinclair/typebox';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { RequestMeta } from '../../src/protocol/context.js';
import { InitializeParams, PingParams } from '../../src/protocol/lifecycle.js';
import { isCoreMethod } from '../../src/protocol/method-table.js';
import type { MethodRegistry } from '../../src/protocol/registry.js';
import { schema as normative } from '../helpers/schema.js';
import { connect, INITIALIZE, request, ROOT, testConfig, type Connection, type Frame } from '../helpers/wire.js';

/**
 * §4.6 Absent vs null: "an explicit null is only meaningful where a schema lists null as a permitted type; elsewhere a
 * peer MUST treat null as absent". For every method and every optional member of its params — at any depth, read from
 * the method's own schema, so a new param is covered as soon as it is declared — a request with that member null gets
 * the same answer as the request without it.
 */
const CONFIG = {
  'models.encoder': `${ROOT}/models/use-lite`,
  'index.fields': { lang: 'keyword' },
};
const DOCUMENTS = [
  { id: 'heart', text: 'The heart pumps blood through the body.', meta: { lang: 'en' } },
  { id: 'lungs', text: 'The lungs move oxygen into the blood.', meta: { lang: 'en' } },
  { id: 'stars', text: 'Stars form in clouds of gas and dust.', meta: { lang: 'de' } },
];

type Params = Record<string, unknown>;

/**
 * Per method, requests holding every nested object its schema declares (a union's object and array forms each), so
 * that the optional members inside them are enumerated too.
 */
const BASES: Record<string, Params[]> = {
  initialize: [{ protocolVersion: 1, client: { name: 'absent-test', version: '1' }, capabilities: {} }],
  info: [{}],
  ping: [{ nonce: 'n' }],
  shutdown: [{}],
  embed: [{ inputs: ['heart', { type: 'text', text: 'blood' }], kind: 'query' }],
  'embed/sparse': [{ texts: ['heart', { type: 'text', text: 'blood' }] }],
  rerank: [
    { query: 'heart', passages: ['The heart pumps blood.', { type: 'text', text: 'Stars form.' }], topN: 2 },
    { query: { type: 'text', text: 'heart' }, documents: ['The heart pumps blood.'] },
    { query: [{ type: 'text', text: 'heart' }], passages: ['The heart pumps blood.'] },
  ],
  retrieve: [
    {
      query: 'heart blood',
      k: 2,
      fusion: { method: 'weighted', weights: { dense: 1, sparse: 0.5 } },
      rerank: { method: 'colbert', topN: 3 },
      mmr: { lambda: 0.5 },
    },
    { query: { type: 'text', text: 'heart' }, k: 1, filter: { field: 'lang', op: 'eq', value: 'en' } },
    { query: [{ type: 'text', text: 'heart' }], k: 1, rerank: false },
  ],
  'query/transform': [{ query: 'heart blood', method: 'multi-query', n: 2 }],
  'index/add': [{ documents: [{ id: 'added', text: 'The heart beats.', meta: { lang: 'en' } }], chunk: true }],
  'index/delete': [{ ids: ['no-such-document'] }],
  feedback: [{ query: 'heart', signals: [{ hitId: 'heart#0', used: true }] }],
};

/** §7.2 `info`, §7.11 `index/delete` and §7.12 `shutdown` have no optional param but `_meta` (§4.4). */
const NO_OPTIONAL_PARAMS = new Set(['info', 'index/delete', 'shutdown']);

/** The methods the session serves itself, with their params as the spec gives them (§7.2, §7.12: `{}`). */
const SESSION_METHODS: Record<string, TSchema> = {
  initialize: InitializeParams,
  info: Type.Object({}),
  ping: PingParams,
  shutdown: Type.Object({}),
};

/** Answered once per session (§13): each of their requests goes to a fresh connection. */
const ONCE_PER_SESSION = new Set(['initialize', 'shutdown']);

/** Each method's params in the normative schema (rcp-1.0.json), whose optional members the server's must include. */
const NORMATIVE_PARAMS: Record<string, string> = {
  initialize: 'InitializeParams',
  ping: 'PingParams',
  embed: 'EmbedParams',
  rerank: 'RerankParams',
  retrieve: 'RetrieveParams',
  'query/transform': 'TransformParams',
  'index/add': 'IndexAddParams',
  'index/delete': 'IndexDeleteParams',
  feedback: 'FeedbackParams',
};

const ajv = new Ajv2020({ strict: false, allowUnionTypes: true });
ajv.addSchema(normative);
const admitsNull = (schema: TSchema): boolean => ajv.validate(schema, null);

/** The normative schema's optional params of `definition` that reject null (`_meta` is §4.4's, tried apart). */
function normativeOptional(definition: string): string[] {
  const params = normative.$defs[definition] as { properties: Record<string, unknown>; required?: string[] };
  const at = (key: string) => ({ $ref: `${normative.$id}#/$defs/${definition}/properties/${key}` });
  return Object.keys(params.properties).filter(
    (key) => key !== '_meta' && !(params.required ?? []).includes(key) && !ajv.validate(at(key), null),
  );
}
const isObject = (value: unknown): value is Params =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

type Path = (string | number)[];

/**
 * Every optional member whose schema rejects null, in `value` and every object it holds: a union is followed into the
 * alternatives `value` matches, an array into each of its elements, a record into each of its entries.
 */
function* optionalPaths(schema: TSchema, value: unknown, at: Path = []): Generator<Path> {
  const alternatives = (schema.anyOf ?? schema.oneOf) as TSchema[] | undefined;
  if (alternatives !== undefined) {
    for (const alternative of alternatives.filter((branch) => ajv.validate(branch, value))) {
      yield* optionalPaths(alternative, value, at);
    }
    return;
  }
  if (Array.isArray(value) && schema.items !== undefined) {
    for (const [i, item] of value.entries()) yield* optionalPaths(schema.items as TSchema, item, [...at, i]);
  }
  if (!isObject(value)) return;
  const properties = (schema.properties ?? {}) as Record<string, TSchema>;
  const required = (schema.required ?? []) as string[];
  for (const [key, member] of Object.entries(properties)) {
    if (!required.includes(key) && !admitsNull(member)) yield [...at, key];
    if (key in value) yield* optionalPaths(member, value[key], [...at, key]);
  }
  const patterns = Object.entries((schema.patternProperties ?? {}) as Record<string, TSchema>);
  for (const key of Object.keys(value).filter((name) => !(name in properties))) {
    for (const [, member] of patterns.filter(([pattern]) => new RegExp(pattern, 'u').test(key))) {
      if (!admitsNull(member)) yield [...at, key];
      yield* optionalPaths(member, value[key], [...at, key]);
    }
  }
}

/** The paths of a method's params, then `_meta` and each `_meta` key the server reads (§4.4). */
function pathsOf(schema: TSchema, bases: readonly Params[]): { base: Params; path: Path }[] {
  const own = bases.flatMap((base) => [...optionalPaths(schema, base)].map((path) => ({ base, path })));
  const meta = [['_meta'], ...[...optionalPaths(RequestMeta, {})].map((path) => ['_meta', ...path])];
  return [...own, ...meta.map((path) => ({ base: bases[0]!, path }))];
}

/** The request with the member at `path` null, and the same request without it (its containers kept). */
function pair(base: Params, path: Path): [Params, Params] {
  const [withNull, without] = [structuredClone(base), structuredClone(base)];
  const last = path.at(-1)!;
  parentOf(withNull, path)[last] = null;
  delete parentOf(without, path)[last];
  return [withNull, without];
}

/** The object holding the member at `path`, made (empty) where the request has none yet (`_meta`). */
function parentOf(params: Params, path: Path): Record<string | number, unknown> {
  let node = params as Record<string | number, unknown>;
  for (const key of path.slice(0, -1)) node = (node[key] ??= {}) as Record<string | number, unknown>;
  return node;
}

/** What an answer says, less what differs between any two calls: its id, timings, write counters, minted ids. */
function meaning(frame: Frame): string {
  const rest = { ...frame, id: undefined };
  const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
  return JSON.stringify(rest, (key, value: unknown) => {
    if (key === 'latencyMs' || key === 'indexVersion' || key === 'session') return undefined;
    return typeof value === 'string' && uuid.test(value) ? '<minted id>' : value;
  });
}

describe.each(['in-process', 'http'] as const)('§4.6 null is absent over %s', (transport) => {
  let client: Connection;
  let registry: MethodRegistry | undefined;
  let next = 0;

  beforeAll(async () => {
    // The same configuration registers the same methods: read their schemas from a registry built alike.
    const app = createApp(testConfig(CONFIG), { register: (built) => void (registry = built) });
    await app.close();
    client = await connect(transport, { config: CONFIG });
    await client.exchange(INITIALIZE());
    await client.exchange(request('seed', 'index/add', { documents: DOCUMENTS }));
  });
  afterAll(() => client.close());

  const schemaOf = (method: string): TSchema => SESSION_METHODS[method] ?? registry!.get(method)!.params;

  const answer = async (method: string, params: Params): Promise<string> => {
    if (!ONCE_PER_SESSION.has(method)) {
      return meaning((await client.exchange(request(++next, method, params))) as Frame);
    }
    const fresh = await connect(transport);
    try {
      return meaning((await fresh.exchange(request(++next, method, params))) as Frame);
    } finally {
      await fresh.close();
    }
  };

  it('covers every RCP method the server serves, and only those', () => {
    const served = [...Object.keys(SESSION_METHODS), ...registry!.methods().map((m) => m.method)].filter(isCoreMethod);
    expect(Object.keys(BASES).sort()).toEqual([...new Set(served)].sort());
  });

  it.each(Object.entries(NORMATIVE_PARAMS))('%s: every optional param of %s is among those tried', (method, def) => {
    const tried = BASES[method]!.flatMap((base) => [...optionalPaths(schemaOf(method), base)]);
    const topLevel = new Set(tried.filter((path) => path.length === 1).map(([key]) => key));
    expect(normativeOptional(def).filter((key) => !topLevel.has(key))).toEqual([]);
  });

  it.each(Object.keys(BASES))('%s: each optional member null is answered as if absent', async (method) => {
    const schema = schemaOf(method);
    const own = BASES[method]!.flatMap((base) => [...optionalPaths(schema, base)]);
    // A method with optional params must have them found; one without must not (a declared param would need a base).
    if (NO_OPTIONAL_PARAMS.has(method)) expect(own).toEqual([]);
    else expect(own.length).toBeGreaterThan(0);
    for (const { base, path } of pathsOf(schema, BASES[method]!)) {
      const [withNull, without] = pair(base, path);
      const expected = await answer(method, without);
      expect.soft(await answer(method, withNull), `${method} ${path.join('.')}: null`).toBe(expected);
    }
  });

  it('a required member null is still -32602 (§12)', async () => {
    const answered = JSON.parse(await answer('retrieve', { query: 'heart', k: null })) as Frame;
    expect(answered).toMatchObject({ error: { code: -32602, data: { field: 'k' } } });
  });
});
