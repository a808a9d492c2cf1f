import { createApp, type App, type AppOptions } from '../app.js';
import { Engine, type EngineSpec } from './engine.js';
import { FailFastEngine } from './fail-fast.js';
import type { Config } from '../config/index.js';
import { registerFederation } from './federation.js';
import { ReplicaGroup } from './replica-group.js';
import { Selector } from './selector.js';

/**
 * The gateway's composition root (§16): engines from the registry, initialized once at start (each waited for up to
 * `federation.connectTimeoutMs`; one that does not answer is served without, named in readiness, and tried again
 * every 2 s), and an app whose methods are the federated ones. The capability set is fixed at start from the engines
 * reached then (§13.2). Everything else — transports, auth, limits, metrics, logs — is the app's.
 */
export async function createGateway(
  config: Config,
  specs: readonly EngineSpec[],
  logger: NonNullable<AppOptions['logger']>,
  mode: 'federate' | 'select' = 'federate',
): Promise<App> {
  const { federation } = config;
  const client = { name: federation.id, version: config.server.version };
  // An engine that stops answering is marked down and failed fast, not waited on by every request (fail-fast.ts).
  const failFast = { downAfter: federation.downAfter, downForMs: federation.downForMs };
  const engine = (spec: EngineSpec) => new FailFastEngine(new Engine(spec, client, logger), failFast, logger);
  // A registry entry with `urls` is one engine that its replicas serve, each member behind a fail-fast of its own.
  const engines = specs.map((spec) =>
    spec.urls === undefined
      ? engine(spec)
      : new ReplicaGroup(
          spec,
          spec.urls.map((url, i) => engine({ ...spec, id: `${spec.id}/${i + 1}`, url, urls: undefined })),
        ),
  );
  await Promise.all(
    engines.map((engine) =>
      engine.connect(federation.connectTimeoutMs).catch((error: unknown) => {
        logger.warn(
          { engine: engine.id, reason: (error as Error).message },
          'engine did not initialize; serving without it',
        );
      }),
    ),
  );
  // An engine that was down at start is tried again in the background; once it answers it takes part in queries.
  const reconnect = setInterval(() => {
    for (const engine of engines) if (engine.info === undefined) engine.connect(2000).catch(() => undefined);
  }, 2000);
  reconnect.unref();
  const settings = {
    id: federation.id,
    depth: federation.depth,
    fusion: federation.fusion,
    fusionReserveMs: federation.fusionReserveMs,
    attempts: federation.attempts,
  };
  const selector =
    mode === 'select' ? new Selector(engines, { probeIntervalMs: federation.probeIntervalMs }) : undefined;
  const gatewayConfig: Config = {
    ...config,
    // The gateway has no models and no corpus of its own; its name is its identity on federation paths.
    server: { ...config.server, name: federation.id },
    models: { ...config.models, encoder: 'none', reranker: 'none', colbert: false },
  };
  return createApp(gatewayConfig, {
    logger,
    methods: (registry) =>
      selector === undefined ? registerFederation(registry, engines, settings) : selector.register(registry),
    downstream: () => engines.flatMap((engine) => (engine instanceof ReplicaGroup ? engine.states : [engine.state])),
    health: () => {
      const reached = engines.filter((engine) => engine.info !== undefined).map((engine) => engine.id);
      return {
        ready: reached.length > 0,
        engines: { reached, missing: engines.filter((e) => e.info === undefined).map((e) => e.id) },
      };
    },
    onClose: async () => {
      clearInterval(reconnect);
      selector?.close();
      await Promise.all(engines.map((engine) => engine.close()));
    },
  });
}
