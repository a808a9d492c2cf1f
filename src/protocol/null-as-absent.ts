import type { TSchema } from '@sinclair/typebox';
import { isJsonObject, type JsonObject } from './messages.js';

/** Returns `value` with its absent nulls dropped: `value` itself when it has none, else a copy. */
export type Prune = (value: unknown) => unknown;

/** The parts of a JSON Schema (as TypeBox writes it) that decide where a null may be dropped. */
interface Schema {
  readonly type?: string | readonly string[];
  readonly const?: unknown;
  readonly enum?: readonly unknown[];
  readonly anyOf?: readonly Schema[];
  readonly oneOf?: readonly Schema[];
  readonly properties?: Readonly<Record<string, Schema>>;
  readonly required?: readonly string[];
  readonly patternProperties?: Readonly<Record<string, Schema>>;
  readonly additionalProperties?: Schema | boolean;
  readonly items?: Schema | boolean;
}

/** What to do with one member of an object: drop it when null, and prune what it holds. */
interface MemberRule {
  readonly dropNull: boolean;
  readonly prune: Prune;
}

const keep: Prune = (value) => value;

/**
 * §4.6 Absent vs null: an explicit `null` is only meaningful where a schema lists null as a permitted type; elsewhere
 * a peer MUST treat it as absent. `nullsAsAbsent(schema)` is compiled once per params schema, like the validator
 * (docs/architecture.md §7), and runs before it: it drops every null that an optional member, at any depth, holds where
 * that member's schema does not admit null. A required member's null stays, for the validator to answer -32602.
 */
export function nullsAsAbsent(schema: TSchema): Prune {
  return compile(schema as Schema);
}

/**
 * Whether `schema` lists null as a permitted value. A schema that constrains nothing (`Type.Unknown()`, e.g. a
 * document's `meta` values) admits null: there null is data, not absence.
 */
function admitsNull(schema: Schema): boolean {
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives !== undefined) return alternatives.some(admitsNull);
  if (Object.hasOwn(schema, 'const')) return schema.const === null;
  if (schema.enum !== undefined) return schema.enum.includes(null);
  if (typeof schema.type === 'string') return schema.type === 'null';
  if (schema.type !== undefined) return schema.type.includes('null');
  return true;
}

function compile(schema: Schema): Prune {
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives !== undefined) return compileUnion(alternatives);
  if (isObjectSchema(schema)) return compileObject(schema);
  if (isArraySchema(schema)) return compileArray(schema);
  return keep;
}

/**
 * A union prunes an object (or an array) by its one object (or array) alternative. With several, which one a value
 * meant is the validator's to decide, so nothing is dropped: a null there stays and is judged as sent.
 */
function compileUnion(alternatives: readonly Schema[]): Prune {
  const objects = alternatives.filter(isObjectSchema);
  const arrays = alternatives.filter(isArraySchema);
  const ofObject = objects.length === 1 ? compileObject(objects[0]!) : keep;
  const ofArray = arrays.length === 1 ? compileArray(arrays[0]!) : keep;
  if (ofObject === keep && ofArray === keep) return keep;
  return (value) => (Array.isArray(value) ? ofArray(value) : ofObject(value));
}

function compileObject(schema: Schema): Prune {
  const required = new Set(schema.required ?? []);
  const members = new Map<string, MemberRule>();
  for (const [key, member] of Object.entries(schema.properties ?? {})) {
    members.set(key, { dropNull: !required.has(key) && !admitsNull(member), prune: compile(member) });
  }
  const entries = entryRules(schema);
  const hasWork = [...members.values(), ...entries.map(([, rule]) => rule)].some(
    (rule) => rule.dropNull || rule.prune !== keep,
  );
  if (!hasWork) return keep;
  const declared = new Set(members.keys());
  const ruleFor = (key: string): MemberRule | undefined =>
    declared.has(key) ? members.get(key) : entries.find(([pattern]) => pattern.test(key))?.[1];
  return (value) => (isJsonObject(value) ? pruneObject(value, ruleFor) : value);
}

/** A record's entries (`patternProperties`, an `additionalProperties` schema) are optional members too. */
function entryRules(schema: Schema): [RegExp, MemberRule][] {
  const rule = (member: Schema): MemberRule => ({ dropNull: !admitsNull(member), prune: compile(member) });
  const patterned = Object.entries(schema.patternProperties ?? {}).map(([pattern, member]): [RegExp, MemberRule] => [
    new RegExp(pattern, 'u'),
    rule(member),
  ]);
  const extra = schema.additionalProperties;
  return typeof extra === 'object' ? [...patterned, [/^/u, rule(extra)]] : patterned;
}

/** Copy-on-write: the value itself when nothing in it changes. */
function pruneObject(value: JsonObject, ruleFor: (key: string) => MemberRule | undefined): JsonObject {
  let copy: JsonObject | undefined;
  for (const [key, member] of Object.entries(value)) {
    const rule = ruleFor(key);
    if (rule === undefined) continue;
    if (member === null && rule.dropNull) {
      copy ??= { ...value };
      delete copy[key];
      continue;
    }
    const pruned = rule.prune(member);
    if (pruned !== member) (copy ??= { ...value })[key] = pruned;
  }
  return copy ?? value;
}

/** An array's elements are positions, not optional members: a null element stays; objects inside are pruned. */
function compileArray(schema: Schema): Prune {
  const prune = typeof schema.items === 'object' ? compile(schema.items) : keep;
  if (prune === keep) return keep;
  return (value) => {
    if (!Array.isArray(value)) return value;
    const items: readonly unknown[] = value;
    const pruned = items.map(prune);
    return pruned.some((item, i) => item !== items[i]) ? pruned : items;
  };
}

function isObjectSchema(schema: Schema): boolean {
  return schema.type === 'object';
}

function isArraySchema(schema: Schema): boolean {
  return schema.type === 'array';
}
