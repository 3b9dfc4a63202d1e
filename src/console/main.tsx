/** The console: sign-in with the admin key, then orgs and, per org, its events, triggers, segments and traits. */
import { type FormEvent, type ReactNode, StrictMode, useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { api, type ApiError, session } from './api';
import { EventsPage } from './events-page';
import { EditFlow, FlowsPage, NewFlow } from './flows-page';
import { FlowDetail } from './flow-detail';
import { OrgsPage } from './orgs-page';
import { ProfilesPage } from './profiles-page';
import { SettingsPage } from './settings-page';
import { href, useRoute } from './route';
import { QueriesPage } from './triggers-page';
import { QueryEditor } from './query-editor';
import { asApiError, ErrorBox } from './ui';
import './styles.css';

function App(): ReactNode {
  const [signedIn, setSignedIn] = useState(session.key() !== null);
  useEffect(() => {
    const out = () => setSignedIn(false);
    window.addEventListener('audience:signed-out', out);
    return () => window.removeEventListener('audience:signed-out', out);
  }, []);
  if (!signedIn) return <SignIn onSignedIn={() => setSignedIn(true)} />;
  return (
    <>
      <header className="top">
        <a className="brand" href={href()}>
          Audience
        </a>
        <nav aria-label="Main">
          <a href={href()}>Orgs</a>
          <a href="/docs/" target="_blank" rel="noreferrer">
            API reference
          </a>
        </nav>
        <button type="button" className="small" onClick={session.signOut}>
          Sign out
        </button>
      </header>
      <main>
        <Page />
      </main>
    </>
  );
}

function Page(): ReactNode {
  const { parts, query } = useRoute();
  const [section, slug, tab, name, action] = parts;
  if (section !== 'orgs' || !slug) return <OrgsPage />;
  return (
    <>
      <nav className="tabs" aria-label={`Org ${slug}`}>
        <h1>
          <code>{slug}</code>
        </h1>
        {(['events', 'triggers', 'segments', 'traits', 'flows', 'profiles', 'settings'] as const).map((item) => (
          <a key={item} href={href('orgs', slug, item)} aria-current={tab === item || (!tab && item === 'events') ? 'page' : undefined}>
            {item[0]!.toUpperCase() + item.slice(1)}
          </a>
        ))}
      </nav>
      {tab === 'profiles' ? (
        <ProfilesPage org={slug} />
      ) : tab === 'settings' ? (
        <SettingsPage org={slug} />
      ) : tab === 'flows' ? (
        name === 'new' ? (
          <NewFlow org={slug} />
        ) : name && action === 'edit' ? (
          <EditFlow key={name} org={slug} id={name} />
        ) : name ? (
          <FlowDetail key={name} org={slug} id={name} />
        ) : (
          <FlowsPage org={slug} />
        )
      ) : tab === 'triggers' || tab === 'segments' || tab === 'traits' ? (
        name ? (
          <QueryEditor key={`${tab}/${name}`} org={slug} kind={tab} name={name} eventType={query.get('eventType')} />
        ) : (
          <QueriesPage org={slug} kind={tab} />
        )
      ) : (
        <EventsPage org={slug} />
      )}
    </>
  );
}

function SignIn({ onSignedIn }: { onSignedIn(): void }): ReactNode {
  const [key, setKey] = useState('');
  const [error, setError] = useState<ApiError>();
  const [busy, setBusy] = useState(false);
  // After too many wrong keys the service refuses every key from this address for a while (429).
  const [retryAt, setRetryAt] = useState(0);
  const waitSeconds = useSecondsUntil(retryAt);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await api('GET', '/admin/v1/orgs', undefined, key);
      session.signIn(key);
      onSignedIn();
    } catch (e) {
      const problem = asApiError(e);
      if (problem.status === 429) setRetryAt(Date.now() + (problem.retryAfterSeconds ?? 1) * 1000);
      setError(problem.code === 'invalid_admin_key' ? Object.assign(problem, { detail: 'That admin key is not accepted. Use ADMIN_KEY, or the contents of DATA_DIR/admin.key.' }) : problem);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main className="sign-in">
      <form className="card" onSubmit={submit} aria-labelledby="sign-in-title">
        <h1 id="sign-in-title">Audience console</h1>
        <label>
          Admin key
          <input type="password" autoComplete="current-password" value={key} onChange={(e) => setKey(e.target.value)} required autoFocus />
        </label>
        <p className="muted">Kept in this tab only, until you sign out or close it.</p>
        {error?.status === 429 ? (
          <div className="error" role="alert">
            <strong>{waitSeconds > 0 ? `Too many failed attempts: try again in ${waitSeconds} s.` : 'Too many failed attempts: you can try again now.'}</strong>
          </div>
        ) : (
          <ErrorBox error={error} />
        )}
        <button type="submit" disabled={busy || waitSeconds > 0}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}

/** Whole seconds left until `at` (epoch ms), counting down. */
function useSecondsUntil(at: number): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    setNow(Date.now());
    if (at <= Date.now()) return;
    const timer = setInterval(() => {
      setNow(Date.now());
      if (Date.now() >= at) clearInterval(timer);
    }, 250);
    return () => clearInterval(timer);
  }, [at]);
  return Math.max(0, Math.ceil((at - now) / 1000));
}

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
