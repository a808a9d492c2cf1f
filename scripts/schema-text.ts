/**
 * JSON Schema (as TypeBox writes it) read aloud for the generated reference pages: docs/configuration.md
 * (config-docs.ts) and docs/methods.md (method-docs.ts).
 */

/** The JSON Schema keywords the project's schemas use. */
export interface SchemaNode {
  type?: string;
  description?: string;
  default?: unknown;
  properties?: Record<string, SchemaNode>;
  required?: string[];
  patternProperties?: Record<string, SchemaNode>;
  items?: SchemaNode;
  anyOf?: SchemaNode[];
  const?: unknown;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  contentEncoding?: string;
  minItems?: number;
  maxItems?: number;
  maxProperties?: number;
}

/** A table cell: one line, its pipes escaped (GitHub tables split on them, even inside code spans). */
export const cell = (text: string) => text.replace(/\s*\n\s*/g, ' ').replace(/\|/g, '\\|');

/** A schema's type in words; `named` gives a name to schemas that recur (matched by content). */
export function typeOf(node: SchemaNode, named: (node: SchemaNode) => string | undefined = () => undefined): string {
  const name = named(node);
  if (name !== undefined) return name;
  const inner = (child: SchemaNode) => typeOf(child, named);
  if (node.anyOf !== undefined) return `one of ${node.anyOf.map(inner).join(', ')}`;
  if (node.const !== undefined) return literal(node.const);
  if (node.enum !== undefined) return `one of ${node.enum.map(literal).join(', ')}`;
  switch (node.type) {
    case 'integer':
    case 'number':
      return `${node.type}${range(node)}`;
    case 'string':
      return stringTypeOf(node);
    case 'array': {
      const bounds = [
        node.minItems === undefined ? '' : ` of at least ${node.minItems}`,
        node.maxItems === undefined ? '' : ` of at most ${node.maxItems}`,
      ].join('');
      return `list${bounds}${node.items === undefined ? '' : `, each ${inner(node.items)}`}`;
    }
    case 'object':
      return objectTypeOf(node, inner);
    default:
      return node.type ?? 'any';
  }
}

const literal = (value: unknown) => `\`${typeof value === 'string' ? value : JSON.stringify(value)}\``;

function stringTypeOf(node: SchemaNode): string {
  return [
    node.minLength === 1 ? 'non-empty string' : 'string',
    node.minLength !== undefined && node.minLength > 1 ? `of at least ${node.minLength} characters` : '',
    node.maxLength === undefined ? '' : `of at most ${node.maxLength} characters`,
    node.contentEncoding === undefined ? '' : `(${node.contentEncoding})`,
    node.pattern === undefined ? '' : `matching \`${node.pattern}\``,
  ]
    .filter(Boolean)
    .join(' ');
}

function objectTypeOf(node: SchemaNode, inner: (child: SchemaNode) => string): string {
  const [values] = Object.values(node.patternProperties ?? {});
  const most = node.maxProperties === undefined ? '' : ` of at most ${node.maxProperties} entries`;
  if (values !== undefined) return `map${most}, each value ${inner(values)}`;
  const members = Object.entries(node.properties ?? {}).map(
    ([key, child]) => `${key}${node.required?.includes(key) === true ? '' : '?'}: ${inner(child)}`,
  );
  return members.length === 0 ? 'object' : `object { ${members.join('; ')} }`;
}

function range({ minimum, maximum, exclusiveMinimum }: SchemaNode): string {
  if (minimum !== undefined && maximum !== undefined) return `, ${minimum} to ${maximum}`;
  if (exclusiveMinimum !== undefined) return ` > ${exclusiveMinimum}`;
  if (minimum !== undefined) return ` ≥ ${minimum}`;
  return maximum === undefined ? '' : ` ≤ ${maximum}`;
}
