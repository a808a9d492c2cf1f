import type { Frame } from './wire.js';

/** A JSON-RPC error member as the tests read it: its code and the RCP data object (§12). */
export interface RpcErrorMember {
  code: number;
  data: Record<string, unknown>;
}

/**
 * The error member of a reply (a batch reply is read as one message), as the server sent it and unchecked: undefined
 * when the reply has none, whatever the type says, so `expect(error(frame)).toMatchObject(…)` reads a missing error as
 * a failure.
 */
export function error(frame: Frame | Frame[]): RpcErrorMember {
  return (frame as Frame).error as RpcErrorMember;
}
