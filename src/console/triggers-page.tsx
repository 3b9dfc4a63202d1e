/**
 * Triggers (and segments, and traits) of one org: the list with status, live version and hash, and (query-editor.tsx)
 * the editor: SQL with highlighting, the columns at hand, preview over a window, save (= commit; a refused version
 * leaves the last good one live). A change to a live trigger is compared with the live version before it
 * is saved: the contacts it adds and removes over the window (POST …/diff), then Save again to make it live.
 */
import type { ReactNode } from 'react';
import { api, seg } from './api';
import { NOUN, type QueryKind, type QueryStatus, STATUS_TEXT, type TraitValues } from './query-kind';
import { href } from './route';
import { Status, Time, useRequest } from './ui';

export function QueriesPage({ org, kind }: { org: string; kind: QueryKind }): ReactNode {
  const list = useRequest(() => api<Record<QueryKind, QueryStatus[]> & { folderError: string | null }>('GET', `/admin/v1/orgs/${seg(org)}/${kind}`), [org, kind]);
  const noun = NOUN[kind];
  return (
    <section aria-labelledby="queries-title">
      <div className="row">
        <h2 id="queries-title">{kind[0]!.toUpperCase() + kind.slice(1)}</h2>
        <a className="button small" href={href('orgs', org, kind, 'new')}>
          New {noun}
        </a>
      </div>
      <Status request={list} what={kind} />
      {list.data?.folderError ? <p className="error">{list.data.folderError}</p> : null}
      {list.data?.[kind].length === 0 ? (
        <p className="muted">
          No {noun} yet.{' '}
          {kind === 'triggers' ? (
            <>
              Start from an event type on the <a href={href('orgs', org, 'events')}>Events</a> page.
            </>
          ) : kind === 'segments' ? (
            <>
              A segment is a query over <code>profiles</code> that returns one column, <code>email</code>: flows exclude or include its members, or send to
              them on a schedule.
            </>
          ) : (
            <>
              A trait is a query that returns <code>email, value</code>: the value becomes a field of each contact&apos;s profile (served by the Audience
              API once the org lists it among its content fields) and a column of <code>profiles</code>, recomputed after new events.
            </>
          )}
        </p>
      ) : null}
      {list.data && list.data[kind].length > 0 ? (
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Status</th>
              <th scope="col">Live version</th>
              <th scope="col">Hash</th>
              <th scope="col">Latest</th>
              {kind === 'traits' ? <th scope="col">Values</th> : null}
            </tr>
          </thead>
          <tbody>
            {list.data[kind].map((query) => (
              <tr key={query.name} data-query={query.name}>
                <td>
                  <a href={href('orgs', org, kind, query.name)}>{query.name}</a>
                </td>
                <td>
                  <span className={`badge ${query.status}`}>{STATUS_TEXT[query.status]}</span>
                  {query.error ? <div className="muted">{query.error}</div> : null}
                </td>
                <td>{query.liveVersion === null ? '—' : `v${query.liveVersion}`}</td>
                <td>
                  <code title={query.liveHash ?? ''}>{query.liveHash?.slice(0, 12) ?? '—'}</code>
                </td>
                <td>
                  {query.latestVersion === null || query.committedAt === null ? (
                    '—'
                  ) : (
                    <>
                      v{query.latestVersion} · <Time iso={query.committedAt} />
                    </>
                  )}
                </td>
                {kind === 'traits' ? (
                  <td className="values">
                    <ValuesOf values={query.values ?? null} />
                  </td>
                ) : null}
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}

/** When a trait's values were computed, for how many contacts, and why the last run failed. */
export function ValuesOf({ values }: { values: TraitValues | null }): ReactNode {
  if (!values?.computedAt) return values?.error ? <span className="error">{values.error}</span> : <span className="muted">not computed yet</span>;
  return (
    <>
      {values.contacts} contacts · v{values.version} · <Time iso={values.computedAt} /> · {values.tookMs} ms
      {values.error ? <div className="error">last run failed (values kept): {values.error}</div> : null}
    </>
  );
}
