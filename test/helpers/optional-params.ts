import { Type, type TSchema } from '@sinclair/typebox';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { createApp } from '../../src/app.js';
import { InitializeParams, PingParams } from '../../src/protocol/lifecycle.js';
import { isJsonObject } from '../../src/protocol/messages.js';
import type { MethodRegistry } from '../../src/protocol/registry.js';
import { ROOT, testConfig } from './wire.js';

/**
 * The optional params of every RCP method this server serves, read from its own params schemas (§4.6 null-as-absent
 * tries each; the conformance suite checks they include every optional param of the normative schema).
 */
export const CONFIG = {
  'models.encoder': `${ROOT}/models/use-lite`,
  'index.fields': { lang: 'keyword' },
};

export type Params = Record<string, unknown>;

/**
 * Per method, requests holding every nested object its schema declares (a union's object and array forms each), so
 * that the optional members inside them are enumerated too.
 */
export const BASES: Record<string, Params[]> = {
  initialize: [{ protocolVersion: 1, client: { name: 'absent-test', version: '1' }, capabilities: {} }],
  info: [{}],
  ping: [{ nonce: 'n' }],
  shutdown: [{}],
  embed: [{ inputs: ['heart', { type: 'text', text: 'blood' }], kind: 'query' }],
  'embed/sparse': [{ texts: ['heart', { type: 'text', text: 'blood' }] }],
  'embed/multi': [{ inputs: ['heart', { type: 'text', text: 'blood' }], kind: 'query' }],
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

/** The methods the session serves itself, with their params as the spec gives them (§7.2, §7.12: `{}`). */
const SESSION_METHODS: Record<string, TSchema> = {
  initialize: InitializeParams,
  info: Type.Object({}),
  ping: PingParams,
  shutdown: Type.Object({}),
};

/** A registry built as a server with CONFIG builds its own: the methods it serves and their params schemas. */
export async function servedRegistry(): Promise<MethodRegistry> {
  let registry: MethodRegistry | undefined;
  const app = createApp(testConfig(CONFIG), { register: (built) => void (registry = built) });
  await app.close();
  return registry!;
}

/** The params schema of `method`, served by the session itself or registered. */
export function paramsSchema(registry: MethodRegistry, method: string): TSchema {
  return SESSION_METHODS[method] ?? registry.get(method)!.params;
}

/** Every method the server serves, the session's own and the registered ones. */
export function servedMethods(registry: MethodRegistry): string[] {
  return [...Object.keys(SESSION_METHODS), ...registry.methods().map((m) => m.method)];
}

const ajv = new Ajv2020({ strict: false, allowUnionTypes: true });
const admitsNull = (schema: TSchema): boolean => ajv.validate(schema, null);

export type Path = (string | number)[];

/**
 * Every optional member whose schema rejects null, in `value` and every object it holds: a union is followed into the
 * alternatives `value` matches, an array into each of its elements, a record into each of its entries.
 */
export function* optionalPaths(schema: TSchema, value: unknown, at: Path = []): Generator<Path> {
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
  if (!isJsonObject(value)) return;
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
