/**
 * The JSON body parser of every route: Fastify's own (same proto-poisoning rules), then a nesting
 * bound. JSON.parse copes with any depth, but what comes after does not: JSON.stringify (storing an
 * event) and any recursive walk overflow the stack at a few thousand levels, which answered 500 and
 * lost the event. No real event comes close to the limit (ours nest 4–5 levels).
 */
import type { FastifyInstance } from 'fastify';
import { AppError } from '../core/errors.js';

/** Objects and arrays nested deeper than this are refused (`{}` is depth 1). */
export const MAX_JSON_DEPTH = 64;

declare module 'fastify' {
  interface FastifyContextConfig {
    keepJsonText?: boolean;
  }
}

/** The route config that keeps a body's text for its handler (`takeJsonText`): a route that stores a body as it arrived. */
export const KEEP_JSON_TEXT = { keepJsonText: true } as const;

/** The texts of parsed bodies of routes with KEEP_JSON_TEXT, until the handler takes them. */
const texts = new WeakMap<object, string>();

/** The text `body` was parsed from, given once (so it is not kept as long as the body); undefined for a value this parser did not keep. */
export function takeJsonText(body: object): string | undefined {
  const text = texts.get(body);
  texts.delete(body);
  return text;
}

/** `contentType`: another type whose bodies are JSON too (analytics.js sends JSON as text/plain). */
export function registerJsonBodyParser(app: FastifyInstance, contentType = 'application/json'): void {
  const { onProtoPoisoning, onConstructorPoisoning } = app.initialConfig;
  const parseJson = app.getDefaultJsonParser(onProtoPoisoning ?? 'error', onConstructorPoisoning ?? 'error');
  if (app.hasContentTypeParser(contentType)) app.removeContentTypeParser(contentType);
  app.addContentTypeParser(contentType, { parseAs: 'string' }, (request, body, done) => {
    parseJson(request, body as string, (error, value) => {
      if (error) done(error, undefined);
      else if (!nestedWithin(value, MAX_JSON_DEPTH)) done(tooDeep(), undefined);
      else {
        if (typeof value === 'object' && value !== null && request.routeOptions.config.keepJsonText) texts.set(value, body as string);
        done(null, value);
      }
    });
  });
}

export function tooDeep(): AppError {
  return new AppError(
    'json_too_deep',
    `The JSON body nests objects or arrays more than ${MAX_JSON_DEPTH} levels deep; flatten it to at most ${MAX_JSON_DEPTH} levels.`,
  );
}

/**
 * True when no object or array in `value` is nested more than `limit` levels deep. The recursion is
 * itself bounded by `limit`, so a hostile body cannot overflow the stack here. Primitives are skipped
 * without a call: on a typical 650-byte event this costs ~1 µs, a few percent of JSON.parse.
 */
export function nestedWithin(value: unknown, limit: number): boolean {
  if (value === null || typeof value !== 'object') return true;
  if (limit === 0) return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      if (typeof item === 'object' && item !== null && !nestedWithin(item, limit - 1)) return false;
    }
    return true;
  }
  for (const key in value) {
    const member = (value as Record<string, unknown>)[key];
    if (typeof member === 'object' && member !== null && !nestedWithin(member, limit - 1)) return false;
  }
  return true;
}
