import type { ChunkRecord } from '../ports.js';
import type { DocumentOrigin } from './writes.js';

/**
 * What a replica applies to catch up with the store of record: every row the writes in (after, through] left alive,
 * and every chunk label and document id they removed. Applied in one local transaction, removals first (a document
 * deleted and written again inside the window is in both), it brings the replica's corpus to `through`.
 */
export interface Changes {
  /** The write sequence number the replica reaches by applying these: its new indexVersion (§7.7.1). */
  readonly through: number;
  /** The store's last committed write when these were read: the replica is caught up once `through` reaches it. */
  readonly head: number;
  readonly documents: readonly ChangedDocument[];
  readonly chunks: readonly ChunkRecord[];
  readonly removedLabels: readonly number[];
  readonly deletedIds: readonly string[];
  /** Seconds from the commit of write `through` to when these were read (the replica's lag, exported as a metric). */
  readonly lagSeconds: number;
}

export interface ChangedDocument {
  readonly id: string;
  readonly text: string;
  readonly meta: Record<string, unknown>;
  readonly hash: string;
  readonly origin: DocumentOrigin;
}
