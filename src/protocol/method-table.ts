/**
 * §7: every RCP/1 method and the capability that gates it. `null` marks the four methods that are always
 * served (§7.1, §7.2, §7.12, §7.15). Vendor extension methods `x-<vendor>/<name>` are gated by the
 * capability key `x-<vendor>` (§6.2).
 */
export const CORE_METHODS = {
  initialize: null,
  info: null,
  ping: null,
  shutdown: null,
  embed: 'embed',
  'embed/sparse': 'sparseEmbed',
  'embed/multi': 'multiVector',
  rerank: 'rerank',
  retrieve: 'retrieve',
  'query/transform': 'transform',
  graph: 'graph',
  'index/add': 'index',
  'index/delete': 'index',
  'catalog/list': 'catalog',
  feedback: 'feedback',
  'memory/build': 'memory',
  'memory/recall': 'memory',
} as const satisfies Record<string, string | null>;

export type CoreMethod = keyof typeof CORE_METHODS;
export type GatedMethod = { [M in CoreMethod]: (typeof CORE_METHODS)[M] extends null ? never : M }[CoreMethod];

const VENDOR_METHOD = /^(x-[a-z0-9-]+)\/.+$/;

export function isCoreMethod(method: string): method is CoreMethod {
  return Object.hasOwn(CORE_METHODS, method);
}

/** The capability key that gates `method`, or undefined when the method is not gated (or not an RCP name). */
export function capabilityFor(method: string): string | undefined {
  if (isCoreMethod(method)) return CORE_METHODS[method] ?? undefined;
  return VENDOR_METHOD.exec(method)?.[1];
}

/**
 * What a method asks of the caller's credentials (§15.3: writes are authorised apart from reads): the lifecycle
 * (§13) and notifications any caller may send; the methods that change what the server holds for everyone
 * (`index/*`, `memory/build`) are writes; everything else, vendor methods and unknown names included, is a read.
 */
export type MethodAccess = 'lifecycle' | 'read' | 'write';

const WRITE_METHODS: ReadonlySet<string> = new Set<CoreMethod>(['index/add', 'index/delete', 'memory/build']);

export function accessFor(method: string): MethodAccess {
  if (method.startsWith('notifications/') || (isCoreMethod(method) && CORE_METHODS[method] === null)) {
    return 'lifecycle';
  }
  return WRITE_METHODS.has(method) ? 'write' : 'read';
}

export function isVendorMethod(method: string): boolean {
  return VENDOR_METHOD.test(method);
}

/** Capability keys whose presence makes a server a retrieval server (§14.1 item 2). */
export const RETRIEVAL_CAPABILITIES = ['embed', 'rerank', 'retrieve', 'graph'] as const;
