import { WRITE_PROGRESS, type CorpusWriter, type WriteProgress } from '../corpus/index.js';
import { DOCUMENT_MEDIA_TYPES } from '../documents/index.js';
import { callerScoped, type RequestContext } from '../protocol/context.js';
import { RpcError } from '../protocol/errors.js';
import { requireWellFormed } from '../protocol/validation.js';
import type { JsonObject } from '../protocol/messages.js';
import type { MethodDefinition } from '../protocol/registry.js';
import { IndexAddParams, IndexDeleteParams } from '../protocol/schemas/params.js';
import type { DocumentBodies } from './document-bodies.js';

export interface IndexLimits {
  readonly writable: boolean;
  /** Most documents per index/add (and ids per index/delete); more is -32013. */
  readonly maxDocuments: number;
  /** Most chunks one index/add may make; more is -32013, found while chunking, before anything is embedded. */
  readonly maxChunks?: number | undefined;
}

/** §15.3: writes are authorised apart from reads; a read-only corpus refuses them as the capability says. */
function requireWritable(limits: IndexLimits, method: string): void {
  if (!limits.writable) throw RpcError.capabilityMissing(method, 'index.writable');
}

/** §9 a write's stages as progress frames (`read`, then corpus/ports.ts `WriteStage`: chunk, embed, write, index). */
function writeProgress(ctx: Pick<RequestContext, 'progress'>): WriteProgress {
  return (stage, fraction, message) => ctx.progress(stage, fraction, { message });
}

/**
 * `index/add` (§7.10) and `index/delete` (§7.11) over the corpus, and the `index` capability they share:
 * `{writable, chunking: true, contextual: true}` and the document formats a body may be given in.
 */
export function indexMethods(
  corpus: CorpusWriter,
  limits: IndexLimits,
  bodies: DocumentBodies,
): [[MethodDefinition<typeof IndexAddParams>, JsonObject], [MethodDefinition<typeof IndexDeleteParams>, JsonObject]] {
  // §6.2: the media types a document body may be given in (docs/documents.md), under this server's vendor prefix.
  const capability = {
    writable: limits.writable,
    chunking: true,
    contextual: true,
    'x-rcp-server-documents': [...DOCUMENT_MEDIA_TYPES],
  };
  const add: MethodDefinition<typeof IndexAddParams> = {
    method: 'index/add',
    params: IndexAddParams,
    handler: async (params, ctx) => {
      requireWritable(limits, 'index/add');
      if (params.documents.length > limits.maxDocuments) {
        throw RpcError.payloadTooLarge(
          `${params.documents.length} documents exceed ${limits.maxDocuments} per call`,
          'documents',
        );
      }
      const key = ctx.meta.idempotencyKey;
      if (key !== undefined && (typeof key !== 'string' || key.length > 256))
        throw RpcError.invalidParams('_meta.idempotencyKey', 'must be a string of at most 256 characters');
      const documents = await bodies.documents(params.documents, ctx.signal, ctx.caller);
      ctx.progress('read', WRITE_PROGRESS.read, { message: `read ${documents.length} documents` });
      const result = await corpus.add(documents, {
        chunk: params.chunk === true,
        contextual: params.contextual === true,
        maxChunks: limits.maxChunks,
        // §15.6: a key names a write of this caller's; another caller's same key is another write.
        idempotencyKey: key === undefined ? undefined : callerScoped(ctx.caller, key),
        signal: ctx.signal,
        caller: ctx.caller,
        commit: ctx.commit,
        progress: writeProgress(ctx),
      });
      return withVersion(result);
    },
  };
  const remove: MethodDefinition<typeof IndexDeleteParams> = {
    method: 'index/delete',
    params: IndexDeleteParams,
    handler: async (params, ctx) => {
      requireWritable(limits, 'index/delete');
      if (params.ids.length > limits.maxDocuments) {
        throw RpcError.payloadTooLarge(`${params.ids.length} ids exceed ${limits.maxDocuments} per call`, 'ids');
      }
      params.ids.forEach((id, i) => requireWellFormed(id, `ids.${i}`));
      const caller = { signal: ctx.signal, commit: ctx.commit, progress: writeProgress(ctx) };
      return withVersion(await corpus.delete(params.ids, caller));
    },
  };
  return [
    [add, capability],
    [remove, capability],
  ];
}

/**
 * A write's answer with the version it made: `x-rcp-server-indexVersion` (§6.2: §7.10 and §7.11 define no version on
 * a write's result), which a client pins retrieve to (§7.7.1) to read its own write. The unprefixed `indexVersion` is
 * the name this server used before and is still sent for one release (docs/protocol.md, "Deprecated names").
 */
function withVersion<T extends { readonly indexVersion: string }>(result: T): JsonObject {
  return { ...result, 'x-rcp-server-indexVersion': result.indexVersion };
}
