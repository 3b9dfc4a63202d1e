/**
 * Events of one org, per environment: the types seen (count, last seen, property keys and their types),
 * samples of a type as received, and the quarantine with its reasons. A trigger starts here: "New trigger
 * from this event type" opens the editor with the reference query for the type.
 */
import { type ReactNode, useState } from 'react';
import { api, asPage, cursorParam, seg } from './api';
import { href } from './route';
import { LoadMore, Status, Time, usePages, useRequest } from './ui';

type Environment = 'production' | 'staging';

interface EventType {
  eventType: string;
  environment: Environment;
  count: number;
  lastSeenAt: string;
  properties: Record<string, string>;
  propertiesTruncated: boolean;
}

interface Sample {
  messageId: string;
  eventType: string;
  email: string | null;
  receivedAt: string;
  raw: unknown;
}

interface Quarantined {
  id: string;
  code: string;
  errors: Array<{ path: string; message: string }>;
  receivedAt: string;
  raw: unknown;
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
  const types = usePages(
    (cursor) => asPage(api<{ types: EventType[]; nextCursor: string | null }>('GET', `/admin/v1/orgs/${seg(org)}/events/types?env=${env}${cursorParam(cursor)}`), 'types'),
    [org, env],
  );
  return (
    <section aria-labelledby="events-title">
      <div className="row">
        <h2 id="events-title">Event types</h2>
        <label className="inline">
          Environment{' '}
          <select value={env} onChange={(e) => (setEnv(e.target.value as Environment), setSelected(undefined))}>
            <option value="production">production</option>
            <option value="staging">staging</option>
          </select>
        </label>
        <button type="button" className="small" onClick={types.reload}>
          Refresh
        </button>
      </div>
      {env === 'staging' ? <p className="muted">Triggers run on production events only; staging is for checking a partner's integration.</p> : null}
      <Status request={types} what="event types" />
      {types.data?.length === 0 ? <FirstEvent org={org} env={env} /> : null}
      {types.data && types.data.length > 0 ? (
        <table>
          <thead>
            <tr>
              <th scope="col">Event type</th>
              <th scope="col">Count</th>
              <th scope="col">Last seen</th>
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
      {selected ? <Samples org={org} env={env} eventType={selected} /> : null}
      <Quarantine org={org} env={env} />
    </section>
  );
}

function Samples({ org, env, eventType }: { org: string; env: Environment; eventType: string }): ReactNode {
  const samples = usePages(
    (cursor) =>
      asPage(
        api<{ events: Sample[]; nextCursor: string | null }>('GET', `/admin/v1/orgs/${seg(org)}/events/samples?env=${env}&eventType=${encodeURIComponent(eventType)}&limit=10${cursorParam(cursor)}`),
        'events',
      ),
    [org, env, eventType],
  );
  return (
    <section aria-labelledby="samples-title" className="card">
      <h3 id="samples-title">
        Samples of <code>{eventType}</code>
      </h3>
      <Status request={samples} what="samples" />
      {samples.data?.map((event) => (
        <details key={event.messageId} open={samples.data![0] === event}>
          <summary>
            <code>{event.messageId}</code> · {event.email ?? 'no e-mail yet'} · <Time iso={event.receivedAt} />
          </summary>
          <pre className="json">{JSON.stringify(event.raw, null, 2)}</pre>
        </details>
      ))}
      <LoadMore pages={samples} what="samples" />
    </section>
  );
}

function Quarantine({ org, env }: { org: string; env: Environment }): ReactNode {
  const rejected = usePages(
    (cursor) => asPage(api<{ events: Quarantined[]; nextCursor: string | null }>('GET', `/admin/v1/orgs/${seg(org)}/quarantine?env=${env}&limit=50${cursorParam(cursor)}`), 'events'),
    [org, env],
  );
  return (
    <section aria-labelledby="quarantine-title">
      <h2 id="quarantine-title">Quarantine</h2>
      <Status request={rejected} what="the quarantine" />
      {rejected.data?.length === 0 ? <p className="muted">No rejected {env} event.</p> : null}
      {rejected.data && rejected.data.length > 0 ? (
        <table>
          <thead>
            <tr>
              <th scope="col">Received</th>
              <th scope="col">Reason</th>
              <th scope="col">What was wrong</th>
              <th scope="col">Event</th>
            </tr>
          </thead>
          <tbody>
            {rejected.data.map((event) => (
              <tr key={event.id}>
                <td>
                  <Time iso={event.receivedAt} />
                </td>
                <td>
                  <a href={`/problems/${event.code}`} target="_blank" rel="noreferrer">
                    <code>{event.code}</code>
                  </a>
                </td>
                <td>
                  <ul className="plain">
                    {event.errors.map((error, i) => (
                      <li key={i}>
                        <code>{error.path || '/'}</code> {error.message}
                      </li>
                    ))}
                  </ul>
                </td>
                <td>
                  <details>
                    <summary>JSON</summary>
                    <pre className="json">{JSON.stringify(event.raw, null, 2)}</pre>
                  </details>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      <LoadMore pages={rejected} what="rejected events" />
    </section>
  );
}
