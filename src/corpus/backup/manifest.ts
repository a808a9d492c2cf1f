import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { SAVED_COMPANION, SAVED_INDEX, SAVED_SUM } from '../hnsw/saved-file.js';
import { StoreError } from '../store/dir-lock.js';
import { STORE_FILE } from '../store/scrub.js';

/**
 * A backup (docs/corpus.md, "Backup and restore") is a tar archive of a data dir's files at one write: the store, the
 * newest saved indexes not ahead of it, and this manifest, which names each with its size and SHA-256.
 */
export const MANIFEST = 'rcp-backup.json';

/** The most a manifest may take: a handful of names and digests. */
export const MANIFEST_MAX_BYTES = 64 * 1024;

const Sha256 = Type.String({ pattern: '^[0-9a-f]{64}$' });
const Seq = Type.Integer({ minimum: 0 });

export const BackupFile = Type.Object(
  { name: Type.String({ maxLength: 128 }), bytes: Type.Integer({ minimum: 0 }), sha256: Sha256 },
  { additionalProperties: false },
);
export type BackupFile = Static<typeof BackupFile>;

export const BackupManifest = Type.Object(
  {
    format: Type.Literal('rcp-backup'),
    version: Type.Literal(1),
    created: Type.String({ maxLength: 64 }),
    /** The store's seq: the `indexVersion` (§7.7.1) the restored corpus answers at. */
    seq: Seq,
    /** The seq of the saved indexes in the backup (0: none, the indexes are built at start). */
    indexesSeq: Seq,
    store: Type.String({ maxLength: 64 }),
    upstream: Type.Optional(Type.String({ maxLength: 64 })),
    encoder: Type.Optional(Type.String({ maxLength: 512 })),
    files: Type.Array(BackupFile, { maxItems: 8 }),
  },
  { additionalProperties: false },
);
export type BackupManifest = Static<typeof BackupManifest>;

/** The names a backup may hold: the store, one saved index with its sum and lexical companion, the manifest. */
export function isBackupName(name: string): boolean {
  return (
    name === STORE_FILE ||
    name === MANIFEST ||
    SAVED_INDEX.test(name) ||
    SAVED_SUM.test(name) ||
    SAVED_COMPANION.test(name)
  );
}

/** The manifest in `text`, or a StoreError saying what is wrong with it. */
export function parseManifest(text: string): BackupManifest {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new StoreError(`its ${MANIFEST} is not JSON`);
  }
  if (!Value.Check(BackupManifest, value)) {
    const first = Value.Errors(BackupManifest, value).First();
    throw new StoreError(`its ${MANIFEST} is not a backup manifest (${first?.path || '/'}: ${first?.message ?? '?'})`);
  }
  if (!value.files.every((file) => isBackupName(file.name) && file.name !== MANIFEST)) {
    throw new StoreError(`its ${MANIFEST} names a file no backup holds`);
  }
  return value;
}
