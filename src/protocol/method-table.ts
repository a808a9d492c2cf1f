/**
 * What a method asks of the caller's credentials (§15.3: writes are authorised apart from reads): the lifecycle
 * (§13) and notifications any caller may send; the methods that change what the server holds for everyone are
 * writes; the vendor methods that manage the server itself (`x-rcp-server/corpora/…`, docs/tenants.md) are the
 * administrator's; everything else, other vendor methods and unknown names included, is a read.
 */
export type MethodAccess = 'lifecycle' | 'read' | 'write' | 'admin';

/** The rate-limit bucket a method draws from (§15.5): model inference, corpus writes, or everything else. */
export type MethodClass = 'reads' | 'writes' | 'models';

/** Everything the server knows about a method apart from its handler: one declaration, read by every layer. */
export interface MethodDeclaration {
  /** Where RCP/1 defines it. */
  readonly section: string;
  /** The capability key that gates it (§6.2); null: always served (§7.1, §7.2, §7.12, §7.15). */
  readonly capability: string | null;
  readonly access: MethodAccess;
  /** Its rate-limit bucket; none for the lifecycle, so a limited caller can still probe and say goodbye. */
  readonly rateClass: MethodClass | null;
}

const lifecycle = (section: string) => ({ section, capability: null, access: 'lifecycle', rateClass: null }) as const;
const read = (section: string, capability: string, rateClass: MethodClass = 'reads') =>
  ({ section, capability, access: 'read', rateClass }) as const;
const write = (section: string, capability: string, rateClass: MethodClass) =>
  ({ section, capability, access: 'write', rateClass }) as const;

/**
 * §7: every RCP/1 method. Vendor extension methods `x-<vendor>/<name>` are gated by the capability key
 * `x-<vendor>` (§6.2), are reads, and draw from `reads`. (`memory/build` writes memory but is rate-limited as a
 * read: its cost is a retrieve's.)
 */
export const METHODS = {
  initialize: lifecycle('§7.1'),
  info: lifecycle('§7.2'),
  ping: lifecycle('§7.15'),
  shutdown: lifecycle('§7.12'),
  embed: read('§7.3', 'embed', 'models'),
  'embed/sparse': read('§7.4', 'sparseEmbed', 'models'),
  'embed/multi': read('§7.5', 'multiVector', 'models'),
  rerank: read('§7.6', 'rerank', 'models'),
  retrieve: read('§7.7', 'retrieve'),
  'query/transform': read('§7.8', 'transform'),
  graph: read('§7.9', 'graph'),
  'index/add': write('§7.10', 'index', 'writes'),
  'index/delete': write('§7.11', 'index', 'writes'),
  'catalog/list': read('§7.13', 'catalog'),
  feedback: read('§7.16', 'feedback'),
  'memory/build': write('§7.17', 'memory', 'reads'),
  'memory/recall': read('§7.17', 'memory'),
} as const satisfies Record<string, MethodDeclaration>;

export type CoreMethod = keyof typeof METHODS;

const VENDOR_METHOD = /^(x-[a-z0-9-]+)\/.+$/;

/** This server's own vendor methods that create and drop corpora (docs/tenants.md): the `admin` scope's alone. */
export const ADMIN_PREFIX = 'x-rcp-server/corpora/';

export function isCoreMethod(method: string): method is CoreMethod {
  return Object.hasOwn(METHODS, method);
}

/** The capability key that gates `method`, or undefined when the method is not gated (or not an RCP name). */
export function capabilityFor(method: string): string | undefined {
  if (isCoreMethod(method)) return METHODS[method].capability ?? undefined;
  return VENDOR_METHOD.exec(method)?.[1];
}

export function accessFor(method: string): MethodAccess {
  if (method.startsWith('notifications/')) return 'lifecycle';
  if (method.startsWith(ADMIN_PREFIX)) return 'admin';
  return isCoreMethod(method) ? METHODS[method].access : 'read';
}

/** The rate-limit bucket `method` draws from; undefined for the lifecycle and notifications (never limited). */
export function rateClassOf(method: string): MethodClass | undefined {
  if (method.startsWith('notifications/')) return undefined;
  return isCoreMethod(method) ? (METHODS[method].rateClass ?? undefined) : 'reads';
}

export function isVendorMethod(method: string): boolean {
  return VENDOR_METHOD.test(method);
}

/** Capability keys whose presence makes a server a retrieval server (§14.1 item 2). */
export const RETRIEVAL_CAPABILITIES = ['embed', 'rerank', 'retrieve', 'graph'] as const;
