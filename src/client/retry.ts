import { retriesAutomatically, RpcErrorCode } from '../protocol/codes.js';
import { RpcError } from '../protocol/errors.js';

/**
 * §12.2 retries, one policy for every outgoing call (the typed client's, the gateway's to its engines): only
 * retryable codes, `retryAfterMs` honoured, exponential backoff with full jitter and a cap.
 */
export interface RetryPolicy {
  /** Attempts in all (1 = no retry). */
  readonly attempts: number;
  readonly baseMs: number;
  readonly capMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 3, baseMs: 100, capMs: 5000 };

/** Whether and how long to wait before attempt `attempt + 1`; undefined means give up and rethrow. */
export function retryDelay(
  error: unknown,
  attempt: number,
  policy: RetryPolicy,
  random = Math.random,
): number | undefined {
  // Only an error answer (an RpcError) may be retried: anything else never reached an answer.
  if (!(error instanceof RpcError)) return undefined;
  if (!retriesAutomatically(error.code, error.data) || attempt >= policy.attempts) return undefined;
  if (error.code === -32603 && attempt > 1) return undefined; // "retry once"

  const hint = error.retryAfterMs() ?? 0;
  const backoff = random() * Math.min(policy.capMs, policy.baseMs * 2 ** (attempt - 1));
  return Math.min(policy.capMs, Math.max(hint, backoff));
}

/** Waits `ms`; an abort ends the wait with -32006 (the caller gave up, §7.14). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => (
      clearTimeout(timer),
      reject(new RpcError(RpcErrorCode.Cancelled, 'cancelled by the client'))
    );
    const timer = setTimeout(() => (signal?.removeEventListener('abort', onAbort), resolve()), ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export interface RetryLimits {
  readonly signal?: AbortSignal | undefined;
  /** Milliseconds for every attempt and wait together: a wait that would pass it gives up at once. */
  readonly budgetMs?: number | undefined;
}

/**
 * The one §12.2 retry loop: `attempt(n)` is run again while `retryDelay` allows, after its wait, never after an abort
 * and never past the budget. The last failure is rethrown as it is.
 */
export async function retrying<T>(
  attempt: (n: number) => Promise<T>,
  policy: RetryPolicy,
  limits: RetryLimits = {},
): Promise<T> {
  const started = Date.now();
  for (let n = 1; ; n++) {
    try {
      return await attempt(n);
    } catch (error) {
      const wait = limits.signal?.aborted === true ? undefined : retryDelay(error, n, policy);
      if (wait === undefined) throw error;
      if (limits.budgetMs !== undefined && Date.now() - started + wait >= limits.budgetMs) throw error;
      await sleep(wait, limits.signal);
    }
  }
}
