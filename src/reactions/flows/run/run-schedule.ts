/**
 * Which triggered flows are due to run, per org, in the order they became due; trigger-runs.ts takes them
 * one per turn of the org (org-turns.ts). A flow is due at its schedule (every `scheduleSeconds`, the first
 * time one interval after it is first seen: at its start, or at process start), and at once when it runs
 * in real time and its org stored new events. A flow is due once however many times it is noted before it
 * runs: a burst of commits makes one run, not one per commit. Times are the context clock's.
 */
import type { FlowDefinition } from '../../../generated/flow.js';
import type { FlowRecord } from '../store/flow-store.js';

/** `scheduleSeconds` when the flow does not say. */
const DEFAULT_SCHEDULE_SECONDS = 60;

export class RunSchedule {
  /** Per flow (`org/id`), when its schedule next makes it due. */
  private readonly nextRunAt = new Map<string, number>();
  /** Per org, its due flows in the order they became due, with their interval (ms). */
  private readonly due = new Map<string, Map<string, number>>();

  /**
   * Notes the flows due at `now` among `flows` (the live ones); `committed`: orgs that stored new events
   * since the last look. Returns the orgs that have a due flow.
   */
  note(flows: readonly FlowRecord[], committed: ReadonlySet<string>, now: number): string[] {
    for (const flow of flows) {
      // Scheduled and recurring flows send at their schedule (scheduled-sends.ts), not by runs.
      if (flow.definition.category !== 'triggered') continue;
      const key = keyOf(flow.org, flow.definition.id);
      const interval = (flow.definition.scheduleSeconds ?? DEFAULT_SCHEDULE_SECONDS) * 1000;
      const at = this.nextRunAt.get(key);
      if (at === undefined) this.nextRunAt.set(key, now + interval);
      const fresh = committed.has(flow.org) && runsOnCommit(flow.definition);
      if (fresh || (at !== undefined && at <= now)) this.add(flow.org, flow.definition.id, interval);
    }
    return [...this.due.keys()];
  }

  /** The org's flow due longest, taken off the list; its schedule counts from `now`. */
  take(org: string, now: number): string | undefined {
    const flows = this.due.get(org);
    const next = flows?.entries().next().value;
    if (!flows || !next) return undefined;
    const [id, interval] = next;
    flows.delete(id);
    if (flows.size === 0) this.due.delete(org);
    this.nextRunAt.set(keyOf(org, id), now + interval);
    return id;
  }

  /** The flow is due again now, behind the org's other due flows (its window was cut at TRIGGER_MAX_ROWS). */
  again(flow: FlowRecord): void {
    this.add(flow.org, flow.definition.id, (flow.definition.scheduleSeconds ?? DEFAULT_SCHEDULE_SECONDS) * 1000);
  }

  has(org: string): boolean {
    return this.due.has(org);
  }

  /** How many flows of the org are due (tests). */
  dueCount(org: string): number {
    return this.due.get(org)?.size ?? 0;
  }

  /** The org was deleted: nothing of it is due. */
  forget(org: string): void {
    const prefix = `${org}/`;
    for (const key of this.nextRunAt.keys()) if (key.startsWith(prefix)) this.nextRunAt.delete(key);
    this.due.delete(org);
  }

  private add(org: string, id: string, interval: number): void {
    let flows = this.due.get(org);
    if (!flows) this.due.set(org, (flows = new Map()));
    if (!flows.has(id)) flows.set(id, interval);
  }
}

/** A triggered flow runs when its org stores new events unless it asks for its schedule only. */
export function runsOnCommit(flow: FlowDefinition): boolean {
  return flow.category === 'triggered' && flow.realTime !== false;
}

function keyOf(org: string, id: string): string {
  return `${org}/${id}`;
}
