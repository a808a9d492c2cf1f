import { beforeAll, describe, expect, it } from 'vitest';
import { RpcErrorCode } from '../../src/protocol/codes.js';
import type { MethodRegistry } from '../../src/protocol/registry.js';
import { BASES, optionalPaths, paramsSchema, servedRegistry } from '../helpers/optional-params.js';
import { ajv, normative, ref } from './normative.js';

/**
 * What the server declares, against the normative schema: its error code table (§12) and, for each method it serves,
 * every optional param the normative schema gives that method — each of which the §4.6 null-as-absent test tries.
 */
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

/** The normative schema's optional params of `definition` that reject null (`_meta` is §4.4's, tried apart). */
function normativeOptional(definition: string): string[] {
  const params = normative.$defs[definition] as { properties: Record<string, unknown>; required?: string[] };
  return Object.keys(params.properties).filter(
    (key) =>
      key !== '_meta' &&
      !(params.required ?? []).includes(key) &&
      !ajv.validate({ $ref: `${ref(definition).$ref}/properties/${key}` }, null),
  );
}

describe('the server against rcp-1.0.json', () => {
  let registry: MethodRegistry;
  beforeAll(async () => {
    registry = await servedRegistry();
  });

  it('§12 the code table equals the normative ErrorCode enum', () => {
    const codes = normative.$defs.ErrorCode!.anyOf as { enum?: number[] }[];
    expect([...Object.values(RpcErrorCode)].sort()).toEqual([...(codes[0]?.enum ?? [])].sort());
  });

  it.each(Object.entries(NORMATIVE_PARAMS))('§4.6 %s: every optional param of %s is tried as null', (method, def) => {
    const tried = BASES[method]!.flatMap((base) => [...optionalPaths(paramsSchema(registry, method), base)]);
    const topLevel = new Set(tried.filter((path) => path.length === 1).map(([key]) => key));
    const optional = normativeOptional(def);
    expect(optional.filter((key) => !topLevel.has(key))).toEqual([]);
  });
});
