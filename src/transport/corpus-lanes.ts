import type { RpcError } from '../protocol/errors.js';
import type { HttpSessionStore } from './http-sessions.js';

/**
 * The named corpora a listener serves beside its default one (docs/tenants.md): each has its own sessions, so a
 * session, its cursors and its idempotency keys belong to one corpus. A request holds its corpus open from the end
 * of its body until it is answered (an idle corpus may be closed between requests, never under one).
 */
export interface CorpusLanes {
  /** Whether a corpus of that name is served (checked before a request's body is read). */
  exists(name: string): Promise<boolean>;
  /**
   * The sessions of corpus `name`, held for `caller` until `release`; undefined when no corpus of that name is
   * served; an RpcError when it exists but cannot be had now (-32011 while every open corpus is in use, -32010 when it
   * fails to open).
   */
  hold(name: string, caller: string): Promise<HeldLane | RpcError | undefined>;
}

export interface HeldLane {
  readonly sessions: HttpSessionStore;
  release(): void;
}
