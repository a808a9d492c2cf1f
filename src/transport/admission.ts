import { RpcError } from '../protocol/errors.js';
import { isJsonObject } from '../protocol/messages.js';
import type { LoadShedder } from './load-shedding.js';
import { rateClassOf } from '../protocol/method-table.js';
import type { Refusal } from '../protocol/screen.js';
import type { RateLimiter } from './rate-limit.js';
import type { WorkGate, WorkTicket } from './work-gate.js';
import { BATCH_CONCURRENCY } from '../protocol/session.js';

export type RefusalReason = 'overload' | 'rate_limit';

/**
 * Whether new work is admitted now (§15.5): load shedding first (an overloaded server refuses everyone, and spends
 * no caller's tokens doing so), then the caller's rate limit. The lifecycle methods and notifications are always
 * admitted, so `ping`, `info` and `notifications/cancel` keep working under any load; over HTTP a batch of several
 * requests needs a place among the work in flight, whatever its members ask (`enterWork`). Both transports use it:
 * HTTP per caller (API key, else address), stdio as its one caller.
 */
export class Admission {
  constructor(
    private readonly shedder: LoadShedder | undefined,
    private readonly limiter: RateLimiter | undefined,
    private readonly onRefused: (reason: RefusalReason, method: string) => void,
    /** The HTTP work in flight (see work-gate.ts). */
    readonly work: WorkGate,
  ) {}

  get enabled(): boolean {
    return this.shedder !== undefined || this.limiter?.enabled === true;
  }

  /** Whether any member of a frame is subject to admission (the lifecycle and notifications never are). */
  appliesTo(value: unknown): boolean {
    if (!this.enabled) return false;
    const members: unknown[] = Array.isArray(value) ? value : [value];
    return members.some((member) => isJsonObject(member) && this.isWork(member.method));
  }

  /** Whether `method` is work: subject to admission (the lifecycle and notifications are not). */
  isWork(method: unknown): method is string {
    return typeof method === 'string' && rateClassOf(method) !== undefined;
  }

  /**
   * A place among the work in flight for a frame holding work (undefined for one that holds none), or the -32011
   * every work member of it is answered with (each counted as an overload refusal). A batch of several requests
   * needs a place whatever it asks: 128 `info` or `initialize` members cost milliseconds, and 64 connections sending
   * them in a loop took every turn of the event loop from other callers. A single lifecycle request never needs one.
   */
  enterWork(caller: string, value: unknown): WorkTicket | RpcError | undefined {
    const work = placed(value, (method) => this.isWork(method));
    if (work.length === 0) return undefined;
    // A batch runs up to BATCH_CONCURRENCY members at once (§11): that many places, not one for all 128.
    const entered = this.work.enter(caller, Math.min(work.length, BATCH_CONCURRENCY));
    if (entered instanceof RpcError) {
      for (const member of work) this.onRefused('overload', (member as { method: string }).method);
    }
    return entered;
  }

  /** The screen of each member of `caller`'s frame by load and rate limit (`check`), for protocol/screen.ts. */
  checkFor(caller: string): Refusal {
    return (method) => this.check(caller, method);
  }

  /** The screen that answers each member of `value` that needed a place with `busy`, the refusal of `enterWork`. */
  refuseWork(busy: RpcError, value: unknown): Refusal {
    const everyRequest = requestsIn(value).length > 1;
    return (method) => ((everyRequest && !isNotification(method)) || this.isWork(method) ? busy : undefined);
  }

  async check(caller: string, method: unknown): Promise<RpcError | undefined> {
    if (!this.isWork(method)) return undefined;
    const overloaded = this.shedder?.check();
    if (overloaded !== undefined) {
      this.onRefused('overload', method);
      return overloaded;
    }
    const limited = this.limiter?.enabled === true ? await this.limiter.take(caller, method) : undefined;
    if (limited !== undefined) this.onRefused('rate_limit', method);
    return limited;
  }

  async close(): Promise<void> {
    this.shedder?.close();
    await this.limiter?.close();
  }
}

/** The members of a frame that are requests (have an id), each answered. */
function requestsIn(value: unknown): Record<string, unknown>[] {
  const members: unknown[] = Array.isArray(value) ? value : [value];
  return members.filter((member): member is Record<string, unknown> => isJsonObject(member) && 'id' in member);
}

/** The requests of a frame that need a place: its work, or every request of a batch of several. */
function placed(value: unknown, isWork: (method: unknown) => boolean): Record<string, unknown>[] {
  const requests = requestsIn(value);
  return requests.length > 1 ? requests : requests.filter((member) => isWork(member.method));
}

const isNotification = (method: unknown) => typeof method === 'string' && method.startsWith('notifications/');
