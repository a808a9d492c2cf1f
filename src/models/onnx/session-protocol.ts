import type { InferenceSession, Tensor } from 'onnxruntime-node';

/** A tensor as it crosses to or from the session worker (a class instance cannot be posted). */
export interface TensorMessage {
  readonly type: Tensor['type'];
  readonly data: Tensor['data'];
  readonly dims: readonly number[];
}

export type SessionRequest =
  | {
      op: 'open';
      model: string | Uint8Array;
      options: InferenceSession.SessionOptions;
      /** The OS nice value the worker's thread takes before the session (and its threads) are made; 0: unchanged. */
      nice?: number | undefined;
    }
  | { op: 'run'; feeds: Record<string, TensorMessage>; outputs: readonly string[] | undefined }
  | { op: 'release' };

export type SessionReply =
  | {
      ok: true;
      /** On open with a `nice`: whether the thread's priority was lowered (platform/thread-priority.ts). */
      niced?: boolean;
      inputNames?: readonly string[];
      outputNames?: readonly string[];
      outputs?: Record<string, TensorMessage>;
    }
  | { ok: false; error: string };
