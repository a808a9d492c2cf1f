import type { InferenceSession, Tensor } from 'onnxruntime-node';

/** A tensor as it crosses to or from the session worker (a class instance cannot be posted). */
export interface TensorMessage {
  readonly type: Tensor['type'];
  readonly data: Tensor['data'];
  readonly dims: readonly number[];
}

export type SessionRequest =
  | { op: 'open'; model: string | Uint8Array; options: InferenceSession.SessionOptions }
  | { op: 'run'; feeds: Record<string, TensorMessage>; outputs: readonly string[] | undefined }
  | { op: 'release' };

export type SessionReply =
  | {
      ok: true;
      inputNames?: readonly string[];
      outputNames?: readonly string[];
      outputs?: Record<string, TensorMessage>;
    }
  | { ok: false; error: string };
