/**
 * Events of one org, per environment: what arrived over time (events per type, stored and quarantined, as
 * charts read again every few seconds), the types seen (count, last seen, property keys and their types),
 * samples of a type as received, a custom type's tracking plan and its violations (events-plan.tsx), events
 * held for an identity with their age, and the quarantine with its reasons. A trigger starts here: "New trigger from this event type" opens the editor with the reference
 * query for the type.
 */
import { type ReactNode, useEffect, useRef, useState } from 'react';
import { api, asPage, cursorParam, seg } from './api';
import { ActivitySection, RANGES, type RangeName, type Series, TimeChart, rangeQuery } from './charts';
import { href } from './route';
import { type Environment, HeldForIdentity, Quarantine, Samples } from './events-lists';
import { EventPlan } from './events-plan';
import { LoadMore, Status, Time, useEvery, usePages, useRequest } from './ui';

interface Counted {
  total: number;
  counts: number[];
}

/** The answer of GET …/events/activity (src/routes/admin/orgs/events-activity.ts). */
interface EventActivity {
  bucket: 'minute' | 'hour' | 'day';
  times: string[];
  types: Array<Counted & { eventType: string }>;
  otherTypes: Counted & { types: number };
  stored: Counted;
  quarantined: Counted;
}

interface EventType {
  eventType: string;
  environment: Environment;
  count: number;
  lastSeenAt: string;
  properties: Record<string, string>;
  propertiesTruncated: boolean;
  /** Events that broke the type's tracking plan. */
  violations: number;
}

/** An empty page teaches: the request that sends a first event, with this org's partner id filled in. */
function FirstEvent({ org, env }: { org: string; env: Environment }): ReactNode {
  const found = useRequest(() => api<{ credentials: Record<Environment, { partnerId: string }> }>('GET', `/admin/v1/orgs/${seg(org)}`), [org]);
  const partnerId = found.data?.credentials[env].partnerId ?? '<partner id>';
  const body = JSON.stringify({
    partnerId,
    partnerSecret: '$PARTNER_SECRET',
    clientId: 'c-1',
    sentAt: 0,
    type: 'track',
    event: 'custom',
    properties: { eventName: 'booking_completed', properties: { city: 'Lisbon' } },
    traits: { email: 'ada@example.com' },
  }).replace('"$PARTNER_SECRET"', '"\'$PARTNER_SECRET\'"').replace('"sentAt":0', '"sentAt":\'$(date +%s%3N)\'');
  return (
    <div className="first-event" data-first-event>
      <p>
        No {env} event yet. Send one with the {env} partner secret (shown when the org was created or its secret rotated), and it appears here
        a moment later:
      </p>
      <pre>{`PARTNER_SECRET=…   # the ${env} partnerSecret\ncurl -s ${window.location.origin}/http/v1/collect -H 'Content-Type: application/json' -d '${body}'`}</pre>
      <p className="muted">
        SDKs (Segment, RudderStack, Jitsu) send to the same service with the write key: see docs/partners.md and docs/cli.md.
      </p>
    </div>
  );
}

export function EventsPage({ org }: { org: string }): ReactNode {
  const [env, setEnv] = useState<Environment>('production');
  const [selected, setSelected] = useState<string>();
  const [planOf, setPlanOf] = useState<string>();
  const types = usePages(
    (cursor) => asPage(api<{ types: EventType[]; nextCursor: string | null }>('GET', `/admin/v1/orgs/${seg(org)}/events/types?env=${env}${cursorParam(cursor)}`), 'types'),
    [org, env],
  );
  return (
    <section aria-labelledby="events-title">
      <div className="row">
        <h2 id="events-title">Events</h2>
        <label className="inline">
          Environment{' '}
          <select value={env} onChange={(e) => (setEnv(e.target.value as Environment), setSelected(undefined), setPlanOf(undefined))}>
            <option value="production">production</option>
            <option value="staging">staging</option>
          </select>
        </label>
        <button type="button" className="small" onClick={types.reload}>
          Refresh
        </button>
      </div>
      {env === 'staging' ? <p className="muted">Triggers run on production events only; staging is for checking a partner's integration.</p> : null}
      <Activity org={org} env={env} onChange={types.reload} />
      <h3 id="types-title">Event types</h3>
      <Status request={types} what="event types" />
      {types.data?.length === 0 ? <FirstEvent org={org} env={env} /> : null}
      {types.data && types.data.length > 0 ? (
        <table>
          <thead>
            <tr>
              <th scope="col">Event type</th>
              <th scope="col">Count</th>
              <th scope="col">Last seen</th>
              <th scope="col">Plan violations</th>
              <th scope="col">Properties</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {types.data.map((type) => (
              <tr key={type.eventType} data-event-type={type.eventType}>
                <td>
                  <code>{type.eventType}</code>
                </td>
                <td className="number">{type.count.toLocaleString()}</td>
                <td>
                  <Time iso={type.lastSeenAt} />
                </td>
                <td className="number" data-violations>
                  {type.violations.toLocaleString()}
                </td>
                <td>
                  {Object.entries(type.properties).map(([key, kind]) => (
                    <span key={key} className="tag">
                      {key}: {kind}
                    </span>
                  ))}
                  {type.propertiesTruncated ? <span className="muted"> and more (only the first 100 keys of up to 128 characters are listed)</span> : null}
                </td>
                <td className="actions">
                  <button type="button" className="small" onClick={() => setSelected(type.eventType)} aria-pressed={selected === type.eventType}>
                    Samples
                  </button>
                  {type.eventType.startsWith('custom_') ? (
                    <button type="button" className="small" onClick={() => setPlanOf(type.eventType)} aria-pressed={planOf === type.eventType}>
                      Plan
                    </button>
                  ) : null}
                  {env === 'production' ? (
                    <a className="button small" href={`${href('orgs', org, 'triggers', 'new')}?eventType=${encodeURIComponent(type.eventType)}`}>
                      New trigger from this event type
                    </a>
                  ) : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      <LoadMore pages={types} what="event types" />
      {planOf ? <EventPlan org={org} eventType={planOf} /> : null}
      {selected ? <Samples org={org} env={env} eventType={selected} /> : null}
      <HeldForIdentity org={org} env={env} />
      <Quarantine org={org} env={env} />
    </section>
  );
}

/** Events per type and per bucket, and stored against quarantined; when more arrive, `onChange` (the types table). */
function Activity({ org, env, onChange }: { org: string; env: Environment; onChange(): void }): ReactNode {
  const [range, setRange] = useState<RangeName>('day');
  const activity = useRequest(() => api<EventActivity>('GET', `/admin/v1/orgs/${seg(org)}/events/activity?env=${env}&${rangeQuery(range)}`), [org, env, range]);
  useEvery(RANGES[range].refreshMs, activity.reload);
  const data = activity.data;
  const seen = useRef<string>(undefined);
  const arrived = data ? `${data.stored.total} ${data.quarantined.total}` : undefined;
  useEffect(() => {
    if (arrived === undefined) return;
    if (seen.current !== undefined && seen.current !== arrived) onChange();
    seen.current = arrived;
  }, [arrived, onChange]);
  const empty = data !== undefined && data.stored.total === 0 && data.quarantined.total === 0;
  const perType: Series[] = data ? data.types.map((t) => ({ name: t.eventType, counts: t.counts })) : [];
  if (data && data.otherTypes.types > 0) perType.push({ name: `${data.otherTypes.types} other types`, counts: data.otherTypes.counts });
  return (
    <ActivitySection range={range} onRange={setRange} request={activity}>
      {empty ? <p className="muted" data-activity-totals>No {env} event in the {RANGES[range].label}; the charts appear when one arrives.</p> : null}
      {data && !empty ? (
        <>
          <p className="muted" data-activity-totals>
            {data.stored.total.toLocaleString()} {env} events stored and {data.quarantined.total.toLocaleString()} quarantined in the {RANGES[range].label}, per {data.bucket}; read
            again every {RANGES[range].refreshMs / 1000} s.
          </p>
          <div className="charts">
            <TimeChart chart="events-per-type" caption={`Events stored per type, per ${data.bucket}`} times={data.times} bucket={data.bucket} series={perType} yLabel={`events per ${data.bucket}`} />
            <TimeChart
              chart="collect-rate"
              caption={`Collected: stored and quarantined, per ${data.bucket}`}
              times={data.times}
              bucket={data.bucket}
              series={[
                { name: 'stored', counts: data.stored.counts },
                { name: 'quarantined', counts: data.quarantined.counts },
              ]}
              colors={{ stored: '#4e79a7', quarantined: '#e15759' }}
              yLabel={`events per ${data.bucket}`}
            />
          </div>
        </>
      ) : null}
    </ActivitySection>
  );
}
