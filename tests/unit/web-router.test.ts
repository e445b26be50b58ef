// The console's router, its pure half: the history store over a fake browser, the matching of the
// console's real route tree (app-router.tsx over the route table), and the rules of links.
import { describe, expect, it } from 'vitest';
import { buildRoutes } from '#web/app-router.tsx';
import {
  createHistory,
  type HistoryHost,
  isActivePath,
  matchRoutes,
  type RouteObject,
  routerHandlesClick,
} from '#web/router/history.ts';
import { routeTable } from '#web/router/table.ts';

/** A browser history: entries, an index, and popstate on go(). */
function fakeHost(start = 'http://console.test/') {
  const entries: { url: string; state: unknown }[] = [{ url: start, state: null }];
  let at = 0;
  const listeners = new Set<() => void>();
  const calls: string[] = [];
  const host: HistoryHost = {
    location: {
      get href() {
        return entries[at].url;
      },
    },
    history: {
      get state() {
        return entries[at].state;
      },
      pushState(state, _u, url) {
        calls.push(`push ${url}`);
        entries.splice(at + 1);
        entries.push({ url: new URL(url ?? '', entries[at].url).href, state });
        at += 1;
      },
      replaceState(state, _u, url) {
        calls.push(`replace ${url}`);
        entries[at] = { url: new URL(url ?? '', entries[at].url).href, state };
      },
      go(delta) {
        at = Math.max(0, Math.min(entries.length - 1, at + delta));
        for (const l of [...listeners]) l();
      },
    },
    addEventListener: (_t, l) => listeners.add(l),
    removeEventListener: (_t, l) => listeners.delete(l),
  };
  return { host, calls, entries: () => entries.length, listeners };
}

describe('history store', () => {
  it('starts on the browser’s location with the key "default", and pushes with a new key', () => {
    const { host, calls } = fakeHost('http://console.test/mainboard?x=1#h');
    const h = createHistory(host);
    expect(h.location()).toEqual({ pathname: '/mainboard', search: '?x=1', hash: '#h', key: 'default' });
    let heard = 0;
    h.subscribe(() => heard++);
    h.navigate('/workbench');
    expect(calls).toEqual(['push /workbench']);
    expect(h.location().pathname).toBe('/workbench');
    expect(h.location().key).not.toBe('default');
    expect(heard).toBe(1);
  });

  it('replaces keeping the key, resolves relative paths, and keeps the snapshot stable', () => {
    const { host, calls, entries } = fakeHost('http://console.test/flash-images?upload');
    const h = createHistory(host);
    h.navigate('/mainboard');
    const pushed = h.location();
    expect(h.location()).toBe(pushed); // useSyncExternalStore needs the same object until a change
    h.navigate('?activeTab=keys', { replace: true });
    expect(calls).toEqual(['push /mainboard', 'replace /mainboard?activeTab=keys']);
    expect(h.location()).toMatchObject({
      pathname: '/mainboard',
      search: '?activeTab=keys',
      key: pushed.key,
    });
    expect(entries()).toBe(2);
  });

  it('goes back with -1 and follows popstate; unsubscribing stops listening', () => {
    const { host, listeners } = fakeHost('http://console.test/');
    const h = createHistory(host);
    const seen: string[] = [];
    const stop = h.subscribe(() => seen.push(h.location().pathname));
    expect(listeners.size).toBe(1);
    h.navigate('/login');
    h.navigate('/mainboard');
    h.navigate(-1);
    expect(h.location().pathname).toBe('/login');
    h.navigate(-1);
    expect(h.location()).toMatchObject({ pathname: '/', key: 'default' });
    expect(seen).toEqual(['/login', '/mainboard', '/login', '/']);
    stop();
    expect(listeners.size).toBe(0);
  });
});

describe('matching', () => {
  const tree: RouteObject<string>[] = [
    {
      element: 'root',
      children: [
        { path: '/a', element: 'a' },
        { element: 'frame', children: [{ path: '/b', element: 'b' }] },
        {
          element: 'layout',
          children: [
            {
              path: '/c',
              children: [
                { index: true, element: 'c-index' },
                { path: 'd', element: 'd' },
              ],
            },
          ],
        },
        { path: '*', element: 'splat' },
      ],
    },
  ];
  const chain = (p: string) => matchRoutes(tree, p)?.map((m) => `${m.route.element ?? '-'}@${m.pathname}`);

  it('matches nested pathless, index and relative child routes', () => {
    expect(chain('/a')).toEqual(['root@', 'a@/a']);
    expect(chain('/b')).toEqual(['root@', 'frame@', 'b@/b']);
    expect(chain('/c')).toEqual(['root@', 'layout@', '-@/c', 'c-index@/c']);
    expect(chain('/c/d')).toEqual(['root@', 'layout@', '-@/c', 'd@/c/d']);
  });

  it('ignores a trailing slash and case, and sends anything else to *', () => {
    expect(chain('/C/D/')).toEqual(['root@', 'layout@', '-@/c', 'd@/c/d']);
    expect(chain('/c/e')).toEqual(['root@', 'splat@/c/e']);
    expect(chain('/ab')).toEqual(['root@', 'splat@/ab']);
    expect(matchRoutes([{ path: '/a' }], '/b')).toBeNull();
  });

  it('an exact path wins over a * listed before it', () => {
    const early: RouteObject<string>[] = [
      { path: '*', element: 'splat' },
      { path: '/x', element: 'x' },
    ];
    expect(matchRoutes(early, '/x')?.map((m) => m.route.element)).toEqual(['x']);
  });

  it('draws the console’s table in the same shape as before (root, frames, layout, 404)', () => {
    const routes = buildRoutes(routeTable, 'full');
    const handles = (p: string) =>
      matchRoutes(routes, p)?.map((m) => (m.handle as { path?: string } | undefined)?.path ?? '-');
    expect(handles('/')).toEqual(['-', '/']);
    expect(handles('/login')).toEqual(['-', '/login']);
    expect(handles('/mainboard')).toEqual(['-', '-', '/mainboard']);
    expect(handles('/clouddevice/public')).toEqual(['-', '-', '/clouddevice', '/clouddevice/public']);
    expect(handles('/admin')).toEqual(['-', '-', '/admin', '-']); // the index redirect to the first section
    expect(handles('/admin/audit')).toEqual(['-', '-', '/admin', '/admin/audit']);
    expect(handles('/nowhere')).toEqual(['-', '*']);
    // The reduced set has no layout pages: they are unknown paths there.
    expect(matchRoutes(buildRoutes(routeTable, 'reduced'), '/admin/users')?.at(-1)?.route.path).toBe('*');
    // The root route catches errors of every page.
    expect(routes[0].errorElement).toBeTruthy();
  });
});

describe('links', () => {
  it('NavLink is active on its path and below it, the root only exactly', () => {
    expect(isActivePath('/admin', '/admin/users')).toBe(true);
    expect(isActivePath('/admin/users', '/admin/users/')).toBe(true);
    expect(isActivePath('/mainboard?x=1', '/mainboard')).toBe(true);
    expect(isActivePath('/admin', '/administer')).toBe(false);
    expect(isActivePath('/', '/mainboard')).toBe(false);
    expect(isActivePath('/', '/')).toBe(true);
  });

  it('leaves modified, middle and new-tab clicks to the browser', () => {
    const click = {
      button: 0,
      metaKey: false,
      altKey: false,
      ctrlKey: false,
      shiftKey: false,
      defaultPrevented: false,
    };
    expect(routerHandlesClick(click, undefined)).toBe(true);
    expect(routerHandlesClick(click, '_self')).toBe(true);
    expect(routerHandlesClick({ ...click, ctrlKey: true }, undefined)).toBe(false);
    expect(routerHandlesClick({ ...click, metaKey: true }, undefined)).toBe(false);
    expect(routerHandlesClick({ ...click, shiftKey: true }, undefined)).toBe(false);
    expect(routerHandlesClick({ ...click, button: 1 }, undefined)).toBe(false);
    expect(routerHandlesClick(click, '_blank')).toBe(false);
    expect(routerHandlesClick({ ...click, defaultPrevented: true }, undefined)).toBe(false);
  });
});
