import { createHash } from 'node:crypto';

/**
 * The partition (shard) that owns a document id, of `partitions` numbered from 0: a stable hash, the same in every
 * gateway with the same shard list and in `rcp-server ingest --partition` (docs/replicas.md, "Partitions").
 */
export function shardOf(id: string, partitions: number): number {
  return createHash('sha256').update(id).digest().readUInt32BE(0) % partitions;
}
