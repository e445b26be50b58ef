// The console's own router, its pure half (no React): the browser history as a store of locations,
// the matching of a nested route tree of static paths, and the rules of links. The console has no
// path parameters, so a route matches its whole path or nothing; router.tsx draws the matches.

/** Where the browser is. `key` is "default" for the first entry of a session (nothing to go back to). */
export interface Location {
  pathname: string;
  search: string;
  hash: string;
  key: string;
}

export interface NavigateOptions {
  replace?: boolean;
}

/** What the browser offers the history store; tests pass a fake. */
export interface HistoryHost {
  location: { href: string };
  history: {
    state: unknown;
    pushState(data: unknown, unused: string, url?: string): void;
    replaceState(data: unknown, unused: string, url?: string): void;
    go(delta: number): void;
  };
  addEventListener(type: 'popstate', listener: () => void): void;
  removeEventListener(type: 'popstate', listener: () => void): void;
}

export interface History {
  /** The current location; the same object until the location changes (useSyncExternalStore). */
  location(): Location;
  subscribe(listener: () => void): () => void;
  /** A path (absolute, or relative to the current one: "?a=1"), or a step back/forward through history. */
  navigate(to: string | number, options?: NavigateOptions): void;
  /** The absolute URL path (pathname, search, hash) `to` names from the current location. */
  resolve(to: string): string;
}

const randomKey = () => Math.random().toString(36).slice(2, 10);

function keyOf(state: unknown): string | undefined {
  const key = state && typeof state === 'object' ? (state as { key?: unknown }).key : undefined;
  return typeof key === 'string' ? key : undefined;
}

function read(host: HistoryHost): Location {
  const url = new URL(host.location.href);
  return {
    pathname: url.pathname,
    search: url.search,
    hash: url.hash,
    key: keyOf(host.history.state) ?? 'default',
  };
}

export function createHistory(host: HistoryHost): History {
  let current = read(host);
  const listeners = new Set<() => void>();
  const changed = () => {
    const next = read(host);
    if (
      next.key === current.key &&
      next.pathname === current.pathname &&
      next.search === current.search &&
      next.hash === current.hash
    )
      return;
    current = next;
    for (const l of [...listeners]) l();
  };
  const resolve = (to: string) => {
    const url = new URL(to, host.location.href);
    return url.pathname + url.search + url.hash;
  };
  return {
    location: () => current,
    subscribe(listener) {
      if (listeners.size === 0) host.addEventListener('popstate', changed);
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
        if (listeners.size === 0) host.removeEventListener('popstate', changed);
      };
    },
    navigate(to, options = {}) {
      if (typeof to === 'number') {
        host.history.go(to);
        return;
      }
      const url = resolve(to);
      // A replaced entry keeps its key: going back from it is as possible as it was before.
      const key = options.replace ? current.key : randomKey();
      const state = { key };
      if (options.replace) host.history.replaceState(state, '', url);
      else host.history.pushState(state, '', url);
      changed();
    },
    resolve,
  };
}

/** A route of the tree: a static path (absolute, or relative to its parent's), an index, or '*'. */
export interface RouteObject<Element = unknown> {
  path?: string;
  index?: boolean;
  element?: Element;
  /** Drawn instead of this route's element when anything below it throws while rendering. */
  errorElement?: Element;
  handle?: unknown;
  children?: RouteObject<Element>[];
}

export interface RouteMatch<Element = unknown> {
  route: RouteObject<Element>;
  /** The absolute path of the route (its parent's for a pathless or index route). */
  pathname: string;
  handle: unknown;
}

/** The path without its trailing slash (except the root), compared without case as react-router did. */
export function normalizePath(pathname: string): string {
  const p = pathname.length > 1 ? pathname.replace(/\/+$/, '') : pathname;
  return (p || '/').toLowerCase();
}

function join(base: string, path: string): string {
  if (path.startsWith('/')) return path;
  return `${base.replace(/\/+$/, '')}/${path}`;
}

function walk<E>(
  routes: readonly RouteObject<E>[],
  base: string,
  target: string,
  splat: boolean,
): RouteMatch<E>[] | null {
  for (const route of routes) {
    if (route.path === '*') {
      if (splat) return [{ route, pathname: target, handle: route.handle }];
      continue;
    }
    const own = route.path === undefined ? base : join(base, route.path);
    const here: RouteMatch<E> = { route, pathname: own, handle: route.handle };
    if (route.index) {
      if (normalizePath(own) === target) return [here];
      continue;
    }
    if (route.children?.length) {
      const below = walk(route.children, own, target, splat);
      if (below) return [here, ...below];
    }
    if (route.path !== undefined && !route.children?.length && normalizePath(own) === target) return [here];
  }
  return null;
}

/**
 * The chain of routes, outermost first, that draws `pathname`: an exact path wins over '*' wherever
 * in the tree either is; null when nothing (not even '*') matches.
 */
export function matchRoutes<E>(routes: readonly RouteObject<E>[], pathname: string): RouteMatch<E>[] | null {
  const target = normalizePath(pathname);
  return walk(routes, '', target, false) ?? walk(routes, '', target, true);
}

/** NavLink's rule: the location is the link's path or below it (the root only exactly). */
export function isActivePath(to: string, pathname: string): boolean {
  const link = normalizePath(to.split(/[?#]/)[0]);
  const here = normalizePath(pathname);
  if (here === link) return true;
  return link !== '/' && here.startsWith(`${link}/`);
}

export interface ClickLike {
  button: number;
  metaKey: boolean;
  altKey: boolean;
  ctrlKey: boolean;
  shiftKey: boolean;
  defaultPrevented: boolean;
}

/**
 * Whether a click on a link is the router's to handle: a plain primary click on a link that opens in
 * this tab. A modified or middle click, or target=_blank, is left to the browser (new tab, window,
 * download).
 */
export function routerHandlesClick(e: ClickLike, target: string | undefined): boolean {
  if (e.defaultPrevented || e.button !== 0) return false;
  if (target && target !== '_self') return false;
  return !(e.metaKey || e.altKey || e.ctrlKey || e.shiftKey);
}
