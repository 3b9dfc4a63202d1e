/**
 * What the query editor shows under the SQL: the rows a preview returned, the contacts a new version
 * adds and removes, and every saved version.
 */
import type { ReactNode } from 'react';
import { api, asPage, cursorParam, seg } from './api';
import type { QueryKind } from './query-kind';
import { LoadMore, Status, Time, useInView, usePages } from './ui';

export interface Preview {
  window: { from: string; to: string };
  count: number;
  truncated: boolean;
  rows: Array<Record<string, unknown>>;
}

/** POST …/triggers/{name}/diff: contacts are distinct identities. */
export interface ContactDiff {
  liveVersion: number | null;
  window: { from: string; to: string };
  added: string[];
  removed: string[];
  unchanged: number;
  truncated: boolean;
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
export function Versions({ org, kind, name, round }: { org: string; kind: QueryKind; name: string; round: number }): ReactNode {
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
export function DiffPanel({ diff }: { diff: ContactDiff }): ReactNode {
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

export function PreviewTable({ preview }: { preview: Preview }): ReactNode {
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
