import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Registry } from 'prom-client';
import { RpcError } from '../protocol/errors.js';
import { mayMonitor, type ApiKeys } from './auth.js';

export interface OperatorOptions {
  /** Readiness at `/readyz`: every configured model loaded and the corpus open; absent serves none. */
  health?: (() => { ready: boolean; [detail: string]: unknown }) | undefined;
  /** Prometheus metrics at `metricsPath`; absent or an empty path serves none. */
  metrics?: Registry | undefined;
  metricsPath: string;
  /** When keys are configured, `/readyz` and the metrics need one with the `monitor` (or `admin`) scope. */
  auth?: ApiKeys | undefined;
}

/**
 * Endpoints for orchestrators and operators, beside the RCP ones or on a listener of their own. `/healthz` says only
 * that the process serves, so it stays open for liveness probes; `/readyz` (model and corpus state) and the metrics
 * (request counts, corpus size, build) tell about the deployment, so with keys configured they answer one uniform
 * 401 without a `monitor` key. On the operator listener (`http.operatorPort`), which is the operator's own network,
 * no key is asked.
 */
export function operatorRoutes(app: FastifyInstance, options: OperatorOptions): void {
  const guard = guardFor(options.auth);
  app.get('/healthz', () => ({ status: 'ok' }));
  const health = options.health;
  if (health !== undefined) {
    app.get('/readyz', { onRequest: guard }, (_request, reply) => {
      const state = health();
      return reply.code(state.ready ? 200 : 503).send({ status: state.ready ? 'ready' : 'not ready', ...state });
    });
  }
  const registry = options.metrics;
  if (registry !== undefined && options.metricsPath !== '') {
    app.get(options.metricsPath, { onRequest: guard }, async (_request, reply) =>
      reply.header('content-type', registry.contentType).send(await registry.metrics()),
    );
  }
}

type Guard = (request: FastifyRequest, reply: FastifyReply) => Promise<void>;

function guardFor(auth: ApiKeys | undefined): Guard {
  return async (request, reply) => {
    if (auth?.enabled !== true) return;
    const caller = auth.authenticate(request.headers.authorization);
    if (!(caller instanceof RpcError) && mayMonitor(caller)) return;
    await reply.code(401).header('www-authenticate', 'Bearer').send({ status: 'unauthorized' });
  };
}
