// The console's router drawn by React (server rendering, no DOM): the matched chain with Outlet and
// its context, Link and NavLink, the hooks, and the error boundary's reset on a new location.
import { createElement as h, type ReactNode } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { useRouteMeta } from '#web/router/handle.ts';
import type { HistoryHost } from '#web/router/history.ts';
import {
  createRouter,
  Link,
  NavLink,
  Outlet,
  RouteErrorBoundary,
  type RouteObject,
  RouterProvider,
  useLocation,
  useOutletContext,
  useRouteError,
  useSearchParams,
} from '#web/router/router.tsx';

const host = (href: string, state: unknown = null): HistoryHost => ({
  location: { href },
  history: { state, pushState() {}, replaceState() {}, go() {} },
  addEventListener() {},
  removeEventListener() {},
});

function Frame() {
  return h('div', { id: 'frame' }, h(Outlet, { context: { tab: 'keys' } }));
}
function Page() {
  const tab = useOutletContext<{ tab: string } | undefined>()?.tab;
  const loc = useLocation();
  const [params] = useSearchParams();
  const meta = useRouteMeta();
  return h('p', null, `${loc.pathname} ${params.get('q')} ${tab} ${meta?.meta.titleKey} ${loc.key}`);
}
function ShowError() {
  return h('i', null, String(useRouteError()));
}
const meta = (path: string) => ({ meta: { titleKey: `t${path}` }, path });
const routes: RouteObject[] = [
  {
    element: h('main', null, h(Outlet)),
    children: [
      { path: '/bare', element: h('span', null, 'bare'), handle: meta('/bare') },
      { element: h(Frame), children: [{ path: '/page', element: h(Page), handle: meta('/page') }] },
      { path: '/parent', handle: meta('/parent'), children: [{ path: 'child', element: h(Page) }] },
    ],
  },
];
const draw = (href: string, state: unknown = null) =>
  renderToStaticMarkup(h(RouterProvider, { router: createRouter(routes, host(href, state)) }));

describe('router rendering', () => {
  it('draws the matched chain: pathless parents, Outlet context, location, query and handle', () => {
    expect(draw('http://c.test/bare')).toBe('<main><span>bare</span></main>');
    expect(draw('http://c.test/page?q=7', { key: 'k1' })).toBe(
      '<main><div id="frame"><p>/page 7 keys t/page k1</p></div></main>',
    );
  });

  it('a parent without an element draws its child; its handle is the nearest one with meta', () => {
    expect(draw('http://c.test/parent/child')).toBe(
      '<main><p>/parent/child null undefined t/parent default</p></main>',
    );
  });

  it('draws nothing for a path no route matches', () => {
    expect(draw('http://c.test/elsewhere')).toBe('');
  });

  it('Link has the resolved href; NavLink marks its section with aria-current and its class', () => {
    const links: RouteObject[] = [
      {
        path: '/admin/users',
        element: h(
          'nav',
          null,
          h(Link, { to: '/mainboard', className: 'l' }, 'a'),
          h(NavLink, { to: '/admin', className: ({ isActive }) => (isActive ? 'on' : 'off') }, 'b'),
          h(NavLink, { to: '/mainboard', className: ({ isActive }) => (isActive ? 'on' : 'off') }, 'c'),
        ),
      },
    ];
    const html = renderToStaticMarkup(
      h(RouterProvider, { router: createRouter(links, host('http://c.test/admin/users')) }),
    );
    expect(html).toBe(
      '<nav><a class="l" href="/mainboard">a</a><a aria-current="page" class="on" href="/admin">b</a>' +
        '<a class="off" href="/mainboard">c</a></nav>',
    );
  });
});

describe('route error boundary', () => {
  it('shows the error element with the error, and clears it on a new location', () => {
    const props = (resetKey: string) => ({
      fallback: null as ReactNode,
      resetKey,
      children: null as ReactNode,
    });
    const caught = RouteErrorBoundary.getDerivedStateFromError(new Error('chunk failed'));
    expect(caught).toEqual({ error: new Error('chunk failed'), caught: true });
    const state = { ...caught, key: 'a/page' };
    expect(RouteErrorBoundary.getDerivedStateFromProps(props('a/page'), state)).toBeNull();
    expect(RouteErrorBoundary.getDerivedStateFromProps(props('b/other'), state)).toEqual({
      error: undefined,
      caught: false,
      key: 'b/other',
    });
  });

  it('useRouteError reads nothing outside a caught error', () => {
    expect(renderToStaticMarkup(h(ShowError))).toBe('<i>undefined</i>');
  });
});
