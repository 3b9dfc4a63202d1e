/** Pieces every page uses: requests with loading and error states, links, copy buttons. */
import { type ReactNode, useCallback, useEffect, useRef, useState } from 'react';
import { ApiError } from './api';

export interface Request<T> {
  data: T | undefined;
  error: ApiError | undefined;
  loading: boolean;
  reload(): void;
}

/** How often a page reads again what moves on its own (held events, a live flow; charts: charts.tsx RANGES). */
export const ACTIVITY_REFRESH_MS = 5_000;

/** Runs `reload` every `ms` while mounted and `on`. */
export function useEvery(ms: number, reload: () => void, on = true): void {
  useEffect(() => {
    if (!on) return;
    const timer = setInterval(reload, ms);
    return () => clearInterval(timer);
  }, [ms, reload, on]);
}

/** A result that appears below the fold is scrolled into view when it arrives (each time `result` changes). */
export function useInView<T extends HTMLElement>(result: unknown) {
  const ref = useRef<T>(null);
  useEffect(() => {
    if (result !== undefined) ref.current?.scrollIntoView({ block: 'nearest' });
  }, [result]);
  return ref;
}

/** Runs `load` now and whenever `deps` change; `reload` runs it again. */
export function useRequest<T>(load: () => Promise<T>, deps: unknown[]): Request<T> {
  // The answer is kept with the arguments it answers: while other arguments load, none of it is shown.
  const key = JSON.stringify(deps);
  const [state, setState] = useState<{ key?: string; data?: T; error?: ApiError; loading: boolean }>({ loading: true });
  const [round, setRound] = useState(0);
  useEffect(() => {
    let current = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => current && setState({ key, data, loading: false }),
      (error: unknown) => current && setState({ key, error: asApiError(error), loading: false }),
    );
    return () => {
      current = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [key, round]);
  const reload = useCallback(() => setRound((r) => r + 1), []);
  const fresh = state.key === key;
  return { data: fresh ? state.data : undefined, error: fresh ? state.error : undefined, loading: state.loading || !fresh, reload };
}

/** One page of an admin list, whatever the list calls its items. */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export interface Pages<T> extends Request<T[]> {
  hasMore: boolean;
  loadingMore: boolean;
  loadMore(): void;
}

/**
 * A paged admin list: the first page loads like useRequest (again when `deps` change); loadMore appends
 * the page after the last one shown, by its cursor.
 */
export function usePages<T>(load: (cursor?: string) => Promise<Page<T>>, deps: unknown[]): Pages<T> {
  const first = useRequest(() => load(), deps);
  const [more, setMore] = useState<{ after: Page<T>; pages: Page<T>[]; loading: boolean; error?: ApiError }>();
  // Pages loaded after another first page (other filters, a reload) are not this list's.
  const current = more && first.data && more.after === first.data ? more : undefined;
  const last = current?.pages.at(-1) ?? first.data;
  const loadMore = () => {
    const after = first.data;
    const cursor = last?.nextCursor;
    if (!after || !cursor || current?.loading) return;
    setMore({ after, pages: current?.pages ?? [], loading: true });
    load(cursor).then(
      (page) => setMore((m) => (m?.after === after ? { after, pages: [...m.pages, page], loading: false } : m)),
      (error: unknown) => setMore((m) => (m?.after === after ? { ...m, loading: false, error: asApiError(error) } : m)),
    );
  };
  return {
    data: first.data ? [first.data, ...(current?.pages ?? [])].flatMap((page) => page.items) : undefined,
    error: first.error ?? current?.error,
    loading: first.loading,
    reload: first.reload,
    hasMore: Boolean(last?.nextCursor),
    loadingMore: current?.loading ?? false,
    loadMore,
  };
}

/** "Load more" under a paged list while it has more. */
export function LoadMore({ pages, what }: { pages: Pages<unknown>; what: string }): ReactNode {
  if (!pages.data || !pages.hasMore) return null;
  return (
    <button type="button" className="small secondary" onClick={pages.loadMore} disabled={pages.loadingMore}>
      {pages.loadingMore ? `Loading more ${what}…` : `Load more ${what}`}
    </button>
  );
}

export function asApiError(error: unknown): ApiError {
  return error instanceof ApiError ? error : new ApiError(0, 'error', error instanceof Error ? error.message : String(error));
}

/** What a request is doing: a spinner line while loading, the problem when it failed. */
export function Status({ request, what }: { request: Pick<Request<unknown>, 'loading' | 'error'>; what: string }): ReactNode {
  if (request.error) return <ErrorBox error={request.error} />;
  if (request.loading) return <p className="muted" role="status">Loading {what}…</p>;
  return null;
}

export function ErrorBox({ error }: { error: ApiError | undefined }): ReactNode {
  if (!error) return null;
  return (
    <div className="error" role="alert">
      <strong>{error.detail}</strong>
      {error.code !== 'unreachable' && error.code !== 'error' ? (
        <>
          {' '}
          <a href={`/problems/${error.code}`} target="_blank" rel="noreferrer">
            <code>{error.code}</code>
          </a>
        </>
      ) : null}
    </div>
  );
}

export function CopyButton({ text, label }: { text: string; label: string }): ReactNode {
  const [copied, setCopied] = useState(false);
  return (
    <button
      type="button"
      className="small"
      aria-label={label}
      onClick={() => {
        void navigator.clipboard?.writeText(text).then(() => setCopied(true));
      }}
    >
      {copied ? 'Copied' : 'Copy'}
    </button>
  );
}

export function Time({ iso }: { iso: string | null | undefined }): ReactNode {
  if (!iso) return <span className="muted">—</span>;
  return <time dateTime={iso}>{new Date(iso).toLocaleString()}</time>;
}
