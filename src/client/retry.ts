import { retriesAutomatically } from '../protocol/codes.js';
import { RcpError } from './client-errors.js';

/** §12.2 retries: only retryable codes, `retryAfterMs` honoured, exponential backoff with full jitter and a cap. */
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
  if (!(error instanceof RcpError)) return undefined;
  if (!retriesAutomatically(error.code, error.data) || attempt >= policy.attempts) return undefined;
  if (error.code === -32603 && attempt > 1) return undefined; // "retry once"

  const backoff = random() * Math.min(policy.capMs, policy.baseMs * 2 ** (attempt - 1));
  return Math.min(policy.capMs, Math.max(error.retryAfterMs() ?? 0, backoff));
}
