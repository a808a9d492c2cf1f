import type { FieldType } from '../corpus/index.js';
import { RpcError } from '../protocol/errors.js';
import { isJsonObject } from '../protocol/messages.js';
import { isTimestamp } from '../protocol/timestamps.js';

/**
 * §8 metadata filters: validated against the advertised field types and operators, then compiled to a predicate over
 * a document's metadata. -32602 (`data.field`) for an unadvertised field, a value of the wrong JSON type for the field
 * or operator, an empty `and`/`or`, an unknown node shape, or one larger than its
 * limits (depth, node count); -32005 (`data.option`)
 * for an operator outside `filter.operators`. String comparison is case-sensitive and code-unit ordered; dates are
 * §4.6 timestamps (ISO 8601 strings or integer epoch ms, as metadata accepts them) compared as instants.
 */
export const OPERATORS = ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'nin', 'contains', 'exists'] as const;
export type Operator = (typeof OPERATORS)[number];
/** §15.5 bounds on one filter: nesting depth, and nodes (leaves, combinators and every `in`/`nin` member). */
export interface FilterLimits {
  maxDepth: number;
  maxNodes: number;
}

export type Predicate = (meta: Readonly<Record<string, unknown>>) => boolean;

const ORDERED = new Set<FieldType>(['int', 'float', 'date']);

function scalarFits(type: FieldType, value: unknown): boolean {
  switch (type) {
    case 'keyword':
    case 'text':
      return typeof value === 'string';
    case 'int':
      return Number.isSafeInteger(value);
    case 'float':
      return typeof value === 'number' && Number.isFinite(value);
    case 'bool':
      return typeof value === 'boolean';
    case 'date':
      return isTimestamp(value);
  }
}

/** A comparable form: dates become epoch ms, everything else stays as is. */
function key(type: FieldType, value: unknown): unknown {
  if (type !== 'date') return value;
  return typeof value === 'number' ? value : typeof value === 'string' ? Date.parse(value) : undefined;
}

function compare(a: unknown, b: unknown): number | undefined {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  return undefined;
}

function leaf(
  node: Record<string, unknown>,
  path: string,
  fields: Readonly<Record<string, FieldType>>,
  operators: readonly string[],
): Predicate {
  const { field, op, value } = node;
  if (typeof field !== 'string') throw RpcError.invalidParams(`${path}.field`, 'a string naming a metadata field');
  const type = Object.hasOwn(fields, field) ? fields[field] : undefined; // own keys only: never `__proto__`
  if (type === undefined)
    throw RpcError.invalidParams(`filter.${field}`, 'field is not filterable (see filter.fields)');
  if (typeof op !== 'string') throw RpcError.invalidParams(`${path}.op`, 'a string naming an operator');
  // §8: an operator outside the advertised set (an unknown one included) is -32005.
  if (!operators.includes(op) || !(OPERATORS as readonly string[]).includes(op)) {
    throw RpcError.optionUnsupported(`${path}.op`, op);
  }
  const bad = (why: string) => RpcError.invalidParams(`filter.${field}`, why);
  const get = (meta: Readonly<Record<string, unknown>>) => meta[field];
  switch (op as Operator) {
    case 'exists': {
      if (typeof value !== 'boolean') throw bad('exists takes true or false');
      return (meta) => (get(meta) !== undefined && get(meta) !== null) === value;
    }
    case 'eq':
    case 'ne': {
      if (!scalarFits(type, value)) throw bad(`${op} needs a ${type} value`);
      const want = key(type, value);
      const matches = (meta: Readonly<Record<string, unknown>>) => {
        const have = get(meta);
        return Array.isArray(have) ? have.some((item) => key(type, item) === want) : key(type, have) === want;
      };
      return op === 'eq' ? matches : (meta) => !matches(meta);
    }
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte': {
      if (!ORDERED.has(type)) throw bad(`${op} applies to int, float and date fields only`);
      if (!scalarFits(type, value)) throw bad(`${op} needs a ${type} value`);
      const want = key(type, value);
      const tests: Record<'gt' | 'gte' | 'lt' | 'lte', (c: number) => boolean> = {
        gt: (c) => c > 0,
        gte: (c) => c >= 0,
        lt: (c) => c < 0,
        lte: (c) => c <= 0,
      };
      const test = tests[op as keyof typeof tests];
      return (meta) => {
        const c = compare(key(type, get(meta)), want);
        return c !== undefined && !Number.isNaN(c) && test(c);
      };
    }
    case 'in':
    case 'nin': {
      if (!Array.isArray(value) || value.some((item) => !scalarFits(type, item)))
        throw bad(`${op} needs an array of ${type} values`);
      const wanted = new Set(value.map((item) => key(type, item)));
      const matches = (meta: Readonly<Record<string, unknown>>) => {
        const have = get(meta);
        return Array.isArray(have) ? have.some((item) => wanted.has(key(type, item))) : wanted.has(key(type, have));
      };
      return op === 'in' ? matches : (meta) => !matches(meta);
    }
    case 'contains': {
      if (type === 'text') {
        if (typeof value !== 'string') throw bad('contains on a text field needs a string');
        return (meta) => typeof get(meta) === 'string' && (get(meta) as string).includes(value);
      }
      if (!scalarFits(type, value)) throw bad(`contains needs a ${type} value`);
      const want = key(type, value);
      return (meta) => Array.isArray(get(meta)) && (get(meta) as unknown[]).some((item) => key(type, item) === want);
    }
  }
}

export function compileFilter(
  node: unknown,
  fields: Readonly<Record<string, FieldType>>,
  operators: readonly string[],
  limits: FilterLimits,
): Predicate {
  const budget = { nodes: 0 };
  const compile = (node: unknown, path: string, depth: number): Predicate => {
    if (depth > limits.maxDepth) throw RpcError.invalidParams(path, `nested deeper than ${limits.maxDepth}`);
    budget.nodes += 1 + (isJsonObject(node) && Array.isArray(node.value) ? node.value.length : 0);
    if (budget.nodes > limits.maxNodes) {
      throw RpcError.invalidParams('filter', `more than ${limits.maxNodes} nodes (conditions and in/nin values)`);
    }
    if (!isJsonObject(node)) throw RpcError.invalidParams(path, 'a filter node is an object');
    const combinators = ['and', 'or', 'not'].filter((name) => name in node);
    if (combinators.length > 1 || (combinators.length === 1 && 'field' in node)) {
      throw RpcError.invalidParams(path, 'a node is one of and, or, not, or a field condition');
    }
    const [combinator] = combinators;
    if (combinator === 'not') return negate(compile(node.not, `${path}.not`, depth + 1));
    if (combinator === 'and' || combinator === 'or') {
      const children = node[combinator];
      if (!Array.isArray(children) || children.length === 0) {
        throw RpcError.invalidParams(`${path}.${combinator}`, 'a non-empty array (§8)');
      }
      const compiled = children.map((child, i) => compile(child, `${path}.${combinator}.${i}`, depth + 1));
      return combinator === 'and' ? (meta) => compiled.every((p) => p(meta)) : (meta) => compiled.some((p) => p(meta));
    }
    return leaf(node, path, fields, operators);
  };
  return compile(node, 'filter', 0);
}

function negate(predicate: Predicate): Predicate {
  return (meta) => !predicate(meta);
}
