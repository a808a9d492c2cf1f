import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { pino } from 'pino';
import type { Config } from './config.js';
import { MethodRegistry } from './protocol/registry.js';
import { Session, type SessionOptions } from './protocol/session.js';
import { HttpSessionStore } from './transport/http-sessions.js';
import { rcpHttp } from './transport/http.js';

export interface AppOptions {
  /** Extra registrations (tests register test-only methods here). */
  register?: (registry: MethodRegistry) => void;
  /** The logger for HTTP request logs (a pino instance); none when absent. */
  logger?: FastifyBaseLogger;
}

export interface App {
  readonly config: Config;
  readonly registry: MethodRegistry;
  /** A new RCP session over this app's methods (one per stdio connection or HTTP session). */
  readonly createSession: (options?: SessionOptions) => Session;
  /** A ready Fastify instance serving the RCP HTTP transport; the caller listens. */
  buildHttp(): Promise<FastifyInstance>;
  close(): Promise<void>;
}

/**
 * The composition root (DESIGN §1): builds the method registry from configuration and hands out sessions
 * and the HTTP server. It listens on nothing itself: main.ts chooses a transport, tests build this.
 */
export function createApp(config: Config, options: AppOptions = {}): App {
  const registry = new MethodRegistry();
  // Later issues register embed, rerank, retrieve and index/* here, each only when its backend is configured.
  options.register?.(registry);

  const limits = { maxBatchSize: config.limits.maxBatchSize, requestTimeoutMs: config.limits.requestTimeoutMs };
  const createSession = (sessionOptions: SessionOptions = {}): Session =>
    new Session(registry, config.server, limits, sessionOptions);

  const servers: FastifyInstance[] = [];
  return {
    config,
    registry,
    createSession,
    async buildHttp() {
      const app: FastifyInstance = Fastify({
        loggerInstance: options.logger ?? pino({ level: 'silent' }),
        trustProxy: config.http.trustProxy,
        bodyLimit: config.limits.maxBodyBytes,
        // Let the client hang up rather than the server cut a long retrieve short; deadlines are §13.1's job.
        requestTimeout: 0,
      });
      const sessions = new HttpSessionStore(createSession, {
        mode: config.http.sessions,
        idleMs: config.http.sessionIdleMs,
        maxSessions: config.http.maxSessions,
      });
      await app.register(rcpHttp, {
        base: config.http.base,
        sessions,
        bodyLimit: config.limits.maxBodyBytes,
        corsOrigins: config.http.corsOrigins,
      });
      await app.ready();
      servers.push(app);
      return app;
    },
    async close() {
      await Promise.all(servers.splice(0).map((server) => server.close()));
    },
  };
}

