/**
 * What a flow did: its sends (filtered by status) and, for one contact, every trigger row that reached
 * the flow and what was decided for it, with the reason.
 */
import { type ReactNode, useState } from 'react';
import { api, asPage, cursorParam, seg } from './api';
import { LoadMore, Status, Time, usePages } from './ui';

interface Send {
  sendId: string;
  email: string;
  variant: string | null;
  channel: string;
  status: string;
  attempts: number;
  lastError: string | null;
  triggerHash: string;
  createdAt: string;
}

interface Decision {
  eventId: string;
  identity: string;
  email: string | null;
  outcome: string;
  variant: string | null;
  reason: string | null;
  deliveryStatus: string | null;
  triggerHash: string;
  decidedAt: string;
}

/** Sends per page; a status filter finds the failed and dead ones among many. */
const SENDS_PAGE = 100;
const SEND_STATUSES = ['pending', 'delivered', 'failed', 'dead', 'holdout', 'entered', 'deferred', 'cancelled'] as const;

export function Sends({ org, id, round }: { org: string; id: string; round: number }): ReactNode {
  const [status, setStatus] = useState('');
  const sends = usePages(
    (cursor) =>
      asPage(
        api<{ sends: Send[]; nextCursor: string | null }>('GET', `/admin/v1/orgs/${seg(org)}/flows/${seg(id)}/sends?limit=${SENDS_PAGE}${status ? `&status=${status}` : ''}${cursorParam(cursor)}`),
        'sends',
      ),
    [org, id, round, status],
  );
  return (
    <section aria-labelledby="sends-title">
      <div className="row">
        <h3 id="sends-title">Sends</h3>
        <label className="inline">
          Status{' '}
          <select value={status} onChange={(e) => setStatus(e.target.value)}>
            <option value="">all</option>
            {SEND_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <button type="button" className="small" onClick={sends.reload}>
          Refresh
        </button>
      </div>
      <Status request={sends} what="sends" />
      {sends.data?.length === 0 ? <p className="muted">{status ? `No ${status} send.` : 'No send yet.'}</p> : null}
      {sends.data && sends.data.length > 0 ? (
        <table>
          <thead>
            <tr>
              <th scope="col">Contact</th>
              <th scope="col">Variant</th>
              <th scope="col">Status</th>
              <th scope="col">Attempts</th>
              <th scope="col">Trigger version</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {sends.data.map((send) => (
              <tr key={send.sendId} data-send={send.email}>
                <td>{send.email}</td>
                <td>{send.variant ?? '—'}</td>
                <td>
                  {send.status}
                  {send.lastError ? <div className="muted">{send.lastError}</div> : null}
                </td>
                <td className="number">{send.attempts}</td>
                <td>
                  <code>{send.triggerHash.slice(0, 12)}</code>
                </td>
                <td>
                  <Time iso={send.createdAt} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      <LoadMore pages={sends} what="sends" />
    </section>
  );
}

/** Every trigger row of one contact and what happened to it, with the reason. */
export function WhyNot({ org, id, round }: { org: string; id: string; round: number }): ReactNode {
  const [email, setEmail] = useState('');
  const [asked, setAsked] = useState<string>();
  const decisions = usePages(
    (cursor) =>
      asked === undefined
        ? Promise.resolve({ items: [], nextCursor: null })
        : asPage(
            api<{ decisions: Decision[]; nextCursor: string | null }>(
              'GET',
              `/admin/v1/orgs/${seg(org)}/flows/${seg(id)}/decisions?identity=${encodeURIComponent(`email:${asked}`)}&limit=100${cursorParam(cursor)}`,
            ),
            'decisions',
          ),
    [org, id, asked, round],
  );
  return (
    <section aria-labelledby="why-title">
      <h3 id="why-title">Why was a contact (not) messaged?</h3>
      <form
        className="row"
        onSubmit={(e) => {
          e.preventDefault();
          setAsked(email.trim());
        }}
      >
        <label className="inline">
          Contact e-mail <input type="email" value={email} onChange={(e) => setEmail(e.target.value)} required />
        </label>
        <button type="submit">Show decisions</button>
      </form>
      {asked !== undefined ? <Status request={decisions} what="decisions" /> : null}
      {asked !== undefined && decisions.data?.length === 0 ? <p className="muted">No trigger row of {asked} reached this flow yet.</p> : null}
      {decisions.data && decisions.data.length > 0 ? (
        <table>
          <thead>
            <tr>
              <th scope="col">Decided</th>
              <th scope="col">Event</th>
              <th scope="col">Outcome</th>
              <th scope="col">Variant</th>
              <th scope="col">Reason</th>
            </tr>
          </thead>
          <tbody>
            {decisions.data.map((d) => (
              <tr key={`${d.eventId}-${d.decidedAt}`} data-outcome={d.outcome}>
                <td>
                  <Time iso={d.decidedAt} />
                </td>
                <td>
                  <code>{d.eventId}</code>
                </td>
                <td>
                  <strong>{d.outcome}</strong>
                  {d.deliveryStatus ? <span className="muted"> ({d.deliveryStatus})</span> : null}
                </td>
                <td>{d.variant ?? '—'}</td>
                <td>{d.reason ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      <LoadMore pages={decisions} what="decisions" />
    </section>
  );
}
