import type { CorpusReader } from '../corpus/index.js';
import { RpcError } from '../protocol/errors.js';
import type { JsonObject } from '../protocol/messages.js';
import type { MethodDefinition } from '../protocol/registry.js';
import { FeedbackParams } from '../protocol/schemas/params.js';
import { documentOfHitId } from '../retrieval/units.js';

/**
 * `feedback` (§7.16): signals about how hits fared downstream, counted in metrics and otherwise not kept: nothing in
 * this server reads them back, and §7.16 lets a server only log feedback. Untrusted advice (§15.2): nothing here
 * changes retrieval. A hit flagged `poisonSuspected` or `injectionSuspected` marks its document and source for
 * review: one warning log line naming them, and a counter by kind (§15.3). `accepted` counts every well-formed
 * signal, acted on or not.
 */
export interface FeedbackSettings {
  readonly maxSignals: number;
  /** `limits.maxQueryChars`: a `query` is what a retrieve was asked, and no longer (§15.5). */
  readonly maxQueryChars: number;
  /** Told of each flag: kind, hit, document and its `meta.source` (for the operator's review). */
  readonly onFlag: (flag: {
    kind: 'poison' | 'injection';
    hitId: string;
    documentId: string;
    source: string | undefined;
    sessionId: string | undefined;
  }) => void;
  /** Told of each recorded signal's fields (for metrics). */
  readonly onSignal: (fields: readonly string[]) => void;
}

export function feedbackMethod(
  corpus: CorpusReader,
  settings: FeedbackSettings,
): [MethodDefinition<typeof FeedbackParams>, JsonObject] {
  const definition: MethodDefinition<typeof FeedbackParams> = {
    method: 'feedback',
    params: FeedbackParams,
    handler: ({ sessionId, query, signals }) => {
      if (signals.length > settings.maxSignals) {
        throw RpcError.payloadTooLarge(
          `${signals.length} signals exceed the limit of ${settings.maxSignals}`,
          'signals',
        );
      }
      if (query !== undefined && query.length > settings.maxQueryChars)
        throw RpcError.invalidParams(
          'query',
          `${query.length} characters exceed the limit of ${settings.maxQueryChars}`,
        );
      const recorded = signals.map((signal) => ({ ...signal, hitId: String(signal.hitId) }));
      for (const signal of recorded) {
        settings.onSignal(Object.keys(signal).filter((key) => key !== 'hitId'));
        const documentId = documentOfHitId(signal.hitId);
        const source = corpus.metaOf(documentId).source;
        for (const [kind, flagged] of [
          ['poison', signal.poisonSuspected],
          ['injection', signal.injectionSuspected],
        ] as const) {
          if (flagged === true) {
            settings.onFlag({
              kind,
              hitId: signal.hitId,
              documentId,
              source: typeof source === 'string' ? source : undefined,
              sessionId,
            });
          }
        }
      }
      return { accepted: recorded.length };
    },
  };
  return [definition, {}];
}
