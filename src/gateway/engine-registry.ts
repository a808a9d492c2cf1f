import { readFileSync } from 'node:fs';
import { Type, type Static } from '@sinclair/typebox';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { EngineSpec } from './engine.js';
import { StartupError } from '../startup-error.js';

/**
 * The §16.1 static registry (`rcp.json`): the engines a gateway federates. Validated at start-up: an unknown key,
 * a missing command or url, or a repeated id is a clear error, never a silently skipped engine.
 */
const EngineEntry = Type.Object(
  {
    id: Type.String({ minLength: 1 }),
    transport: Type.Union([Type.Literal('stdio'), Type.Literal('http')]),
    command: Type.Optional(Type.Array(Type.String(), { minItems: 1 })),
    url: Type.Optional(Type.String({ pattern: '^https?://[^/\\s]+' })),
    /** Replicas of one corpus (a partition), one engine to the federation (replica-group.ts); instead of `url`. */
    urls: Type.Optional(
      Type.Array(Type.String({ pattern: '^https?://[^/\\s]+' }), { minItems: 1, maxItems: 16, uniqueItems: true }),
    ),
    weight: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
    required: Type.Optional(Type.Boolean()),
    priority: Type.Optional(Type.Number()),
    headers: Type.Optional(Type.Record(Type.String(), Type.String())),
    /** Environment for a stdio engine, over the gateway's own minus its RCP_* settings. */
    env: Type.Optional(Type.Record(Type.String(), Type.String())),
  },
  { additionalProperties: false },
);
const Registry = Type.Object({ engines: Type.Array(EngineEntry, { minItems: 1 }) }, { additionalProperties: false });
type Registry = Static<typeof Registry>;

const validate = new Ajv2020({ allErrors: true, allowUnionTypes: true }).compile(Registry);

export class RegistryError extends StartupError {
  override name = 'RegistryError';
}

export function readRegistry(file: string): EngineSpec[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new RegistryError(`cannot read registry ${file}: ${(error as Error).message}`);
  }
  return parseRegistry(parsed, file);
}

export function parseRegistry(value: unknown, source = 'registry'): EngineSpec[] {
  if (!validate(value)) {
    const problems = (validate.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message ?? 'invalid'}`);
    throw new RegistryError(`invalid registry ${source}:\n  ${problems.join('\n  ')}`);
  }
  const registry: Registry = value;
  // A group's members are named `<id>/<n>` in logs and metrics: no other engine may have one of those names.
  const seen = new Set<string>(
    registry.engines.flatMap((entry) => (entry.urls ?? []).map((_, i) => `${entry.id}/${i + 1}`)),
  );
  return registry.engines.map((entry) => {
    if (seen.has(entry.id))
      throw new RegistryError(`invalid registry ${source}: engine id '${entry.id}' appears twice, or names a replica`);
    seen.add(entry.id);
    if (entry.transport === 'stdio' && entry.command === undefined) {
      throw new RegistryError(`invalid registry ${source}: stdio engine '${entry.id}' needs a command`);
    }
    if (entry.transport === 'http' && (entry.url === undefined) === (entry.urls === undefined)) {
      throw new RegistryError(`invalid registry ${source}: http engine '${entry.id}' needs a url, or urls (not both)`);
    }
    if (entry.transport === 'stdio' && (entry.urls !== undefined || entry.url !== undefined)) {
      throw new RegistryError(`invalid registry ${source}: stdio engine '${entry.id}' has no url or urls`);
    }
    return {
      id: entry.id,
      transport: entry.transport,
      command: entry.command,
      url: entry.url,
      urls: entry.urls,
      weight: entry.weight ?? 1,
      required: entry.required ?? false,
      priority: entry.priority ?? 0,
      headers: entry.headers ?? {},
      env: entry.env ?? {},
    };
  });
}
