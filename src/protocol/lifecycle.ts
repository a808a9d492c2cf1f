import { Type } from '@sinclair/typebox';
import { RpcError } from './errors.js';
import type { JsonObject } from './messages.js';
import { RETRIEVAL_CAPABILITIES } from './method-table.js';
import { compileParams } from './validation.js';

/** The protocol versions this server speaks: the contiguous range [1 .. PROTOCOL_VERSION] (§7.1). */
export const PROTOCOL_VERSION = 1;
export const MIN_PROTOCOL_VERSION = 1;

const PeerInfo = Type.Object({
  name: Type.String({ maxLength: 256 }),
  version: Type.Optional(Type.String({ maxLength: 256 })),
});

/**
 * §15.5: what a session keeps of the client's capabilities is bounded — a session lives long and there may be
 * thousands — and no RCP capability set comes near this.
 */
export const MAX_CLIENT_CAPABILITY_BYTES = 8 * 1024;

/** §7.1 the params of `initialize`. */
export const InitializeParams = Type.Object({
  // Range is checked by negotiate() so that 0 is -32002 (§7.1), not -32602.
  protocolVersion: Type.Integer(),
  client: Type.Optional(PeerInfo),
  capabilities: Type.Optional(Type.Object({})),
});

/** §7.15 the params of `ping`. */
export const PingParams = Type.Object({ nonce: Type.Optional(Type.Union([Type.String(), Type.Number()])) });

export const validateInitializeParams = compileParams(InitializeParams);

export const validatePingParams = compileParams(PingParams);

/** §7.1: the negotiated version is min(client, server); -32002 only when no version >= 1 is common. */
export function negotiate(clientVersion: number): number {
  const version = Math.min(clientVersion, PROTOCOL_VERSION);
  if (version < MIN_PROTOCOL_VERSION) {
    throw RpcError.versionMismatch(clientVersion, range(MIN_PROTOCOL_VERSION, PROTOCOL_VERSION));
  }
  return version;
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

export type ConformanceLevel = 'L0' | 'L1' | 'L2';

/**
 * §14: the level this capability set can honestly claim. L0 needs a retrieval capability (§14.1 item 2);
 * L1 needs retrieve with all three modes, filter and citations (§14.2); L2 adds at least three SOTA surfaces (§14.3).
 * Undefined when even L0 is out of reach: declaring a level the harness cannot certify is an overclaim (§14.5).
 */
export function conformanceLevel(capabilities: JsonObject): ConformanceLevel | undefined {
  if (!RETRIEVAL_CAPABILITIES.some((key) => key in capabilities)) return undefined;
  const retrieve = capabilities.retrieve as { modes?: unknown } | undefined;
  const modes = Array.isArray(retrieve?.modes) ? retrieve.modes : [];
  const l1 =
    ['dense', 'sparse', 'hybrid'].every((mode) => modes.includes(mode)) &&
    'filter' in capabilities &&
    'citations' in capabilities;
  if (!l1) return 'L0';
  const sota = ['rerank', 'multiVector', 'sparseEmbed', 'transform', 'graph', 'streaming', 'pagination', 'log'];
  return sota.filter((key) => key in capabilities).length >= 3 ? 'L2' : 'L1';
}
