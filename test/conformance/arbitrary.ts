import fc from 'fast-check';

/**
 * Values shaped by a JSON Schema, for comparing two schemas on the same sample: each object holds its required
 * members and a random subset of its optional ones, each union a random branch. Constraints that only narrow
 * (`not`, `if`/`then`, `anyOf` of `required` lists beside `properties`) are left to the mutations to probe.
 */
type Schema = Record<string, unknown>;
const MAX_DEPTH = 6;

const SAMPLE_STRINGS = ['', 'a', 'owl', 'https://example.com/a', 'AAAAAA=='];

export function arbitraryOf(schema: Schema, root: Schema, depth = 0): fc.Arbitrary<unknown> {
  const ref = schema.$ref;
  if (typeof ref === 'string') return arbitraryOf(resolveRef(ref, root), root, depth);
  if ('const' in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  const types = [schema.type ?? []].flat() as string[];
  const branches = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  if (types.length === 0 && schema.properties === undefined) {
    if (branches !== undefined) return fc.oneof(...branches.map((branch) => arbitraryOf(branch, root, depth)));
    return fc.jsonValue({ maxDepth: 1 });
  }
  const kinds = types.length > 0 ? types : ['object'];
  return fc.oneof(...kinds.map((type) => ofType(type, schema, root, depth)));
}

function ofType(type: string, schema: Schema, root: Schema, depth: number): fc.Arbitrary<unknown> {
  const min = schema.minimum as number | undefined;
  const max = schema.maximum as number | undefined;
  switch (type) {
    case 'string':
      return schema.format === 'uri'
        ? fc.constantFrom('https://example.com/page-3.png', 'file:///clip.wav')
        : fc.oneof(fc.constantFrom(...SAMPLE_STRINGS), fc.string({ maxLength: 8 }));
    case 'integer':
      return fc.oneof(edges(min, max), fc.integer({ min: min ?? -1000, max: max ?? 1000 }));
    case 'number':
      return fc.oneof(edges(min, max), fc.double({ min: min ?? -1000, max: max ?? 1000, noNaN: true }));
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      const items = schema.items as Schema | undefined;
      const item = items === undefined || depth >= MAX_DEPTH ? fc.integer() : arbitraryOf(items, root, depth + 1);
      const minLength = (schema.minItems as number | undefined) ?? 0;
      return fc.array(item, { minLength, maxLength: Math.max(minLength, 2) });
    }
    default:
      return objectOf(schema, root, depth);
  }
}

/** A bound, its neighbours either side and a fraction: where two schemas' ranges would part. */
function edges(min: number | undefined, max: number | undefined): fc.Arbitrary<number> {
  const around = (bound: number | undefined) =>
    bound === undefined ? [] : [bound - 1, bound - 0.5, bound, bound + 0.5];
  return fc.constantFrom(0, 1, -1, 0.5, ...around(min), ...around(max), ...(max === undefined ? [] : [max + 1]));
}

function objectOf(schema: Schema, root: Schema, depth: number): fc.Arbitrary<unknown> {
  const properties = Object.entries((schema.properties ?? {}) as Record<string, Schema>).filter(
    // `not: {}` marks a member that must be absent.
    ([, member]) => !isEmptyObject(member.not),
  );
  if (depth >= MAX_DEPTH) return fc.constant({});
  const required = new Set((schema.required ?? []) as string[]);
  const members = Object.fromEntries(properties.map(([key, member]) => [key, arbitraryOf(member, root, depth + 1)]));
  const known = fc.record(members, { requiredKeys: properties.map(([key]) => key).filter((key) => required.has(key)) });
  const extra = schema.additionalProperties;
  if (typeof extra !== 'object' || extra === null) return known;
  const open = fc.dictionary(
    fc.constantFrom('dense', 'sparse', 'x-acme'),
    arbitraryOf(extra as Schema, root, depth + 1),
    {
      maxKeys: 2,
    },
  );
  return fc.tuple(known, open).map(([fixed, more]) => ({ ...more, ...(fixed as object) }));
}

function resolveRef(ref: string, root: Schema): Schema {
  const name = /#\/\$defs\/(.+)$/.exec(ref)?.[1];
  const target = name === undefined ? undefined : (root.$defs as Record<string, Schema> | undefined)?.[name];
  if (target === undefined) throw new Error(`cannot resolve ${ref}`);
  return target;
}

const isEmptyObject = (value: unknown) =>
  typeof value === 'object' && value !== null && Object.keys(value).length === 0;

type Path = (string | number)[];

/** Every member path in `value` (object keys and array indices, at any depth), the root included as []. */
export function pathsIn(value: unknown, at: Path = []): Path[] {
  const here: Path[] = [at];
  if (Array.isArray(value)) return here.concat(...value.map((item, i) => pathsIn(item, [...at, i])));
  if (typeof value === 'object' && value !== null) {
    return here.concat(...Object.entries(value).map(([key, member]) => pathsIn(member, [...at, key])));
  }
  return here;
}

/** Values put in place of a member: every JSON type, edge numbers, and words of the spec's vocabularies. */
export const REPLACEMENTS: readonly unknown[] = [
  null,
  true,
  false,
  0,
  -1,
  1,
  1.5,
  -0.5,
  2,
  '',
  'owl',
  'not a uri',
  'https://example.com/a',
  'json',
  'f32-base64',
  'text',
  'image',
  'hybrid',
  'chunk',
  'trusted',
  'debug',
  'notice',
  [],
  [1],
  ['a'],
  [[0.5]],
  {},
  { a: 1 },
  { type: 'text', text: 't' },
  { type: 'image', mimeType: 'image/png', data: 'AA==', uri: 'https://example.com/a' },
];

/** Member names added to objects: unknown ones (§4.6), `_meta` (§4.4), and the envelope's own. */
export const ADDED_KEYS = ['x-acme', 'extra', '_meta', 'id', 'result', 'error', 'jsonrpc', 'params'] as const;

export type Mutation =
  | { op: 'delete'; path: number }
  | { op: 'replace'; path: number; value: number }
  | { op: 'add'; path: number; key: number; value: number };

export const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ op: fc.constant('delete' as const), path: fc.nat() }),
  fc.record({ op: fc.constant('replace' as const), path: fc.nat(), value: fc.nat(REPLACEMENTS.length - 1) }),
  fc.record({
    op: fc.constant('add' as const),
    path: fc.nat(),
    key: fc.nat(ADDED_KEYS.length - 1),
    value: fc.nat(REPLACEMENTS.length - 1),
  }),
);

/**
 * `value` with `change` applied at one of its paths (chosen modulo their count). `fixed` paths are never deleted or
 * replaced: what tells one kind of frame from another is not what the comparison is about.
 */
export function mutate(value: unknown, change: Mutation, fixed: (path: Path) => boolean): unknown {
  const copy = structuredClone(value);
  const paths = pathsIn(copy);
  const path = paths[change.path % paths.length]!;
  if (change.op === 'add') {
    const target = at(copy, path);
    const added = structuredClone(REPLACEMENTS[change.value]);
    if (Array.isArray(target)) target.push(added);
    else if (typeof target === 'object' && target !== null)
      (target as Record<string, unknown>)[ADDED_KEYS[change.key]!] = added;
    return copy;
  }
  if (path.length === 0 || fixed(path)) return copy;
  const parent = at(copy, path.slice(0, -1)) as Record<string | number, unknown>;
  const key = path.at(-1)!;
  if (change.op === 'replace') parent[key] = structuredClone(REPLACEMENTS[change.value]);
  else if (Array.isArray(parent)) parent.splice(key as number, 1);
  else delete parent[key];
  return copy;
}

function at(value: unknown, path: Path): unknown {
  return path.reduce<unknown>((node, key) => (node as Record<string | number, unknown>)[key], value);
}
