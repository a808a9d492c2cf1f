import type { Changes } from './changes.js';
import type { Idempotency, NewDocument, Written } from './writes.js';
import type { Retention } from './retired.js';

/** Messages between the store and its writer thread (better-sqlite3 runs synchronously: keep commits off the loop). */
export type WriterRequest =
  | { op: 'open'; file: string }
  | {
      op: 'upsert';
      documents: readonly NewDocument[];
      idempotency: Idempotency | undefined;
      retention?: Retention | undefined;
    }
  | { op: 'delete'; ids: readonly string[]; retention?: Retention | undefined }
  | { op: 'apply'; changes: Changes; retention?: Retention | undefined }
  | { op: 'prune'; throughSeq: number }
  | { op: 'close' };

export type WriterReply =
  | {
      ok: true;
      written?: Written;
      /**
       * A write the disk could not take (full, failing), or that another process kept waiting past the busy timeout:
       * rolled back whole. The SQLite code and its message.
       */
      refused?: { code: string; message: string };
    }
  | { ok: false; error: string };
