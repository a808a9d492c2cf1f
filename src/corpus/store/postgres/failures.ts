import { RpcError } from '../../../protocol/errors.js';

/** How long a client should wait before retrying a write the store could not take (a restart or a failover). */
const RETRY_AFTER_MS = 1_000;

/**
 * SQLSTATE classes that mean "the database is not there right now", not "this statement is wrong": connection
 * exceptions (08), insufficient resources (53), operator intervention — shutdown, crash, starting up (57),
 * and a read-only standby refusing a write during a failover (25006).
 */
const PASSING = /^(08|53|57)|^25006$/;

/** Whether `error` says the database cannot be reached or cannot take writes now (rather than a bug of ours). */
export function isPassing(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return PASSING.test(code);
  if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return true; // ECONNREFUSED, ECONNRESET, ETIMEDOUT, ...
  // The driver's own: the pool's connection timeout, "Connection terminated unexpectedly" (plain Errors, no code).
  return error instanceof Error && error.constructor === Error && /connect|terminat|timeout/i.test(error.message);
}

/**
 * A store failure as the client should see it: -32010 with `retryAfterMs` (§12.2) and `detail` saying what was
 * applied, when the database is away; anything else (a bug) unchanged, for the session to answer -32603.
 */
export function unavailable(error: unknown, detail: string): unknown {
  if (!isPassing(error)) return error;
  const reason = (error as Error).message;
  return RpcError.backendUnavailable(`the store of record is unavailable (${reason}); ${detail}`, RETRY_AFTER_MS);
}

/**
 * A write whose caller stopped waiting (§13.1: its deadline, a cancel, its transport gone) while the database did not
 * answer: the caller's own code (-32014, -32006), with `detail` saying what was applied — nothing when COMMIT was never
 * sent, perhaps once it was (a hung server may still run it when it wakes).
 */
export function abandoned(
  signal: AbortSignal,
  detail: string,
  waiting = 'the store of record did not answer',
): RpcError {
  const reason = RpcError.fromAbort(signal.reason);
  return new RpcError(reason.code, `${reason.message} while ${waiting}; ${detail}`, reason.data);
}

/**
 * `work`, or the rejection `onAbort()` gives as soon as `signal` aborts (the work is left to settle unheard): a
 * database that hangs must not hold a request past its deadline (§13.1).
 */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined, onAbort: () => Error): Promise<T> {
  if (signal === undefined) return work;
  return new Promise<T>((resolve, reject) => {
    const abort = (): void => reject(onAbort());
    signal.addEventListener('abort', abort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', abort));
    if (signal.aborted) abort();
  });
}
