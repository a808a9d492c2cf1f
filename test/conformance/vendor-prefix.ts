import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { normative } from './normative.js';

/**
 * §6.2: a field this server emits that the spec does not define carries the `x-` vendor prefix. The check is the
 * normative schema closed: every object schema that lists its `properties` (and leaves the rest open) is made to
 * refuse any other name but `x-…` and `_meta`. Objects the spec leaves free (`meta`, `scores`, `_meta`) stay free,
 * and conditionals are left open, since closing them would change which branch applies.
 */
type Node = Record<string, unknown>;

/** Conditional schemas: `if` and `not` are kept as written; `then` and `else` add to the object beside them. */
const KEPT = new Set(['if', 'not']);
const PARTIAL = new Set(['then', 'else']);

function close(node: unknown, partial = false): unknown {
  if (Array.isArray(node)) return node.map((item) => close(item));
  if (typeof node !== 'object' || node === null) return node;
  const copy: Node = {};
  for (const [key, value] of Object.entries(node as Node)) {
    if (KEPT.has(key)) copy[key] = value;
    else if (key === 'properties') copy[key] = closeEach(value as Node);
    else copy[key] = close(value, PARTIAL.has(key));
  }
  if (!partial && 'properties' in copy && !('additionalProperties' in copy) && !('patternProperties' in copy)) {
    copy.patternProperties = { '^(x-|_meta$)': true };
    copy.additionalProperties = false;
  }
  return copy;
}

function closeEach(properties: Node): Node {
  return Object.fromEntries(Object.entries(properties).map(([name, schema]) => [name, close(schema)]));
}

const closed = close(normative) as Node; // its own ajv below, so it keeps the normative $id
const ajv = new Ajv2020({ allErrors: true, strict: false, allowUnionTypes: true });
addFormats.default(ajv);
ajv.addSchema(closed);
const validateRoot = ajv.getSchema(closed.$id as string)!;
const validateResultFor = ajv.compile({ $ref: `${closed.$id as string}#/$defs/ResultFor` });

/**
 * Names outside the spec's schema that the spec's own prose defines, by where they sit (`method:path`, `*` for any
 * method or array index): they are core, not vendor names. `embed.encodings` is §7.3.1's (in a session's
 * capabilities and in a catalog's engines'); `usage` on a rerank result is §17.2's.
 */
const SPEC_PROSE = new Set([
  'initialize:/result/capabilities/embed/encodings',
  'info:/result/capabilities/embed/encodings',
  'catalog/list:/result/engines/*/capabilities/embed/encodings',
  'rerank:/result/usage',
]);

/**
 * Names this server emitted before it carried the prefix, still emitted beside their `x-` name for one release
 * (docs/protocol.md, "Deprecated names") because clients read them: the upstream harness reads rerank `results`,
 * clients pin retrieve to a write's `indexVersion`, and the gateway's write errors name what was applied.
 */
export const DEPRECATED = new Set([
  'rerank:/result/results',
  'index/add:/result/indexVersion',
  'index/delete:/result/indexVersion',
  '*:/error/data/engine',
  '*:/error/data/applied',
  '*:/error/data/failed',
]);

/**
 * A frame that breaks the closed schema fails the root's `oneOf` in every branch, and the branches it is not (a
 * success frame checked as an error frame) name the envelope's own members: those are not the frame's fault.
 */
const ENVELOPE = new Set(['/jsonrpc', '/id', '/method', '/params', '/result', '/error']);

/** Whether `where` (`method:path`) is a name the spec's prose defines or a deprecated one. */
function allowed(method: string, path: string): boolean {
  const general = path.replace(/\/\d+(?=\/|$)/g, '/*');
  return [`${method}:${general}`, `*:${general}`].some((key) => SPEC_PROSE.has(key) || DEPRECATED.has(key));
}

/** The unprefixed names outside the spec in `frame` (answering `method` when known), as `method:path`. */
export function unprefixedFields(frame: unknown, method?: string): string[] {
  const found = new Set<string>();
  const collect = (errors: typeof validateRoot.errors) => {
    for (const error of errors ?? []) {
      if (error.keyword !== 'additionalProperties') continue;
      const name = (error.params as { additionalProperty: string }).additionalProperty;
      const path = `${error.instancePath}/${name}`;
      if (!ENVELOPE.has(path) && !allowed(method ?? '', path)) found.add(`${method ?? ''}:${path}`);
    }
  };
  if (!validateRoot(frame)) collect(validateRoot.errors);
  const result = (frame as { result?: unknown }).result;
  if (method !== undefined && result !== undefined && !validateResultFor({ method, result }))
    collect(validateResultFor.errors);
  return [...found];
}
