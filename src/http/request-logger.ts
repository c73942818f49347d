import type { Bindings, ChildLoggerOptions, Logger } from 'pino';

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

/**
 * A request's logger (`request.log`, the handlers' `ctx.log`) that becomes pino's child logger
 * only when something is logged at a level that is on. Fastify makes a child logger per request
 * (its bindings — the request id — serialised at once); most requests log nothing at the
 * configured level (`LOG_LEVEL=warn`, a request without an error), so that work is skipped.
 * What is logged is the same as pino's child would log: the same child, made on first use.
 */
class RequestLogger {
  private made: Logger | undefined;

  constructor(
    private readonly parent: Logger,
    private readonly bindings: Bindings,
  ) {}

  private logger(): Logger {
    return (this.made ??= this.parent.child(this.bindings));
  }

  get level(): string {
    return (this.made ?? this.parent).level;
  }

  set level(level: string) {
    this.logger().level = level;
  }

  isLevelEnabled(level: string): boolean {
    return (this.made ?? this.parent).isLevelEnabled(level);
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): Logger {
    return this.logger().child(bindings, options);
  }

  silent(): void {}

  fatal(...args: unknown[]): void {
    this.log('fatal', args);
  }

  error(...args: unknown[]): void {
    this.log('error', args);
  }

  warn(...args: unknown[]): void {
    this.log('warn', args);
  }

  info(...args: unknown[]): void {
    this.log('info', args);
  }

  debug(...args: unknown[]): void {
    this.log('debug', args);
  }

  trace(...args: unknown[]): void {
    this.log('trace', args);
  }

  private log(level: Level, args: unknown[]): void {
    if (this.made === undefined && !this.parent.isLevelEnabled(level)) return;
    this.logger()[level](...(args as [unknown]));
  }
}

/**
 * Fastify's `childLoggerFactory`: a {@link RequestLogger}, or pino's own child when the route
 * asks for options of its own (a log level, serialisers — no Lattice route does).
 */
export function requestLogger(logger: Logger, bindings: Bindings, options: ChildLoggerOptions): Logger {
  // Any option at all (Fastify sets only `level` and `serializers`).
  for (const _ in options) return logger.child(bindings, options);
  return new RequestLogger(logger, bindings) as unknown as Logger;
}
