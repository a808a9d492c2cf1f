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
  | { op: 'add'; labels: Float64Array; vectors: Float32Array }
  | { op: 'remove'; labels: Float64Array }
  | {
      op: 'search';
      vector: Float32Array;
      k: number;
      ef: number;
      allow: Float64Array | undefined;
      /** Score every allowed vector exactly instead of searching the graph (§7.7.1 `seed`). */
      exact?: boolean;
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
