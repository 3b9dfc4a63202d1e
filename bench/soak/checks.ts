/**
 * What must hold after a soak, read from what the drivers were told, what the webhook receiver got and
 * what the org databases hold once the service has stopped: acknowledged = stored (once each); each send
 * delivered, a webhook-id repeated only for sends in flight at a kill; no cap exceeded; nothing sent inside
 * quiet hours; no 5xx and no failure while the service was up.
 */
import { join } from 'node:path';
import { LocalDatabase } from '../../src/db/database.js';
import type { Tally } from './drivers.js';
import type { FaultLog } from './faults.js';
import type { Delivery } from './receiver.js';
import { CAP, type SoakOrg } from './service.js';

import { CHANNEL_CONCURRENCY, SEND_CONCURRENCY } from '../../src/reactions/flows/send/send-dispatcher.js';

export interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

interface OrgData {
  stored: Map<string, number>;
  sends: Array<{ send_id: string; email: string; status: string }>;
}

export async function readOrg(dataDir: string, slug: string): Promise<OrgData> {
  const db = await LocalDatabase.open(join(dataDir, 'orgs', `${slug}.duckdb`));
  try {
    const rows = await db.all<{ message_id: string; n: bigint }>('SELECT message_id, count(*) AS n FROM events WHERE starts_with(message_id, $1) GROUP BY ALL', [`${slug}-`]);
    const sends = await db.all<{ send_id: string; email: string; status: string }>('SELECT send_id, email, status FROM flow_sends');
    return { stored: new Map(rows.map((r) => [r.message_id, Number(r.n)])), sends };
  } finally {
    await db.close();
  }
}

export function check(orgs: SoakOrg[], data: Map<string, OrgData>, tally: Tally, deliveries: Delivery[], faults: FaultLog[]): Check[] {
  const checks: Check[] = [];
  const add = (name: string, ok: boolean, detail: string) => checks.push({ name, ok, detail });

  // Acknowledged = stored, once each.
  let acked = 0;
  const missing: string[] = [];
  const twice: string[] = [];
  for (const org of orgs) {
    const { stored } = data.get(org.slug)!;
    const ids = tally.acked.get(org.slug) ?? new Set<string>();
    acked += ids.size;
    for (const id of ids) if (!stored.has(id)) missing.push(id);
    for (const [id, n] of stored) if (n > 1) twice.push(`${id} x${n}`);
  }
  add('acknowledged = stored', acked > 0 && missing.length === 0, `${acked} acknowledged, ${missing.length} missing${missing.length ? ` (${missing.slice(0, 5).join(', ')})` : ''}`);
  add('stored once', twice.length === 0, twice.length ? `${twice.length} stored twice (${twice.slice(0, 5).join(', ')})` : 'no messageId twice');

  // Each send delivered; a webhook-id again only for sends in flight at a kill.
  const byId = new Map<string, Delivery[]>();
  for (const d of deliveries) byId.set(d.id, [...(byId.get(d.id) ?? []), d]);
  const sends = new Map([...data.values()].flatMap((d) => d.sends.map((s) => [s.send_id, s] as const)));
  const unknown = [...byId.keys()].filter((id) => !sends.has(id));
  const undelivered = [...sends.values()].filter((s) => (s.status === 'delivered' && !byId.has(s.send_id)) || s.status === 'pending');
  // A kill can leave each org's sends in flight (SEND_CONCURRENCY an org, CHANNEL_CONCURRENCY in all)
  // delivered but not recorded: those, and only those, go again.
  const kills = faults.filter((f) => f.kind === 'kill-service' || f.kind === 'kill-storage').length;
  const inFlight = Math.min(CHANNEL_CONCURRENCY, SEND_CONCURRENCY * orgs.length);
  const repeats = [...byId.values()].reduce((sum, list) => sum + list.length - 1, 0);
  const thrice = [...byId.values()].filter((list) => list.length >= 3).length;
  const undeliveredIds = undelivered.slice(0, 5).map((s) => `${s.send_id} ${s.status}`);
  add('sends delivered', byId.size > 0 && unknown.length === 0 && undelivered.length === 0, `${byId.size} webhook-ids delivered; ${unknown.length} not a recorded send; ${undelivered.length} recorded but not delivered${undeliveredIds.length ? ` (${undeliveredIds.join(', ')})` : ''}`);
  add('delivered once', repeats <= kills * inFlight && thrice === 0, `${repeats} repeated deliveries (at most ${kills * inFlight}: ${kills} kills × ${inFlight} in flight), ${thrice} ids three times or more`);

  // Caps: at most CAP.maxSends distinct sends per contact in any window of CAP.withinSeconds.
  const firstAt = new Map<string, number[]>();
  for (const list of byId.values()) {
    const key = `${list[0]!.org}/${list[0]!.email}`;
    firstAt.set(key, [...(firstAt.get(key) ?? []), Math.min(...list.map((d) => d.at))]);
  }
  const capped = [...firstAt].filter(([, times]) => {
    const sorted = times.sort((a, b) => a - b);
    return sorted.some((at, i) => i >= CAP.maxSends && at - sorted[i - CAP.maxSends]! < CAP.withinSeconds * 1000);
  });
  add('no cap exceeded', capped.length === 0, `${firstAt.size} contacts messaged, ${capped.length} over ${CAP.maxSends} per ${CAP.withinSeconds} s`);

  // Quiet hours: contacts inside them for the whole run get nothing, and their sends wait.
  const quiet = new Set(orgs.flatMap((o) => o.contacts.filter((c) => c.quiet).map((c) => `${o.slug}/${c.email}`)));
  const inQuiet = deliveries.filter((d) => quiet.has(`${d.org}/${d.email}`));
  const deferred = [...data.values()].flatMap((d) => d.sends).filter((s) => s.status === 'deferred').length;
  add('nothing in quiet hours', inQuiet.length === 0, `${inQuiet.length} deliveries to ${quiet.size} contacts inside quiet hours; ${deferred} sends deferred`);

  // No 5xx, and no failure while the service was meant to be up.
  const fiveHundreds = [...tally.answers.values()].flatMap((m) => [...m]).filter(([status]) => /^5/.test(status)).reduce((s, [, n]) => s + n, 0);
  const failures = [...tally.answers.values()].flatMap((m) => [...m]).filter(([status]) => status === 'error' || status === 'timeout').reduce((s, [, n]) => s + n, 0);
  // storage_unavailable is the documented answer to a read that restarts kept from finishing in time: allowed
  // only where a storage fault (a kill, a SIGSTOP) fell inside its flight, else it counts as a 5xx.
  const storageFaults = faults.filter((f) => f.kind === 'kill-storage' || f.kind === 'stop-storage');
  const unexplained = tally.restarted.filter((r) => !storageFaults.some((f) => f.at <= r.answered && f.at + f.ms >= r.asked)).length;
  add('no 5xx', fiveHundreds + unexplained === 0, `${fiveHundreds} answers 5xx; ${tally.restarted.length} storage_unavailable, ${unexplained} of them with no storage fault in their flight`);
  add('no failure while up', failures === 0, `${failures} requests failed or timed out while the service was up`);
  return checks;
}
