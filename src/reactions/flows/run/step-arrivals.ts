/**
 * What moves waiting entries on (step-entries.ts): events stored up to the pass's end that an entry waits
 * for — by event name in SQL (wait-store.ts), or by a trigger's rows, run sandboxed as a flow run runs it.
 */
import type { OrgStorage } from '../../../db/org-storage.js';
import type { ProfileIndex } from '../../../events/profiles/profile-index.js';
import type { FlowDefinition } from '../../../generated/flow.js';
import { runSandboxed, windowOf, withSandbox } from '../../triggers/sandbox.js';
import type { TriggerStore } from '../../triggers/trigger-store.js';
import { resolveEmail, textOf } from '../rules/decide.js';
import { isStoredEventName } from '../rules/stored-event.js';
import type { Arrival, MatchTarget, WaitStore } from '../store/wait-store.js';

export interface ArrivalDeps {
  orgs: OrgStorage;
  waits: Pick<WaitStore, 'arrivals' | 'oldestMark' | 'matchRows'>;
  triggers: Pick<TriggerStore, 'live'>;
  profiles: Pick<ProfileIndex, 'find'>;
  /** TRIGGER_TIMEOUT_MS and TRIGGER_MAX_ROWS, for waits on a trigger's rows. */
  timeoutMs: number;
  maxRows: number;
}

/** Entries an event stored up to `end` (after `seen`, when known) moves on: by event name in SQL, by a trigger's rows here. */
export async function arrivalsOf(deps: ArrivalDeps, org: string, end: bigint, flows: readonly FlowDefinition[], seen: bigint | null, limit: number): Promise<Map<string, Arrival>> {
  const found = new Map<string, Arrival>();
  const exits = flows.flatMap((f) => (f.exit ? [{ kind: 'exit' as const, flowId: f.id, event: f.exit.event }] : []));
  const note = (a: Arrival) => {
    if (!found.has(a.entryId) || a.kind === 'exit') found.set(a.entryId, a);
  };
  for (const a of await deps.waits.arrivals(org, end, exits.filter((x) => isStoredEventName(x.event)), seen, limit)) note(a);
  const untils = [...new Set(flows.flatMap((f) => (f.steps ?? []).flatMap((s) => ('waitUntil' in s ? [s.waitUntil.event] : []))))];
  const targets: MatchTarget[] = [...exits, ...untils.map((event) => ({ kind: 'until' as const, event }))].filter((x) => !isStoredEventName(x.event));
  for (const target of targets) for (const a of await triggerArrivals(deps, org, end, target)) note(a);
  return found;
}

/**
 * Waits on a trigger's rows (a waitUntil or exit event naming a trigger): the trigger runs over the
 * window since the oldest such wait began (sandboxed, as a flow run runs it), and a row of the
 * contact with ts after an entry's mark moves that entry on.
 */
async function triggerArrivals(deps: ArrivalDeps, org: string, end: bigint, target: MatchTarget): Promise<Arrival[]> {
  const trigger = deps.triggers.live(org, 'trigger', target.event);
  const from = await deps.waits.oldestMark(org, target);
  if (!trigger || from === null || from >= end) return [];
  const page = await withSandbox(deps.orgs.org(org), deps.timeoutMs, (c) => runSandboxed(c, trigger.checked, windowOf(from, end), deps.maxRows));
  const profile = (type: Parameters<ProfileIndex['find']>[1], value: string) => deps.profiles.find(org, type, value);
  const rows: Array<{ email: string; ts: number }> = [];
  for (const r of page.rows) {
    const email = resolveEmail(textOf(r.identity), textOf(r.identity_type), { profile });
    if (email && r.ts instanceof Date) rows.push({ email, ts: r.ts.getTime() });
  }
  return deps.waits.matchRows(org, target, rows);
}
