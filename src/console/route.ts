/** The console's place is the URL's hash (`#/orgs/acme/events`): no server route per page, nothing secret. */
import { useEffect, useRef, useState } from 'react';

/** While a page holds unsaved edits: the question asked before the console leaves it. */
let unsaved: string | undefined;
/** The next hash change is the console's own (`go`, after a save): not asked about. */
let ownMove = false;

export interface Route {
  parts: string[];
  query: URLSearchParams;
}

function current(): Route {
  const [path = '', search = ''] = window.location.hash.replace(/^#\/?/, '').split('?');
  return { parts: path.split('/').filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(search) };
}

export function useRoute(): Route {
  const [route, setRoute] = useState(current);
  const shown = useRef(window.location.hash);
  useEffect(() => {
    const changed = () => {
      const asked = unsaved !== undefined && !ownMove;
      ownMove = false;
      if (asked && !window.confirm(unsaved)) {
        // Stay, edits and all: the address goes back without another hashchange.
        window.history.replaceState(null, '', shown.current || '#/');
        return;
      }
      shown.current = window.location.hash;
      setRoute(current());
    };
    window.addEventListener('hashchange', changed);
    return () => window.removeEventListener('hashchange', changed);
  }, []);
  return route;
}

/**
 * While `dirty`, leaving the page asks first: a link or the back button inside the console (confirm), and
 * closing or reloading the tab (the browser's own question).
 */
export function useUnsavedChanges(dirty: boolean, question = 'Leave this page? What you edited is not saved.'): void {
  useEffect(() => {
    if (!dirty) return;
    unsaved = question;
    const beforeUnload = (event: BeforeUnloadEvent) => event.preventDefault();
    window.addEventListener('beforeunload', beforeUnload);
    return () => {
      unsaved = undefined;
      window.removeEventListener('beforeunload', beforeUnload);
    };
  }, [dirty, question]);
}

/** `href('orgs', slug, 'events')` → `#/orgs/acme/events`; each part one segment. */
export function href(...parts: string[]): string {
  return `#/${parts.map(encodeURIComponent).join('/')}`;
}

export function go(to: string): void {
  ownMove = window.location.hash !== to;
  window.location.hash = to;
}
