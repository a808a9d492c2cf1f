import type { LabelsDigest } from '../labels-digest.js';

/** Messages between the dense index and its worker thread (hnswlib-node runs synchronously: keep it off the loop). */
export interface DenseIndexOptions {
  readonly space: 'cosine' | 'ip';
  readonly dimension: number;
  readonly m: number;
  readonly efConstruction: number;
  readonly efSearch: number;
  readonly initialCapacity: number;
}

export type DenseRequest =
  | {
      op: 'open';
      options: DenseIndexOptions;
      file: string | undefined;
      expected?: { bytes: number; sha256: string };
      /** The labels the file holds marked deleted, as its sum recorded them (absent: found point by point). */
      deleted?: Float64Array | undefined;
    }
  /** `seq`: the write that adds them, remembered for §7.7.1 snapshots. */
  | { op: 'add'; labels: Float64Array; vectors: Float32Array; seq?: number | undefined }
  /** A write's removals leave the graph; those announced by `removing` keep their vectors (§7.7.1). */
  | { op: 'remove'; labels: Float64Array }
  /** §7.7.1: write `seq` removes these (sent before the write becomes the current version). */
  | { op: 'removing'; labels: Float64Array; seq: number }
  /**
   * §7.7.1 at a start: the seqs that wrote the chunks after the snapshot floor (`labels`, `seqs`), and the removed
   * chunks kept (`removed`, the seqs that removed them, their vectors one after another).
   */
  | {
      op: 'keep';
      labels: Float64Array;
      seqs: Float64Array;
      removed: Float64Array;
      removedSeqs: Float64Array;
      vectors: Float32Array;
    }
  /** §7.7.1: what no version from `floor` on needs is forgotten. */
  | { op: 'forget'; floor: number }
  | {
      op: 'search';
      vector: Float32Array;
      k: number;
      ef: number;
      allow: Float64Array | undefined;
      /** Score every allowed vector exactly instead of searching the graph (§7.7.1 `seed`). */
      exact?: boolean;
      /** Score exactly the vectors of this earlier version (§7.7.1 snapshots); implies `exact`. */
      version?: number | undefined;
    }
  | { op: 'save'; file: string }
  | { op: 'count' }
  | { op: 'labels' }
  | { op: 'labelsDigest' };

export type DenseReply =
  | {
      ok: true;
      loaded?: boolean;
      count?: number;
      labels?: Float64Array;
      distances?: Float32Array;
      /** `save`: the written file's size and digest. */
      digest?: { bytes: number; sha256: string };
      /** `save`: the labels the written file holds marked deleted. */
      deleted?: Float64Array;
      /** `labelsDigest`: what the live labels come to. */
      labelsDigest?: LabelsDigest;
    }
  | { ok: false; error: string };
