import type { FastifyBaseLogger } from 'fastify';

type Bindings = Record<string, unknown>;
type ChildOptions = Parameters<FastifyBaseLogger['child']>[1];

/**
 * Fastify gives every request a child logger carrying its id. Made eagerly (pino's `child`) it cost as much as the
 * rest of a `ping` taken together, and nothing logs through it unless a request fails: this one is made on the first
 * line logged, with the same bindings, so a request that logs nothing costs one small object.
 */
class LazyChildLogger {
  #child: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildOptions,
  ) {}

  get #logger(): FastifyBaseLogger {
    return (this.#child ??= this.parent.child(this.bindings, this.options));
  }

  get level(): string {
    return this.#child?.level ?? this.options?.level ?? this.parent.level;
  }

  set level(level: string) {
    this.#logger.level = level;
  }

  fatal(...args: Parameters<FastifyBaseLogger['fatal']>): void {
    this.#logger.fatal(...args);
  }

  error(...args: Parameters<FastifyBaseLogger['error']>): void {
    this.#logger.error(...args);
  }

  warn(...args: Parameters<FastifyBaseLogger['warn']>): void {
    this.#logger.warn(...args);
  }

  info(...args: Parameters<FastifyBaseLogger['info']>): void {
    this.#logger.info(...args);
  }

  debug(...args: Parameters<FastifyBaseLogger['debug']>): void {
    this.#logger.debug(...args);
  }

  trace(...args: Parameters<FastifyBaseLogger['trace']>): void {
    this.#logger.trace(...args);
  }

  silent(...args: Parameters<FastifyBaseLogger['silent']>): void {
    this.#logger.silent(...args);
  }

  child(bindings: Bindings, options?: ChildOptions): FastifyBaseLogger {
    return this.#logger.child(bindings, options);
  }
}

/** Fastify's `childLoggerFactory` (its signature) making request loggers on first use. */
export function lazyChildLogger(
  parent: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildOptions,
): FastifyBaseLogger {
  return new LazyChildLogger(parent, bindings, options);
}
