import type { EngineInfo, RemoteEngine } from '../../../src/gateway/remote-engine.js';

/** A RemoteEngine that is only its description: the pure steps never call it. */
export function fakeEngine(
  id: string,
  over: { name?: string; capabilities?: Record<string, unknown>; required?: boolean; weight?: number } = {},
  reached = true,
): RemoteEngine {
  const info: EngineInfo | undefined = reached
    ? { server: { name: over.name ?? id, version: '1' }, capabilities: over.capabilities ?? { retrieve: {} } }
    : undefined;
  const unused = (): never => {
    throw new Error('a pure step called the engine');
  };
  return {
    id,
    weight: over.weight ?? 1,
    required: over.required ?? false,
    priority: 0,
    endpoint: undefined,
    info,
    connect: unused,
    call: unused,
    alive: unused,
    close: unused,
  };
}
