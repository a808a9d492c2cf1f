import { Type } from '@sinclair/typebox';
import { RpcErrorCode } from '../protocol/codes.js';
import { RpcError } from '../protocol/errors.js';
import { ADMIN_PREFIX } from '../protocol/method-table.js';
import { NO_SUCH_CORPUS } from '../protocol/corpus-name.js';
import type { MethodDefinition, MethodRegistry } from '../protocol/registry.js';
import { CorpusExists, CorpusNameError, CorpusOpenElsewhere, NoSuchCorpus } from './corpus-dirs.js';
import { CorpusInUse, type NamedCorpora } from './named-corpora.js';
import type { CorpusShelf } from './shelf.js';
import { ShelfUnreachable } from './store-shelf.js';

const Named = Type.Object({ name: Type.String({ maxLength: 64 }), _meta: Type.Optional(Type.Object({})) });
const Nothing = Type.Object({ _meta: Type.Optional(Type.Object({})) });

/**
 * The vendor methods (§6.2) that manage the named corpora of a running server (docs/tenants.md), the `admin` scope's
 * alone (protocol/method-table.ts `ADMIN_PREFIX`): `x-rcp-server/corpora/create {name}`, `…/list {}` and
 * `…/drop {name}`, as `rcp-server corpus` does from the command line. Drop is refused while a request holds the
 * corpus (a write in flight among them) or another process has it open (a folder) or writes to it (a store), and says
 * what it removed.
 */
export function corporaAdminMethods(
  shelf: CorpusShelf,
  corpora: NamedCorpora,
  mayUse: (callerId: string) => (name: string) => boolean,
): (registry: MethodRegistry) => void {
  // §15.6: an administrator manages the corpora its key may use; any other name is answered as one that is not.
  const granted = (caller: string, name: string) => {
    if (!mayUse(caller)(name)) throw NO_SUCH_CORPUS;
  };
  const create: MethodDefinition<typeof Named> = {
    method: `${ADMIN_PREFIX}create`,
    params: Named,
    handler: async ({ name }, ctx) => {
      granted(ctx.caller, name);
      await wireErrorOf(() => shelf.create(name));
      return { name, created: true };
    },
  };
  const list: MethodDefinition<typeof Nothing> = {
    method: `${ADMIN_PREFIX}list`,
    params: Nothing,
    handler: async (_params, ctx) => ({
      corpora: (await wireErrorOf(() => shelf.list()))
        .filter(mayUse(ctx.caller))
        .map((name) => ({ name, open: corpora.isOpen(name) })),
    }),
  };
  const drop: MethodDefinition<typeof Named> = {
    method: `${ADMIN_PREFIX}drop`,
    params: Named,
    handler: async ({ name }, ctx) => {
      granted(ctx.caller, name);
      return { name, dropped: true, ...(await wireErrorOf(() => corpora.drop(name))) };
    },
  };
  return (registry) => registry.register(create, {}).register(list, {}).register(drop, {});
}

/** What `run` resolves to; what the shelf refuses, as the wire error it is. */
async function wireErrorOf<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw wireError(error);
  }
}

function wireError(error: unknown): unknown {
  const detail = (error as Error).message;
  if (error instanceof CorpusNameError || error instanceof CorpusExists) return RpcError.invalidParams('name', detail);
  if (error instanceof NoSuchCorpus) return new RpcError(RpcErrorCode.NotFound, 'not found', { detail });
  if (error instanceof CorpusOpenElsewhere || error instanceof ShelfUnreachable) {
    return RpcError.backendUnavailable(detail, 1000);
  }
  if (error instanceof CorpusInUse) return RpcError.rateLimited(1000, detail);
  return error;
}
