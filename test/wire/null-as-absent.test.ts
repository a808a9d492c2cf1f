import type { TSchema } from '@sinclair/typebox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RequestMeta } from '../../src/protocol/context.js';
import { isCoreMethod } from '../../src/protocol/method-table.js';
import type { MethodRegistry } from '../../src/protocol/registry.js';
import {
  BASES,
  CONFIG,
  optionalPaths,
  paramsSchema,
  servedMethods,
  servedRegistry,
  type Params,
  type Path,
} from '../helpers/optional-params.js';
import { connect, INITIALIZE, request, type Connection, type Frame } from '../helpers/wire.js';

/**
 * §4.6 Absent vs null: "an explicit null is only meaningful where a schema lists null as a permitted type; elsewhere a
 * peer MUST treat null as absent". For every method and every optional member of its params — at any depth, read from
 * the method's own schema, so a new param is covered as soon as it is declared — a request with that member null gets
 * the same answer as the request without it.
 */
const DOCUMENTS = [
  { id: 'heart', text: 'The heart pumps blood through the body.', meta: { lang: 'en' } },
  { id: 'lungs', text: 'The lungs move oxygen into the blood.', meta: { lang: 'en' } },
  { id: 'stars', text: 'Stars form in clouds of gas and dust.', meta: { lang: 'de' } },
];

/** §7.2 `info`, §7.11 `index/delete` and §7.12 `shutdown` have no optional param but `_meta` (§4.4). */
const NO_OPTIONAL_PARAMS = new Set(['info', 'index/delete', 'shutdown']);

/** Answered once per session (§13): each of their requests goes to a fresh connection. */
const ONCE_PER_SESSION = new Set(['initialize', 'shutdown']);

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
    if (['latencyMs', 'indexVersion', 'x-rcp-server-indexVersion', 'session'].includes(key)) return undefined;
    return typeof value === 'string' && uuid.test(value) ? '<minted id>' : value;
  });
}

describe.each(['in-process', 'http'] as const)('§4.6 null is absent over %s', (transport) => {
  let client: Connection;
  let registry: MethodRegistry | undefined;
  let next = 0;

  beforeAll(async () => {
    // The same configuration registers the same methods: read their schemas from a registry built alike.
    registry = await servedRegistry();
    client = await connect(transport, { config: CONFIG });
    await client.exchange(INITIALIZE());
    await client.exchange(request('seed', 'index/add', { documents: DOCUMENTS }));
  });
  afterAll(() => client.close());

  const schemaOf = (method: string): TSchema => paramsSchema(registry!, method);

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
    const served = servedMethods(registry!).filter(isCoreMethod);
    expect(Object.keys(BASES).sort()).toEqual([...new Set(served)].sort());
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
