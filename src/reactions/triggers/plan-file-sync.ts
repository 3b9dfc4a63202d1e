/**
 * Tracking plans kept in git (issue 42): QUERIES_DIR/<org>/plans/<event type>.schema.json holds a plan's
 * JSON Schema. A file whose text changed (or that differs from the plan in force, at start) is PUT as a new
 * version of the plan, keeping the plan's mode and environments (observe and production for a plan the file
 * creates: those are operational settings, set with PUT or `audiencectl plan put`). A PUT writes the file,
 * so the file and the plan in force agree. A file that is not JSON, or whose schema is refused, is logged
 * once per text and leaves the plan in force as it was. Removing a file leaves the plan: DELETE removes it.
 */
import { isDeepStrictEqual } from 'node:util';
import type { FastifyBaseLogger } from 'fastify';
import { AppError } from '../../core/errors.js';
import { sha256Hex } from '../../core/secrets.js';
import type { PlanStore } from '../../events/plans/plan-store.js';
import { listPlanFiles, type QueryRoot, readPlanFile, writePlanFile } from './query-files.js';

export class PlanFileSync {
  private readonly root: QueryRoot;
  /** Per org and event type, the hash of the file's text last taken in (or written). */
  private readonly seen = new Map<string, string>();

  constructor(
    queriesDir: string,
    private readonly deps: { plans: Pick<PlanStore, 'get' | 'put'>; logger: FastifyBaseLogger },
  ) {
    this.root = { dir: queriesDir, shown: 'QUERIES_DIR' };
  }

  /** One pass over the orgs' plans folders. */
  async scan(orgs: readonly string[]): Promise<void> {
    for (const org of orgs) {
      const listing = listPlanFiles(this.root, org);
      if (listing.kind !== 'listed') continue;
      for (const eventType of listing.names) await this.takeIn(org, eventType);
    }
  }

  /** A PUT's schema, written as the file (and known, so the next scan does not take it in again). */
  saved(org: string, eventType: string, schema: object): void {
    const text = `${JSON.stringify(schema, null, 2)}\n`;
    writePlanFile(this.root, org, eventType, text);
    this.seen.set(`${org}\u0000${eventType}`, sha256Hex(text));
  }

  private async takeIn(org: string, eventType: string): Promise<void> {
    const file = readPlanFile(this.root, org, eventType);
    const key = `${org}\u0000${eventType}`;
    const shown = `QUERIES_DIR/${org}/plans/${eventType}.schema.json`;
    if (file.kind !== 'json') {
      if (file.kind === 'refused' && this.seen.get(key) !== file.reason) this.deps.logger.warn({ org, eventType, reason: file.reason }, 'plan file refused; it is not read');
      if (file.kind === 'refused') this.seen.set(key, file.reason);
      return;
    }
    const hash = sha256Hex(file.text);
    if (this.seen.get(key) === hash) return;
    this.seen.set(key, hash);
    let schema: unknown;
    try {
      schema = JSON.parse(file.text);
    } catch (error) {
      this.deps.logger.warn({ org, eventType, reason: `${shown} is not JSON: ${(error as Error).message}` }, 'plan file refused; it is not read');
      return;
    }
    const live = this.deps.plans.get(org, eventType);
    if (live && isDeepStrictEqual(live.schema, schema)) return;
    try {
      await this.deps.plans.put(org, eventType, { schema: schema as object, mode: live?.mode ?? 'observe', environments: live?.environments ?? ['production'] });
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      this.deps.logger.warn({ org, eventType, reason: `${shown}: ${error.detail}` }, 'plan file refused; it is not read');
    }
  }
}
