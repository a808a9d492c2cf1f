import type { BatchProgress } from '../models/index.js';
import type { RequestContext } from '../protocol/context.js';

/**
 * §9 progress of a method whose work is one stage done a model batch at a time (`embed`, `embed/multi`: stage
 * `embed`; `rerank`: stage `rerank`): one frame per model call that finished some of the request's texts, its
 * fraction the share of them done, its message `embedded 64/256`. A no-op without a progressToken (the context's rule).
 */
export function batchProgress(
  ctx: Pick<RequestContext, 'progress'>,
  stage: string,
  verb: string,
  from = 0,
  to = 1,
): BatchProgress {
  return (done, total) =>
    ctx.progress(stage, from + ((to - from) * done) / Math.max(1, total), { message: `${verb} ${done}/${total}` });
}
