import { Type } from '@sinclair/typebox';
import type { RemoteEngine } from './remote-engine.js';
import type { RequestContext } from '../protocol/context.js';
import type { JsonObject } from '../protocol/messages.js';
import { METHODS } from '../protocol/method-table.js';
import type { MethodRegistry } from '../protocol/registry.js';
import { firstAnswer } from './failover.js';

/**
 * The Selector (§7.15, §16, `rcp-server gateway --select primary`): every call goes to the highest-priority live
 * engine and fails over, in priority order, when that engine answers -32010 or its link dies. Liveness is `ping`
 * (§7.15), probed every `probeIntervalMs`; an engine that misses a probe is passed over until it answers one again
 * (if none is live, all are tried). The capability set is the primary's at start (§13.2); feature capabilities
 * are passed through except those a relay cannot keep (streaming progress, log).
 */
export interface SelectorSettings {
  readonly probeIntervalMs: number;
}

const AnyParams = Type.Object({});
const NOT_RELAYED = new Set(['streaming', 'log', 'catalog']);
const FEATURES = new Set(['filter', 'pagination', 'citations', 'session']);

export class Selector {
  readonly #ordered: readonly RemoteEngine[];
  readonly #live = new Map<string, boolean>();
  readonly #probe: NodeJS.Timeout;

  constructor(
    engines: readonly RemoteEngine[],
    private readonly settings: SelectorSettings,
  ) {
    this.#ordered = [...engines].sort((a, b) => b.priority - a.priority);
    for (const engine of this.#ordered) this.#live.set(engine.id, engine.info !== undefined);
    this.#probe = setInterval(() => void this.probe(), settings.probeIntervalMs);
    this.#probe.unref();
  }

  /** Pings every engine once; resolves when all have answered or timed out. */
  async probe(): Promise<void> {
    await Promise.all(
      this.#ordered.map(async (engine) =>
        this.#live.set(engine.id, await engine.alive(Math.min(1000, this.settings.probeIntervalMs))),
      ),
    );
  }

  /** The engines in the order a call tries them: live ones by priority, or all of them when none is live. */
  candidates(): RemoteEngine[] {
    const live = this.#ordered.filter((engine) => this.#live.get(engine.id) === true);
    return live.length > 0 ? live : [...this.#ordered];
  }

  register(registry: MethodRegistry): void {
    const primary = this.#ordered.find((engine) => engine.info !== undefined);
    const capabilities = primary?.info?.capabilities ?? {};
    for (const [method, { capability }] of Object.entries(METHODS)) {
      if (capability === null || NOT_RELAYED.has(capability) || !(capability in capabilities)) continue;
      registry.register(
        { method, params: AnyParams, handler: (params, ctx) => this.#route(method, params, ctx) },
        capabilities[capability] as JsonObject,
      );
    }
    for (const feature of FEATURES) {
      if (feature in capabilities) registry.advertise(feature, capabilities[feature] as JsonObject);
    }
  }

  close(): void {
    clearInterval(this.#probe);
  }

  #route(method: string, params: JsonObject, ctx: RequestContext): Promise<JsonObject> {
    return firstAnswer(this.candidates(), method, params, ctx, (engine) => this.#live.set(engine.id, false));
  }
}
