/**
 * Fastify gives every request a child logger bound to its request id; pino's child() copies the
 * parent's bindings and serializers, ~3 µs of a ~60 µs lookup, though requests are logged only at debug
 * and almost none ever logs a line. This factory hands Fastify a stand-in that makes the real child on
 * the first line logged (or the first `child()`), with the same bindings and options: what is logged,
 * and how, does not change.
 */
import type { FastifyBaseLogger } from 'fastify';
import { type Bindings, type ChildLoggerOptions, type LevelWithSilentOrString, levels } from 'pino';

/** pino's LogFn without its overloads: the stand-in passes whatever it is given on. */
type Log = (...args: unknown[]) => void;

/** Methods on the prototype: nothing is allocated per request but the stand-in itself. */
class LazyChildLogger {
  private made: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  private get real(): FastifyBaseLogger {
    return (this.made ??= this.parent.child(this.bindings, this.options));
  }

  /** A line below the level is dropped without making the child, as the child would drop it. */
  private enabled(level: string): boolean {
    if (this.made) return true;
    const threshold = levels.values[this.options.level ?? this.parent.level];
    return threshold === undefined ? false : levels.values[level]! >= threshold;
  }

  get level(): LevelWithSilentOrString {
    return this.made?.level ?? this.options.level ?? this.parent.level;
  }

  set level(level: LevelWithSilentOrString) {
    this.real.level = level;
  }

  fatal(...args: unknown[]): void {
    if (this.enabled('fatal')) (this.real.fatal as Log)(...args);
  }

  error(...args: unknown[]): void {
    if (this.enabled('error')) (this.real.error as Log)(...args);
  }

  warn(...args: unknown[]): void {
    if (this.enabled('warn')) (this.real.warn as Log)(...args);
  }

  info(...args: unknown[]): void {
    if (this.enabled('info')) (this.real.info as Log)(...args);
  }

  debug(...args: unknown[]): void {
    if (this.enabled('debug')) (this.real.debug as Log)(...args);
  }

  trace(...args: unknown[]): void {
    if (this.enabled('trace')) (this.real.trace as Log)(...args);
  }

  silent(...args: unknown[]): void {
    (this.real.silent as Log)(...args);
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.real.child(bindings, options);
  }
}

/** Fastify's `childLoggerFactory`. */
export function lazyChildLogger(parent: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  return new LazyChildLogger(parent, bindings, options) as unknown as FastifyBaseLogger;
}
