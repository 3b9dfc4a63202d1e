/**
 * Triggers (and segments) of one org: the list with status, live version and hash, and the editor:
 * SQL with highlighting, the columns at hand, preview over a window, save (= commit; a refused version
 * leaves the last good one live). A change to a live trigger is compared with the live version before it
 * is saved: the contacts it adds and removes over the window (POST …/diff), then Save again to make it live.
 */
import { type FormEvent, type ReactNode, useState } from 'react';
import { DEFAULT_PROFILE_FIELDS } from '../core/profile-fields';
import { api, type ApiError, asPage, cursorParam, seg } from './api';
import { go, href, useUnsavedChanges } from './route';
import { SqlEditor } from './sql-editor';
import { asApiError, ErrorBox, LoadMore, Status, Time, useInView, usePages, useRequest } from './ui';

export type QueryKind = 'triggers' | 'segments';

interface QueryStatus {
  name: string;
  status: 'live' | 'live_previous_version' | 'invalid' | 'file_refused';
  liveVersion: number | null;
  liveHash: string | null;
  /** null: the file was refused before any version was recorded. */
  latestVersion: number | null;
  error: string | null;
  committedAt: string | null;
}

interface Preview {
  window: { from: string; to: string };
  count: number;
  truncated: boolean;
  rows: Array<Record<string, unknown>>;
}

/** POST …/triggers/{name}/diff: contacts are distinct identities. */
interface ContactDiff {
  liveVersion: number | null;
  window: { from: string; to: string };
  added: string[];
  removed: string[];
  unchanged: number;
  truncated: boolean;
}

const STATUS_TEXT: Record<QueryStatus['status'], string> = {
  live: 'live',
  live_previous_version: 'latest refused, previous live',
  invalid: 'refused',
  file_refused: 'file not read',
};

/** What trigger SQL reads (pipelines/org_relations.sql). */
const EVENT_TRIGGER_COLUMNS: Array<[string, string]> = [
  ['identity', "the contact's e-mail"],
  ['identity_type', "'email'"],
  ['ts', 'when the event became visible (the window is on this)'],
  ['event_type', 'e.g. custom_booking_completed'],
  ['event_id', 'the messageId'],
  ['event_raw', 'the event as received (JSON)'],
  ['properties', 'its properties (JSON)'],
  ['event_time', 'timestamp, else received time'],
  ['received_at', 'server time of receipt'],
  ['user_id', 'userId when sent'],
  ['client_id', 'clientId'],
];

export function referenceQuery(eventType: string): string {
  return `SELECT identity, identity_type, ts, event_type, event_id, event_raw
FROM event_triggers
WHERE event_type = '${eventType.replaceAll("'", "''")}'
  AND ts > {cursor_start_time} AND ts <= {cursor_end_time}`;
}

/** custom_booking_completed → booking_completed: a name the SQL file can have. */
function nameFor(eventType: string): string {
  const name = eventType.replace(/^custom_/, '').toLowerCase().replace(/[^a-z0-9_]/g, '_').replace(/^[^a-z]+/, '');
  return (name || 'trigger').slice(0, 64);
}

export function QueriesPage({ org, kind }: { org: string; kind: QueryKind }): ReactNode {
  const list = useRequest(() => api<Record<QueryKind, QueryStatus[]> & { folderError: string | null }>('GET', `/admin/v1/orgs/${seg(org)}/${kind}`), [org, kind]);
  const noun = kind === 'triggers' ? 'trigger' : 'segment';
  return (
    <section aria-labelledby="queries-title">
      <div className="row">
        <h2 id="queries-title">{kind === 'triggers' ? 'Triggers' : 'Segments'}</h2>
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
          ) : (
            <>
              A segment is a query over <code>profiles</code> that returns one column, <code>email</code>: flows exclude or include its members, or send to
              them on a schedule.
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
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}

export function QueryEditor({ org, kind, name, eventType }: { org: string; kind: QueryKind; name: string; eventType: string | null }): ReactNode {
  const isNew = name === 'new';
  const noun = kind === 'triggers' ? 'trigger' : 'segment';
  const existing = useRequest(
    () => (isNew ? Promise.resolve(undefined) : api<QueryStatus & { sql: string }>('GET', `/admin/v1/orgs/${seg(org)}/${kind}/${seg(name)}`)),
    [org, kind, name],
  );
  const [draftName, setDraftName] = useState(isNew && eventType ? nameFor(eventType) : '');
  const [initialSql] = useState<string | undefined>(
    isNew ? (eventType ? referenceQuery(eventType) : kind === 'segments' ? "SELECT email_address AS email FROM profiles WHERE first_name = 'Ada'" : referenceQuery('custom_')) : undefined,
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
        </p>
      ) : null}
      {isNew ? (
        <label>
          Name
          <input value={draftName} onChange={(e) => setDraftName(e.target.value)} required pattern="[a-z][a-z0-9_]{0,63}" placeholder={kind === 'segments' ? 'vip' : 'booking_completed'} />
        </label>
      ) : null}
      <div className="editor-grid">
        <div>
          <SqlEditor value={text} onChange={setSql} label={`SQL of the ${noun}`} />
          {kind === 'triggers' ? (
            <p className="muted">
              <code>{'{cursor_start_time}'}</code> and <code>{'{cursor_end_time}'}</code> are the window each run reads (<code>ts</code> in it).
            </p>
          ) : (
            <p className="muted">
              A segment returns one column, <code>email</code>: the contacts in it (<code>email_address AS email</code> from <code>profiles</code>).
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

interface Version {
  version: number;
  hash: string;
  status: 'valid' | 'refused';
  error: string | null;
  committedAt: string;
  fired?: { rows: number; sent: number };
}

/** Every version, newest first, with its hash, why it was refused, and what it fired. */
function Versions({ org, kind, name, round }: { org: string; kind: QueryKind; name: string; round: number }): ReactNode {
  const versions = usePages(
    (cursor) => asPage(api<{ versions: Version[]; nextCursor: string | null }>('GET', `/admin/v1/orgs/${seg(org)}/${kind}/${seg(name)}/versions?limit=100${cursorParam(cursor)}`), 'versions'),
    [org, kind, name, round],
  );
  return (
    <section aria-labelledby="versions-title">
      <h3 id="versions-title">Versions</h3>
      <Status request={versions} what="versions" />
      {versions.data ? (
        <table>
          <thead>
            <tr>
              <th scope="col">Version</th>
              <th scope="col">Hash</th>
              <th scope="col">Committed</th>
              <th scope="col">Status</th>
              {kind === 'triggers' ? <th scope="col">Fired</th> : null}
            </tr>
          </thead>
          <tbody>
            {versions.data.map((v) => (
              <tr key={v.version} data-version={v.version}>
                <td>v{v.version}</td>
                <td>
                  <code title={v.hash}>{v.hash.slice(0, 12)}</code>
                </td>
                <td>
                  <Time iso={v.committedAt} />
                </td>
                <td>
                  {v.status}
                  {v.error ? <div className="muted">{v.error}</div> : null}
                </td>
                {v.fired ? (
                  <td>
                    {v.fired.rows} rows, {v.fired.sent} sent
                  </td>
                ) : null}
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      <LoadMore pages={versions} what="versions" />
    </section>
  );
}

/** The contacts this SQL adds and removes against the live version over the window. */
function DiffPanel({ diff }: { diff: ContactDiff }): ReactNode {
  const against = diff.liveVersion === null ? 'No live version: every contact is added' : `Against live v${diff.liveVersion}`;
  return (
    <section aria-labelledby="diff-title" className="diff">
      <h3 id="diff-title">
        {against}: {diff.added.length} added, {diff.removed.length} removed, {diff.unchanged.toLocaleString()} unchanged, from <Time iso={diff.window.from} /> to{' '}
        <Time iso={diff.window.to} />
      </h3>
      {diff.truncated ? <p className="warning">More contacts than listed, or more than could be compared: narrow the window to see them all.</p> : null}
      <ul className="plain">
        {diff.added.map((identity) => (
          <li key={`+${identity}`} data-added={identity}>
            <code>+ {identity}</code>
          </li>
        ))}
        {diff.removed.map((identity) => (
          <li key={`-${identity}`} data-removed={identity}>
            <code>− {identity}</code>
          </li>
        ))}
      </ul>
      {diff.liveVersion !== null ? <p className="muted">Save again to make this version live.</p> : null}
    </section>
  );
}

function PreviewTable({ preview }: { preview: Preview }): ReactNode {
  const columns = Object.keys(preview.rows[0] ?? {});
  const inView = useInView<HTMLElement>(preview);
  return (
    <section aria-labelledby="preview-title" ref={inView}>
      <h3 id="preview-title">
        {preview.count.toLocaleString()} row{preview.count === 1 ? '' : 's'} from <Time iso={preview.window.from} /> to <Time iso={preview.window.to} />
      </h3>
      {preview.truncated ? <p className="warning">Cut off at {preview.count.toLocaleString()} rows: narrow the window to see the rest.</p> : null}
      {columns.length > 0 ? (
        <div className="scroll">
          <table className="preview">
            <thead>
              <tr>
                {columns.map((column) => (
                  <th scope="col" key={column}>
                    {column}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {preview.rows.map((row, i) => (
                <tr key={i}>
                  {columns.map((column) => (
                    <td key={column}>{cell(row[column])}</td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </section>
  );
}

function cell(value: unknown): string {
  if (value === null || value === undefined) return '';
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}
