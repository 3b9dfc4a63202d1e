/**
 * The admin API over HTTP, and the exit codes scripts tell outcomes apart by:
 *   0  done
 *   1  the service refused the call (4xx other than 404), or a check failed (trigger test)
 *   2  a command line or input file the CLI cannot use (nothing was sent)
 *   3  not found (404: no such org, trigger, flow, token…)
 *   4  the service failed (5xx) or could not be reached
 * Answers go to stdout, every error to stderr, so `… > answer.json` keeps only the answer.
 */
import { readFileSync } from 'node:fs';
import { printErr } from './terminal-text.js';

export const EXIT = { ok: 0, refused: 1, usage: 2, notFound: 3, unavailable: 4 } as const;

/** The CLI stops with this code; the message (if any) is already on stderr. */
export class Exit extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}

export interface Settings {
  baseUrl: string;
  /** Reads the admin key when a call needs it (offline commands never do). */
  adminKey(): string;
}

/** AUDIENCE_URL (default http://127.0.0.1:8080); AUDIENCE_ADMIN_KEY, or ADMIN_KEY, or DATA_DIR/admin.key. */
export function settingsFrom(env: NodeJS.ProcessEnv): Settings {
  return {
    baseUrl: (env.AUDIENCE_URL ?? 'http://127.0.0.1:8080').replace(/\/$/, ''),
    adminKey() {
      const key = env.AUDIENCE_ADMIN_KEY ?? env.ADMIN_KEY;
      if (key) return key;
      const file = `${env.DATA_DIR ?? './data'}/admin.key`;
      try {
        return readFileSync(file, 'utf8').trim();
      } catch {
        return fail(EXIT.usage, `no admin key: set AUDIENCE_ADMIN_KEY, or run from the directory whose ${file} the service generated`);
      }
    },
  };
}

/** One line on stderr, then the exit code. */
export function fail(code: number, message: string): never {
  printErr(`audiencectl: ${message}`);
  throw new Exit(code);
}

export function exitCodeOf(status: number): number {
  if (status === 404) return EXIT.notFound;
  return status >= 500 ? EXIT.unavailable : EXIT.refused;
}

export interface Answer {
  status: number;
  body: unknown;
}

export class AdminClient {
  constructor(
    private readonly settings: Settings,
    /** How a refusal is shown: problem+json as is (scripts), or one readable line (people). */
    private readonly humanErrors: boolean,
  ) {}

  get baseUrl(): string {
    return this.settings.baseUrl;
  }

  /** A raw response (backup streams its archive); unreachable exits 4. */
  async fetch(method: string, path: string, body?: string, contentType = 'application/json', authorization?: string): Promise<Response> {
    return fetch(this.settings.baseUrl + path, {
      method,
      headers: { authorization: authorization ?? `Bearer ${this.settings.adminKey()}`, ...(body !== undefined ? { 'content-type': contentType } : {}) },
      ...(body !== undefined ? { body } : {}),
    }).catch((error: Error) => fail(EXIT.unavailable, `cannot reach ${this.settings.baseUrl}: ${(error.cause as Error | undefined)?.message ?? error.message}`));
  }

  /**
   * JSON bodies by default; a string is sent as is with its own content type (imports). A refusal goes to
   * stderr and ends the CLI with its exit code.
   */
  async call(method: string, path: string, body?: unknown, contentType = 'application/json', authorization?: string): Promise<unknown> {
    const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    const res = await this.fetch(method, path, payload, contentType, authorization);
    const text = await res.text();
    const parsed = parseJson(text);
    if (res.ok) return parsed;
    this.refused(res.status, parsed);
  }

  refused(status: number, problem: unknown): never {
    if (this.humanErrors && problem !== null && typeof problem === 'object') {
      const { code, title, detail } = problem as { code?: string; title?: string; detail?: string };
      printErr(`audiencectl: ${status} ${code ?? title ?? 'error'}: ${detail ?? title ?? ''}`.trimEnd());
    } else printErr(typeof problem === 'string' ? problem : JSON.stringify(problem, null, 2));
    throw new Exit(exitCodeOf(status));
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
