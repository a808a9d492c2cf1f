import { createHash } from 'node:crypto';
import { createReadStream, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Type, type Static } from '@sinclair/typebox';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { StartupError } from '../startup-error.js';

/**
 * A model directory's manifest (`manifest.json`): what the model is, which files make it up and their sha256, how to
 * tokenize, pool and normalise. The manifest is configuration: an unreadable or invalid one stops start-up with a
 * clear message. The files it names are the model: missing or corrupt ones leave the server up and the model
 * unavailable (-32010), so a bad model file never takes the process down.
 */
export const ModelManifestSchema = Type.Object(
  {
    kind: Type.Union([Type.Literal('encoder'), Type.Literal('cross-encoder')]),
    /** `use-lite`: sparse (indices, values) input, sentence vector out. `bert`: input_ids/attention_mask/token_type_ids. */
    architecture: Type.Union([Type.Literal('use-lite'), Type.Literal('bert')]),
    /** Human name plus revision, e.g. `BAAI/bge-small-en-v1.5@5c38ec7`; the advertised identity adds a file digest. */
    identity: Type.String({ minLength: 1 }),
    files: Type.Object(
      {
        model: Type.String({ minLength: 1 }),
        tokenizer: Type.String({ minLength: 1 }),
      },
      { additionalProperties: false },
    ),
    sha256: Type.Record(Type.String(), Type.String({ pattern: '^[0-9a-f]{64}$' })),
    tokenizer: Type.Union([Type.Literal('sentencepiece-unigram'), Type.Literal('huggingface')]),
    maxTokens: Type.Integer({ minimum: 2 }),
    dimension: Type.Optional(Type.Integer({ minimum: 1 })),
    pooling: Type.Optional(Type.Union([Type.Literal('mean'), Type.Literal('cls')])),
    normalize: Type.Optional(Type.Boolean()),
    prefixes: Type.Optional(
      Type.Object(
        {
          query: Type.Optional(Type.String()),
          document: Type.Optional(Type.String()),
        },
        { additionalProperties: false },
      ),
    ),
    /** Graph output holding the result: `last_hidden_state` for BERT encoders, `logits` for cross-encoders. */
    output: Type.Optional(Type.String({ minLength: 1 })),
    source: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);

export type ModelManifest = Static<typeof ModelManifestSchema>;

const validate = new Ajv2020({ allErrors: true }).compile(ModelManifestSchema);

export class ManifestError extends StartupError {
  override name = 'ManifestError';
}

export function readManifest(dir: string): ModelManifest {
  const file = join(dir, 'manifest.json');
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new ManifestError(`cannot read model manifest ${file}: ${(error as Error).message}`);
  }
  if (!validate(parsed)) {
    const problems = (validate.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message ?? 'invalid'}`);
    throw new ManifestError(`invalid model manifest ${file}: ${problems.join('; ')}`);
  }
  const manifest = parsed as ModelManifest;
  if (manifest.kind === 'encoder' && manifest.dimension === undefined) {
    throw new ManifestError(`invalid model manifest ${file}: an encoder must declare its dimension`);
  }
  for (const name of Object.values(manifest.files)) {
    if (manifest.sha256[name] === undefined) throw new ManifestError(`model manifest ${file}: no sha256 for ${name}`);
  }
  return manifest;
}

export async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Checks every file against the manifest; rejects with the first mismatch, naming the file. */
export async function verifyFiles(
  dir: string,
  manifest: ModelManifest,
  names: readonly string[] = Object.keys(manifest.sha256),
): Promise<void> {
  for (const [name, expected] of Object.entries(manifest.sha256).filter(([file]) => names.includes(file))) {
    const actual = await sha256File(join(dir, name));
    if (actual !== expected)
      throw new Error(`${name}: sha256 ${actual.slice(0, 12)}… does not match ${expected.slice(0, 12)}…`);
  }
}

/**
 * The advertised identity: the manifest's name plus a digest of every file's sha256, so it changes whenever the
 * weights or the tokenizer change, and only then.
 */
export function modelIdentity(manifest: ModelManifest): string {
  const lines = Object.entries(manifest.sha256)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, sha]) => `${name}:${sha}\n`);
  const digest = createHash('sha256').update(lines.join('')).digest('hex').slice(0, 12);
  return `${manifest.identity}#${digest}`;
}
