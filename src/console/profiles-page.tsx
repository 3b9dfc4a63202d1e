/**
 * One contact, looked up by e-mail, e-mail hash or user id: the fields the Audience API returns (the
 * org's content fields, in their order) first, then the profile's other fields greyed out.
 */
import { type FormEvent, type ReactNode, useState } from 'react';
import { api, type ApiError, seg, upload } from './api';
import { asApiError, ErrorBox, Status, useRequest } from './ui';

type IdentityType = 'email' | 'email-hash' | 'user_id';

const LABELS: Record<IdentityType, string> = { email: 'e-mail', 'email-hash': 'e-mail hash (SHA-256)', user_id: 'user id' };

/** A contact's consent to one topic, as GET …/contacts answers it. */
interface Subscription {
  topic: string;
  status: 'subscribed' | 'unsubscribed';
  source: 'admin' | 'link' | 'event' | 'default';
  changedAt: string | null;
}

/** How fresh the answer is (docs/audience-api.md "How fresh is an answer"). */
interface Meta {
  eventsThrough: string | null;
  computedAt: string;
  lagMs: number;
}

export function ProfilesPage({ org }: { org: string }): ReactNode {
  const [type, setType] = useState<IdentityType>('email');
  const [value, setValue] = useState('');
  const [asked, setAsked] = useState<string>();
  const found = useRequest(
    () => (asked === undefined ? Promise.resolve(undefined) : api<{ contact: Record<string, unknown>; contentFields: string[]; meta: Meta; subscriptions: Subscription[] }>('GET', `/admin/v1/orgs/${seg(org)}/contacts?identity=${encodeURIComponent(asked)}`)),
    [org, asked],
  );
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const identity = `${type}:${value.trim()}`;
    // The same identity again is looked up again (it may have changed, or been erased).
    if (identity === asked) found.reload();
    else setAsked(identity);
  };
  const contact = found.data?.contact;
  const content = found.data?.contentFields ?? [];
  const others = contact ? Object.keys(contact).filter((field) => !content.includes(field)) : [];
  return (
    <section aria-labelledby="profiles-title">
      <h2 id="profiles-title">Profile lookup</h2>
      <form className="row" onSubmit={submit}>
        <label className="inline">
          Look up by{' '}
          <select value={type} onChange={(e) => setType(e.target.value as IdentityType)}>
            {Object.entries(LABELS).map(([id, label]) => (
              <option key={id} value={id}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <label className="inline">
          Identity <input value={value} onChange={(e) => setValue(e.target.value)} required />
        </label>
        <button type="submit">Look up</button>
      </form>
      {asked !== undefined ? <Status request={found} what="the profile" /> : null}
      {contact && found.data ? <Freshness meta={found.data.meta} /> : null}
      {contact ? (
        <table className="profile">
          <caption>As the Audience API returns it, then the fields that are not content fields of this org (greyed out)</caption>
          <tbody>
            {[...content, ...others].map((field) => (
              <tr key={field} className={content.includes(field) ? '' : 'not-content'} data-field={field}>
                <th scope="row">
                  <code>{field}</code>
                </th>
                <td>
                  <code>{JSON.stringify(contact[field] ?? null)}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {contact && found.data ? (
        <table className="subscriptions">
          <caption>Subscriptions: the contact's consent to each topic, and where it comes from</caption>
          <thead>
            <tr>
              <th scope="col">Topic</th>
              <th scope="col">Status</th>
              <th scope="col">Source</th>
              <th scope="col">Changed</th>
            </tr>
          </thead>
          <tbody>
            {found.data.subscriptions.map((s) => (
              <tr key={s.topic} data-topic={s.topic}>
                <th scope="row">
                  <code>{s.topic}</code>
                </th>
                <td>{s.status}</td>
                <td>{s.source}</td>
                <td>{s.changedAt ?? '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {contact ? <EraseContact org={org} email={String(contact.email_address)} key={String(contact.email_address)} /> : null}
      <ContactImport org={org} />
    </section>
  );
}

/** The answer's meta in words: the contact's newest event in it, when it was built, how far the org's profiles are behind. */
function Freshness({ meta }: { meta: Meta }): ReactNode {
  return (
    <p className="freshness" data-lag={meta.lagMs}>
      Newest event in this profile: {meta.eventsThrough ?? 'none (imported only)'} · answered at {meta.computedAt} ·{' '}
      {meta.lagMs === 0 ? "every acknowledged event of the org is in its profiles" : `the org's profiles are ${meta.lagMs} ms behind its newest acknowledged event`}
    </p>
  );
}

interface ErasureReceipt {
  id: string;
  status: 'pending' | 'done';
  suppress: boolean;
  removed: Record<string, number> | null;
}

/** Erases the contact shown (a GDPR or CCPA request), optionally suppressing it; shows the receipt once done. */
function EraseContact({ org, email }: { org: string; email: string }): ReactNode {
  const [sure, setSure] = useState(false);
  const [suppress, setSuppress] = useState(false);
  const [receipt, setReceipt] = useState<ErasureReceipt>();
  const [error, setError] = useState<ApiError>();
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setError(undefined);
    try {
      let now = await api<ErasureReceipt>('POST', `/admin/v1/orgs/${seg(org)}/contacts/erase`, { identity: `email:${email}`, suppress });
      setReceipt(now);
      while (now.status !== 'done') {
        await new Promise((resolve) => setTimeout(resolve, 250));
        now = await api<ErasureReceipt>('GET', `/admin/v1/orgs/${seg(org)}/erasures/${seg(now.id)}`);
        setReceipt(now);
      }
    } catch (e) {
      setError(asApiError(e));
    }
  };
  return (
    <form className="card" onSubmit={submit} aria-labelledby="erase-title">
      <h2 id="erase-title">Erase this contact</h2>
      <p className="muted">
        Deletes its events (also those still arriving from before now), profile, imported fields, consent, decisions and messages, for good. The receipt keeps
        only a hash of the address.
      </p>
      <label>
        <input type="checkbox" checked={suppress} onChange={(e) => setSuppress(e.target.checked)} /> Also suppress: keep its future events out and never message it
      </label>
      <label>
        <input type="checkbox" checked={sure} onChange={(e) => setSure(e.target.checked)} required /> I want <code>{email}</code> erased
      </label>
      <ErrorBox error={error} />
      {receipt ? (
        <p role="status" className={receipt.status === 'done' ? 'ok' : 'muted'} data-erasure={receipt.status}>
          Erasure <code>{receipt.id}</code>: {receipt.status}
          {receipt.removed ? ` — removed ${Object.entries(receipt.removed).map(([kind, n]) => `${n} ${kind}`).join(', ')}` : ''}
        </p>
      ) : null}
      <button type="submit" className="danger" disabled={!sure || receipt !== undefined}>
        Erase
      </button>
    </form>
  );
}

interface ImportAnswer {
  imported: number;
  rejected: Array<{ line: number; code: string; message: string }>;
}

/** Contacts from a CSV (with a header row) or NDJSON file, upserted by e-mail; the lines refused, with why. */
function ContactImport({ org }: { org: string }): ReactNode {
  const [file, setFile] = useState<File>();
  const [progress, setProgress] = useState<number>();
  const [answer, setAnswer] = useState<ImportAnswer>();
  const [error, setError] = useState<ApiError>();
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (!file) return;
    const type = /\.csv$/i.test(file.name) ? 'text/csv' : 'application/x-ndjson';
    setError(undefined);
    setAnswer(undefined);
    setProgress(0);
    try {
      setAnswer(await upload<ImportAnswer>(`/admin/v1/orgs/${seg(org)}/contacts/import`, file, type, setProgress));
    } catch (e) {
      setError(asApiError(e));
    } finally {
      setProgress(undefined);
    }
  };
  return (
    <form className="card" onSubmit={submit} aria-labelledby="import-title">
      <h2 id="import-title">Import contacts</h2>
      <p className="muted">A .csv file with a header row (an email_address column, then profile fields or your own columns), or .ndjson: one JSON object per line. Contacts are matched by e-mail.</p>
      <label>
        File <input type="file" accept=".csv,.ndjson,.jsonl" onChange={(e) => setFile(e.target.files?.[0])} required />
      </label>
      {progress !== undefined ? (
        <label className="inline">
          Sending <progress max={1} value={progress} /> {Math.round(progress * 100)} %
        </label>
      ) : null}
      <ErrorBox error={error} />
      {answer ? (
        <div role="status">
          <p className="ok">
            {answer.imported.toLocaleString()} contact{answer.imported === 1 ? '' : 's'} imported, {answer.rejected.length.toLocaleString()} line
            {answer.rejected.length === 1 ? '' : 's'} refused.
          </p>
          {answer.rejected.length > 0 ? (
            <table>
              <thead>
                <tr>
                  <th scope="col">Line</th>
                  <th scope="col">Why</th>
                </tr>
              </thead>
              <tbody>
                {answer.rejected.slice(0, 200).map((r) => (
                  <tr key={r.line} data-rejected-line={r.line}>
                    <td className="number">{r.line}</td>
                    <td>
                      <code>{r.code}</code> {r.message}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : null}
        </div>
      ) : null}
      <button type="submit" disabled={progress !== undefined}>
        Import
      </button>
    </form>
  );
}
