import type { RemoteEngine } from './remote-engine.js';
import type { RequestContext } from '../protocol/context.js';
import { RpcErrorCode } from '../protocol/codes.js';
import { RpcError } from '../protocol/errors.js';
import type { JsonObject } from '../protocol/messages.js';
import { scopedForCaller } from './forwarding.js';

/**
 * One call to the first engine that can serve it, in the given order (§16: the Selector's rule, and the gateway's
 * for embed/rerank): -32010 (including a dead link) moves on to the next engine, reported through `onUnavailable`;
 * any other answer is that engine's verdict on the request and is returned or thrown as is. Anything thrown that is
 * not an RpcError is a defect of ours, not an engine's failure: thrown on as it is, never a reason to try the next
 * engine (docs/architecture.md §6: the session's dispatch makes it -32603). Each engine gets what is left of the
 * request's deadline, forwarded as `_meta.deadlineMs` (§16.2).
 */
export async function firstAnswer(
  targets: readonly RemoteEngine[],
  method: string,
  params: JsonObject,
  ctx: RequestContext,
  onUnavailable: (engine: RemoteEngine) => void = () => undefined,
): Promise<JsonObject> {
  let last: RpcError | undefined;
  for (const engine of targets) {
    const left = ctx.remainingMs();
    // §16.2: less than a millisecond cannot be forwarded as a deadline (`_meta.deadlineMs` is above 0).
    if (left < 1) break;
    try {
      const forwarded = scopedForCaller(
        { ...params, _meta: { ...ctx.meta, deadlineMs: Math.floor(left) } },
        ctx.caller,
      );
      return await engine.call(method, forwarded, { deadlineMs: left, signal: ctx.signal, attempts: 1 });
    } catch (error) {
      // Only an engine's answer or a dead link is the engine's; anything else is our defect, for the dispatch.
      if (!(error instanceof RpcError) || error.code !== RpcErrorCode.BackendUnavailable) throw error;
      last = error;
      onUnavailable(engine);
    }
  }
  throw last ?? RpcError.timeout(ctx.deadlineMs);
}
