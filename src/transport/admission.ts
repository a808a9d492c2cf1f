import { RpcError } from '../protocol/errors.js';
import { isJsonObject } from '../protocol/messages.js';
import type { LoadShedder } from './load-shedding.js';
import { rateClassOf } from '../protocol/method-table.js';
import type { Refusal } from '../protocol/screen.js';
import type { RateLimiter } from './rate-limit.js';
import type { WorkGate, WorkTicket } from './work-gate.js';

export type RefusalReason = 'overload' | 'rate_limit';

/**
 * Whether new work is admitted now (§15.5): load shedding first (an overloaded server refuses everyone, and spends
 * no caller's tokens doing so), then the caller's rate limit. The lifecycle methods and notifications are always
 * admitted, so `ping`, `info` and `notifications/cancel` keep working under any load. Both transports use it:
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
   * every work member of it is answered with (each counted as an overload refusal).
   */
  enterWork(caller: string, value: unknown): WorkTicket | RpcError | undefined {
    const members: unknown[] = Array.isArray(value) ? value : [value];
    const work = members.filter((member) => isJsonObject(member) && 'id' in member && this.isWork(member.method));
    if (work.length === 0) return undefined;
    const entered = this.work.enter(caller);
    if (entered instanceof RpcError) {
      for (const member of work) this.onRefused('overload', (member as { method: string }).method);
    }
    return entered;
  }

  /** The screen of each member of `caller`'s frame by load and rate limit (`check`), for protocol/screen.ts. */
  checkFor(caller: string): Refusal {
    return (method) => this.check(caller, method);
  }

  /** The screen that answers each work member with `busy`, the work gate's refusal (`enterWork`). */
  refuseWork(busy: RpcError): Refusal {
    return (method) => (this.isWork(method) ? busy : undefined);
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
