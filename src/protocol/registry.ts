import type { Static, TSchema } from '@sinclair/typebox';
import type { RequestContext } from './context.js';
import type { JsonObject } from './messages.js';
import { capabilityFor, isCoreMethod, isVendorMethod } from './method-table.js';
import { compileParams, type ParamsValidator } from './validation.js';

/**
 * §12: a requested option value that is well-formed but not advertised is -32005 with `data.option`.
 * `path` is dotted (`rerank.method`); `supported` is read when the option is checked, so it always
 * equals what the capability advertises.
 */
export interface OptionRule {
  path: string;
  supported: readonly string[];
}

/** One declaration per method: its name, params schema, advertised options and handler (docs/architecture.md §5). */
export interface MethodDefinition<S extends TSchema = TSchema> {
  method: string;
  params: S;
  options?: readonly OptionRule[];
  handler: (params: Static<S>, ctx: RequestContext) => Promise<JsonObject> | JsonObject;
}

export interface RegisteredMethod {
  method: string;
  capability: string;
  /** The declared params schema (what `validate` was compiled from). */
  params: TSchema;
  options: readonly OptionRule[];
  validate: ParamsValidator<unknown>;
  handler: (params: unknown, ctx: RequestContext) => Promise<JsonObject> | JsonObject;
}

/** Capability keys that describe features rather than gate a method (§6). */
const FEATURE_CAPABILITIES = new Set(['filter', 'streaming', 'pagination', 'citations', 'log', 'session']);

/**
 * Methods and the capabilities they advertise. A capability is advertised exactly when a handler for it is
 * registered (or, for a feature, when it is declared), so "advertised" and "implemented" cannot drift
 * (docs/architecture.md §4.4).
 */
export class MethodRegistry {
  readonly #methods = new Map<string, RegisteredMethod>();
  readonly #capabilities = new Map<string, JsonObject>();
  #frozen: JsonObject | undefined;

  register<S extends TSchema>(definition: MethodDefinition<S>, capabilityValue: JsonObject): this {
    const { method } = definition;
    const capability = capabilityFor(method);
    if (capability === undefined || !(isCoreMethod(method) || isVendorMethod(method))) {
      throw new Error(`cannot register '${method}': not a gated RCP method or an x-<vendor>/ extension`);
    }
    if (this.#methods.has(method)) throw new Error(`method '${method}' is registered twice`);
    this.#merge(capability, capabilityValue);
    this.#methods.set(method, {
      method,
      capability,
      params: definition.params,
      options: definition.options ?? [],
      validate: compileParams(definition.params),
      // Sound: `validate` guarantees params of type Static<S> before the handler runs.
      handler: definition.handler,
    });
    return this;
  }

  /** Declares a feature capability (`streaming`, `filter`, ...) or a vendor `x-` key. */
  advertise(capability: string, value: JsonObject): this {
    if (!FEATURE_CAPABILITIES.has(capability) && !capability.startsWith('x-')) {
      throw new Error(`'${capability}' gates a method: register the method instead`);
    }
    this.#merge(capability, value);
    return this;
  }

  get(method: string): RegisteredMethod | undefined {
    return this.#methods.get(method);
  }

  /** Every registered method, in registration order. */
  methods(): RegisteredMethod[] {
    return [...this.#methods.values()];
  }

  /** A fresh, deep copy of the advertised capability set. */
  capabilities(): JsonObject {
    return structuredClone(Object.fromEntries(this.#capabilities));
  }

  /** The advertised set as one deep-frozen copy, shared by every session that fixes it (§13.2). */
  frozenCapabilities(): JsonObject {
    return (this.#frozen ??= deepFreeze(this.capabilities()));
  }

  #merge(capability: string, value: JsonObject): void {
    this.#frozen = undefined;
    // Two methods under one capability (index/add + index/delete) contribute to one advertised object.
    this.#capabilities.set(capability, { ...this.#capabilities.get(capability), ...value });
  }
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    Object.values(value).forEach(deepFreeze);
    Object.freeze(value);
  }
  return value;
}
