/**
 * A small history-API router: the server answers every page path with index.html, so a link,
 * a reload and the back button all land on the same route. `Link` keeps ordinary anchors (they
 * open in new tabs, work with the keyboard and read as links) and only intercepts plain clicks.
 */
import { h } from 'preact';
import type { ComponentChildren, JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';

export interface Location {
  path: string;
  query: URLSearchParams;
  hash: string;
}

const listeners = new Set<() => void>();

function current(): Location {
  return { path: window.location.pathname, query: new URLSearchParams(window.location.search), hash: window.location.hash };
}

export function navigate(to: string, options: { replace?: boolean } = {}): void {
  if (options.replace) window.history.replaceState(null, '', to);
  else window.history.pushState(null, '', to);
  for (const listener of listeners) listener();
}

window.addEventListener('popstate', () => {
  for (const listener of listeners) listener();
});

export function useLocation(): Location {
  const [location, setLocation] = useState(current);
  useEffect(() => {
    const update = (): void => setLocation(current());
    listeners.add(update);
    return () => {
      listeners.delete(update);
    };
  }, []);
  return location;
}

type AnchorProps = JSX.HTMLAttributes<HTMLAnchorElement> & { href: string; children?: ComponentChildren };

export function Link(props: AnchorProps): JSX.Element {
  const onClick = (event: JSX.TargetedMouseEvent<HTMLAnchorElement>): void => {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(props.href);
  };
  return h('a', { ...props, onClick });
}
