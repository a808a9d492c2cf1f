import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ModelManifest } from './manifest.js';
import { StartupError } from '../startup-error.js';

/**
 * `rcp-server models fetch NAME`: downloads a standard model from a Hugging Face-style hub at the catalog's pinned
 * revision, checks every file's sha256 against the catalog, and writes the model directory with its manifest. Files
 * land in a staging directory first; nothing is moved into place unless every file verified, so a failed or tampered
 * download never leaves a half-model behind.
 */
export interface CatalogFile {
  readonly path: string;
  readonly sha256: string | null;
}

export interface CatalogEntry {
  readonly repo: string;
  readonly revision: string | null;
  readonly files: Readonly<Record<string, CatalogFile>>;
  readonly manifest: Omit<ModelManifest, 'identity' | 'files' | 'sha256' | 'source'>;
}

export interface Catalog {
  readonly models: Readonly<Record<string, CatalogEntry>>;
}

export interface FetchOptions {
  /** Hub base URL; files are read from `<hub>/<repo>/resolve/<revision>/<path>`. */
  readonly hub: string;
  /** Accept entries without pins: fetch `main` and report the digests to record. */
  readonly unpinned: boolean;
  readonly log: (line: string) => void;
}

export async function readCatalog(path: string): Promise<Catalog> {
  return JSON.parse(await readFile(path, 'utf8')) as Catalog;
}

export class FetchError extends StartupError {
  override name = 'FetchError';
  override readonly exitCode = 1;
}

export async function fetchModel(
  catalog: Catalog,
  name: string,
  target: string,
  options: FetchOptions,
): Promise<ModelManifest> {
  const entry = catalog.models[name];
  if (entry === undefined) {
    throw new FetchError(`no model '${name}' in the catalog; known: ${Object.keys(catalog.models).join(', ')}`);
  }
  if (entry.files['model.onnx'] === undefined || entry.files['tokenizer.json'] === undefined) {
    throw new FetchError(`catalog entry '${name}' must name model.onnx and tokenizer.json`);
  }
  const unpinned = entry.revision === null || Object.values(entry.files).some((file) => file.sha256 === null);
  if (unpinned && !options.unpinned) {
    throw new FetchError(`'${name}' has no pinned revision and sha256 in the catalog; pin them, or pass --unpinned`);
  }
  const revision = entry.revision ?? 'main';
  const staging = `${target}.partial-${process.pid}`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  try {
    const sha256: Record<string, string> = {};
    for (const [file, spec] of Object.entries(entry.files)) {
      const url = `${options.hub.replace(/\/+$/, '')}/${entry.repo}/resolve/${revision}/${spec.path}`;
      const response = await fetch(url);
      if (!response.ok) throw new FetchError(`${url}: HTTP ${response.status}`);
      const bytes = new Uint8Array(await response.arrayBuffer());
      const digest = createHash('sha256').update(bytes).digest('hex');
      if (spec.sha256 !== null && digest !== spec.sha256) {
        throw new FetchError(`${url}: sha256 ${digest} does not match the pinned ${spec.sha256}`);
      }
      if (spec.sha256 === null) options.log(`unpinned ${name} ${file}: sha256 ${digest} (record it in the catalog)`);
      await writeFile(join(staging, file), bytes);
      sha256[file] = digest;
    }
    const manifest: ModelManifest = {
      ...entry.manifest,
      identity: `${entry.repo}@${revision}`,
      files: { model: 'model.onnx', tokenizer: 'tokenizer.json' },
      sha256,
      source: `https://huggingface.co/${entry.repo} at ${revision}`,
    };
    await writeFile(join(staging, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    await rm(target, { recursive: true, force: true });
    await rename(staging, target);
    return manifest;
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}
