/**
 * The lists of the Events page: events held for an identity with their age, samples of a type as
 * received, and the quarantine with its reasons.
 */
import type { ReactNode } from 'react';
import { api, asPage, cursorParam, seg } from './api';
import { ACTIVITY_REFRESH_MS, LoadMore, Status, Time, useEvery, usePages, useRequest } from './ui';

export type Environment = 'production' | 'staging';

interface Held {
  messageId: string;
  clientId: string;
  eventType: string;
  receivedAt: string;
  expiresAt: string;
  ageSeconds: number;
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

const age = (seconds: number) =>
  seconds < 120 ? `${seconds} s` : seconds < 7200 ? `${Math.floor(seconds / 60)} min` : seconds < 172_800 ? `${Math.floor(seconds / 3600)} h` : `${Math.floor(seconds / 86400)} days`;

/** Accepted events without an e-mail, waiting for an identify of their clientId (up to 7 days). */
export function HeldForIdentity({ org, env }: { org: string; env: Environment }): ReactNode {
  const held = useRequest(
    () => api<{ count: number; oldestReceivedAt: string | null; events: Held[] }>('GET', `/admin/v1/orgs/${seg(org)}/events/pending?env=${env}&limit=20`),
    [org, env],
  );
  useEvery(ACTIVITY_REFRESH_MS, held.reload);
  const data = held.data;
  return (
    <section aria-labelledby="held-title">
      <h3 id="held-title">Held for an identity</h3>
      <Status request={{ loading: held.loading && !data, error: held.error }} what="held events" />
      {data?.count === 0 ? <p className="muted">No {env} event is waiting for an identify.</p> : null}
      {data && data.count > 0 ? (
        <>
          <p data-held-count>
            <strong>{data.count.toLocaleString()}</strong> accepted {env} event{data.count === 1 ? '' : 's'} without an e-mail wait{data.count === 1 ? 's' : ''} for an identify of
            their clientId; the oldest arrived <Time iso={data.oldestReceivedAt} />. Each is stored as soon as one comes, or quarantined
            (<code>identity_unresolved</code>) 7 days after it arrived.
          </p>
          <table data-held>
            <thead>
              <tr>
                <th scope="col">Age</th>
                <th scope="col">Event type</th>
                <th scope="col">clientId</th>
                <th scope="col">Message id</th>
                <th scope="col">Quarantined if still held at</th>
              </tr>
            </thead>
            <tbody>
              {data.events.map((event) => (
                <tr key={event.messageId}>
                  <td className="number">{age(event.ageSeconds)}</td>
                  <td>
                    <code>{event.eventType}</code>
                  </td>
                  <td>
                    <code>{event.clientId}</code>
                  </td>
                  <td>
                    <code>{event.messageId}</code>
                  </td>
                  <td>
                    <Time iso={event.expiresAt} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {data.count > data.events.length ? <p className="muted">The oldest {data.events.length} shown; <code>npx audiencectl events pending {org}</code> lists them all.</p> : null}
        </>
      ) : null}
    </section>
  );
}

export function Samples({ org, env, eventType }: { org: string; env: Environment; eventType: string }): ReactNode {
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

export function Quarantine({ org, env }: { org: string; env: Environment }): ReactNode {
  const rejected = usePages(
    (cursor) => asPage(api<{ events: Quarantined[]; nextCursor: string | null }>('GET', `/admin/v1/orgs/${seg(org)}/quarantine?env=${env}&limit=50${cursorParam(cursor)}`), 'events'),
    [org, env],
  );
  return (
    <section aria-labelledby="quarantine-title">
      <h3 id="quarantine-title">Quarantine</h3>
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
