/**
 * A trigger's or segment's SQL on a form: written (from an event type's reference query for a new
 * trigger), previewed, compared with the live version, saved as a new version, or deleted.
 */
import { type FormEvent, type ReactNode, useState } from 'react';
import { DEFAULT_PROFILE_FIELDS } from '../core/profile-fields';
import { api, type ApiError, seg } from './api';
import { EVENT_TRIGGER_COLUMNS, nameFor, NOUN, type QueryKind, type QueryStatus, referenceQuery, STARTER_SQL, STATUS_TEXT } from './query-kind';
import { type ContactDiff, DiffPanel, type Preview, PreviewTable, Versions } from './query-results';
import { go, href, useUnsavedChanges } from './route';
import { SqlEditor } from './sql-editor';
import { ValuesOf } from './triggers-page';
import { asApiError, ErrorBox, Status, useRequest } from './ui';

export function QueryEditor({ org, kind, name, eventType }: { org: string; kind: QueryKind; name: string; eventType: string | null }): ReactNode {
  const isNew = name === 'new';
  const noun = NOUN[kind];
  const existing = useRequest(
    () => (isNew ? Promise.resolve(undefined) : api<QueryStatus & { sql: string }>('GET', `/admin/v1/orgs/${seg(org)}/${kind}/${seg(name)}`)),
    [org, kind, name],
  );
  const [draftName, setDraftName] = useState(isNew && eventType ? nameFor(eventType) : '');
  const [initialSql] = useState<string | undefined>(
    isNew ? (eventType ? referenceQuery(eventType) : kind === 'triggers' ? referenceQuery('custom_') : STARTER_SQL[kind]) : undefined,
  );
  const [sql, setSqlText] = useState<string | undefined>(initialSql);
  const text = sql ?? existing.data?.sql ?? '';
  useUnsavedChanges(sql !== undefined && text !== (initialSql ?? existing.data?.sql ?? ''));
  /** Save attempts so far, refused ones too: the status and the versions are read again after each. */
  const [saves, setSaves] = useState(0);
  const setSql = (next: string) => {
    setSqlText(next);
    setValid(false);
    setDiff(undefined);
  };
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [preview, setPreview] = useState<Preview>();
  const [saved, setSaved] = useState<{ version: number; hash: string }>();
  const [error, setError] = useState<ApiError>();
  const [busy, setBusy] = useState<'preview' | 'save'>();
  /** The comparison with the live version, and the SQL it was made for. */
  const [diff, setDiff] = useState<{ sql: string; result: ContactDiff }>();
  const target = isNew ? draftName : name;
  const hasLive = kind === 'triggers' && (existing.data?.liveVersion != null || saved !== undefined);

  const run = async (what: 'preview' | 'save', work: () => Promise<void>) => {
    setBusy(what);
    setError(undefined);
    try {
      await work();
    } catch (e) {
      setError(asApiError(e));
    } finally {
      setBusy(undefined);
    }
  };
  const [valid, setValid] = useState(false);
  // Validation is a one-row run: the sandbox's checks, then the query itself against the org's data.
  const validate = () =>
    run('preview', async () => {
      setValid(false);
      await api<Preview>('POST', `/admin/v1/orgs/${seg(org)}/${kind}/${seg(target || 'preview')}/preview`, { sql: text, limit: 1 });
      setValid(true);
    });
  const windowBody = () => ({ ...(from ? { from: new Date(from).toISOString() } : {}), ...(to ? { to: new Date(to).toISOString() } : {}) });
  const doPreview = () =>
    run('preview', async () => {
      setPreview(undefined);
      setPreview(await api<Preview>('POST', `/admin/v1/orgs/${seg(org)}/${kind}/${seg(target || 'preview')}/preview`, { sql: text, ...windowBody() }));
    });
  const fetchDiff = async () => {
    const result = await api<ContactDiff>('POST', `/admin/v1/orgs/${seg(org)}/triggers/${seg(target || 'preview')}/diff`, { sql: text, ...windowBody() });
    setDiff({ sql: text, result });
  };
  const compare = () =>
    run('preview', async () => {
      setDiff(undefined);
      await fetchDiff();
    });
  // Refused (409, the flows named in the error) while a flow that is not deleted names it.
  const remove = () => {
    if (!window.confirm(`Delete the ${noun} ${name}? Its file in QUERIES_DIR goes; its versions stay as history.`)) return;
    void run('save', async () => {
      await api('DELETE', `/admin/v1/orgs/${seg(org)}/${kind}/${seg(name)}`);
      go(href('orgs', org, kind));
    });
  };
  const save = (event: FormEvent) => {
    event.preventDefault();
    void run('save', async () => {
      // A change to a live trigger is shown against the live version first; Save again makes it live.
      // SQL the comparison cannot run (refused, failing) goes on to the save, which records why.
      if (hasLive && diff?.sql !== text) {
        const compared = await fetchDiff().then(
          () => true,
          () => false,
        );
        if (compared) return;
      }
      try {
        const result = await api<{ version: number; hash: string }>('PUT', `/admin/v1/orgs/${seg(org)}/${kind}/${seg(target)}`, { sql: text });
        setSaved(result);
        setDiff(undefined);
        if (isNew) go(href('orgs', org, kind, target));
      } finally {
        // A refused version is recorded too: its badge and its line in the versions show it.
        setSaves((n) => n + 1);
        if (!isNew) existing.reload();
      }
    });
  };

  return (
    <form onSubmit={save} aria-labelledby="editor-title" className="editor">
      <h2 id="editor-title">{isNew ? `New ${noun}` : `${noun[0]!.toUpperCase()}${noun.slice(1)} ${name}`}</h2>
      <Status request={existing} what={noun} />
      {existing.data ? (
        <p>
          <span className={`badge ${existing.data.status}`}>{STATUS_TEXT[existing.data.status]}</span>{' '}
          {existing.data.liveVersion !== null ? `v${existing.data.liveVersion} live, hash ${existing.data.liveHash?.slice(0, 12)}` : 'no live version'}
          {existing.data.error ? <span className="muted"> · {existing.data.status === 'file_refused' ? 'file not read' : 'latest refused'}: {existing.data.error}</span> : null}
          {kind === 'traits' ? (
            <span className="values">
              {' '}
              · values: <ValuesOf values={existing.data.values ?? null} />
            </span>
          ) : null}
        </p>
      ) : null}
      {isNew ? (
        <label>
          Name
          <input value={draftName} onChange={(e) => setDraftName(e.target.value)} required pattern="[a-z][a-z0-9_]{0,63}" placeholder={{ triggers: 'booking_completed', segments: 'vip', traits: 'lifetime_bookings' }[kind]} />
        </label>
      ) : null}
      <div className="editor-grid">
        <div>
          <SqlEditor value={text} onChange={setSql} label={`SQL of the ${noun}`} />
          {kind === 'triggers' ? (
            <p className="muted">
              <code>{'{cursor_start_time}'}</code> and <code>{'{cursor_end_time}'}</code> are the window each run reads (<code>ts</code> in it).
            </p>
          ) : kind === 'segments' ? (
            <p className="muted">
              A segment returns one column, <code>email</code>: the contacts in it (<code>email_address AS email</code> from <code>profiles</code>).
            </p>
          ) : (
            <p className="muted">
              A trait returns <code>email, value</code>, one row per contact: the value is the profile field <code>{target || 'name'}</code> and a column of{' '}
              <code>profiles</code>, recomputed within seconds of new events.
            </p>
          )}
        </div>
        <aside aria-label="Columns">
          <h3>event_triggers</h3>
          <ul className="plain columns">
            {EVENT_TRIGGER_COLUMNS.map(([column, about]) => (
              <li key={column}>
                <code>{column}</code> <span className="muted">{about}</span>
              </li>
            ))}
          </ul>
          <h3>profiles</h3>
          <ul className="plain columns">
            {DEFAULT_PROFILE_FIELDS.map((column) => (
              <li key={column}>
                <code>{column}</code>
              </li>
            ))}
          </ul>
        </aside>
      </div>
      <fieldset className="row">
        <legend>Preview window (default: the last 24 hours of events)</legend>
        <label className="inline">
          From <input type="datetime-local" value={from} onChange={(e) => setFrom(e.target.value)} />
        </label>
        <label className="inline">
          To <input type="datetime-local" value={to} onChange={(e) => setTo(e.target.value)} />
        </label>
        <button type="button" className="secondary" onClick={validate} disabled={busy !== undefined}>
          Validate
        </button>
        <button type="button" onClick={doPreview} disabled={busy !== undefined}>
          {busy === 'preview' ? 'Running…' : 'Preview'}
        </button>
        {kind === 'triggers' ? (
          <button type="button" className="secondary" onClick={compare} disabled={busy !== undefined}>
            Compare with live
          </button>
        ) : null}
        <button type="submit" disabled={busy !== undefined || !target}>
          {busy === 'save' ? 'Saving…' : hasLive && diff?.sql === text ? 'Save: make this live' : 'Save'}
        </button>
        {!isNew ? (
          <button type="button" className="secondary" onClick={remove} disabled={busy !== undefined}>
            Delete
          </button>
        ) : null}
      </fieldset>
      <ErrorBox error={error} />
      {valid && !error ? (
        <p role="status" className="ok">
          Valid: the SQL passes the sandbox's checks and runs.
        </p>
      ) : null}
      {saved ? (
        <p role="status" className="ok">
          Saved: v{saved.version} is live (hash <code>{saved.hash.slice(0, 12)}</code>).
        </p>
      ) : null}
      {diff ? <DiffPanel diff={diff.result} /> : null}
      {preview ? <PreviewTable preview={preview} /> : null}
      {!isNew ? <Versions org={org} kind={kind} name={name} round={saves} /> : null}
    </form>
  );
}
