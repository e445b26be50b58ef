import { describe, expect, it } from 'vitest';
import { buildMenu, resolveActiveTab, routeAllowed, safeRedirect, visibleTabs } from '#web/router/access.ts';
import { routeTable } from '#web/router/table.ts';
import { type AccessContext, flattenRoutes, type RouteNode } from '#web/router/types.ts';

const ctx = (over: Partial<AccessContext> = {}): AccessContext => ({
  perms: [],
  licenceValid: true,
  routeSet: 'full',
  settings: null,
  ...over,
});

const table: RouteNode[] = [
  { path: '/home', meta: { titleKey: 'home' } },
  {
    path: '/one',
    frame: 'layout',
    meta: { titleKey: 'one', icon: 'dashboard' },
    children: [{ path: 'only', meta: { titleKey: 'only' } }],
  },
  {
    path: '/many',
    frame: 'layout',
    meta: { titleKey: 'many' },
    children: [
      { path: 'a', meta: { titleKey: 'a' } },
      { path: 'b', meta: { titleKey: 'b', perms: ['app.view_b'] } },
      { path: 'c', meta: { titleKey: 'c', hidden: true } },
    ],
  },
  {
    path: '/admin',
    frame: 'layout',
    meta: { titleKey: 'admin', perms: ['rbac.view_user|rbac.view_role'] },
    children: [
      { path: 'users', meta: { titleKey: 'users' } },
      { path: 'licence', meta: { titleKey: 'licence', licenceRequired: true } },
    ],
  },
  {
    path: '/reduced-less',
    frame: 'layout',
    meta: { titleKey: 'full only', sets: ['full'] },
    children: [{ path: 'x', meta: { titleKey: 'x' } }],
  },
  { path: 'docs', meta: { titleKey: 'docs', external: (s) => s?.docsUrl || undefined } },
];

describe('the sidebar built from the route table', () => {
  it('leaves out hidden and unpermitted entries and collapses a single visible child', () => {
    const menu = buildMenu(table, ctx());
    expect(menu.map((m) => m.key)).toEqual(['/one/only', '/many/a', '/reduced-less/x']);
    expect(menu[0]).toMatchObject({ titleKey: 'only', icon: 'dashboard', path: '/one/only' });
  });

  it('keeps a group when more than one child is visible', () => {
    const menu = buildMenu(table, ctx({ perms: ['app.view_b'] }));
    const many = menu.find((m) => m.key === '/many');
    expect(many?.children?.map((c) => c.path)).toEqual(['/many/a', '/many/b']);
  });

  it('accepts any `|` alternative of a permission entry and hides licence-required routes on an invalid licence', () => {
    const withLicence = buildMenu(table, ctx({ perms: ['rbac.view_role'] }));
    expect(withLicence.find((m) => m.key === '/admin')?.children?.map((c) => c.path)).toEqual([
      '/admin/users',
      '/admin/licence',
    ]);
    const without = buildMenu(table, ctx({ perms: ['rbac.view_role'], licenceValid: false }));
    expect(without.find((m) => m.key === '/admin/users')?.path).toBe('/admin/users');
  });

  it('drops routes of the other route set and gives external links their href', () => {
    const menu = buildMenu(
      table,
      ctx({ routeSet: 'reduced', settings: { docsUrl: 'https://docs.example' } as never }),
    );
    expect(menu.map((m) => m.key)).toEqual(['/one/only', '/many/a', '/docs']);
    expect(menu[2]).toMatchObject({ href: 'https://docs.example' });
  });

  it('treats `*` as holding every permission', () => {
    expect(
      routeAllowed({ titleKey: 'x', perms: ['a.b_c', 'd.e_f'] }, { perms: ['*'], licenceValid: true }),
    ).toBe(true);
    expect(routeAllowed({ titleKey: 'x', perms: ['a.b_c'] }, { perms: [], licenceValid: true })).toBe(false);
  });
});

describe('the route table of the console', () => {
  it('has the spec routes in the full set and no layout routes in the reduced set', () => {
    const full = flattenRoutes(routeTable, 'full').map((r) => r.path);
    for (const p of [
      '/',
      '/login',
      '/login-en',
      '/register',
      '/thridparty',
      '/mainboard',
      '/riscvhouse',
      '/workbench',
      '/cloudsetting',
      '/404',
      '/403',
      '/dashboard/dashboard',
      '/clouddevice/public',
      '/private-clouddevice/private',
    ])
      expect(full).toContain(p);
    const reduced = flattenRoutes(routeTable, 'reduced').map((r) => r.path);
    expect(reduced.filter((p) => p.split('/').length > 2)).toEqual([]);
    const login = routeTable.find((r) => r.path === '/login');
    expect(login?.redirect?.reduced).toBe('/thridparty');
  });

  it('marks exactly the spec public paths (and the error pages) public', () => {
    const pub = flattenRoutes(routeTable, 'full')
      .filter((r) => r.node.meta.public)
      .map((r) => r.path);
    expect(pub.sort()).toEqual(
      ['/', '/403', '/404', '/login', '/login-en', '/register', '/thridparty'].sort(),
    );
  });
});

describe('the active tab (spec section 2)', () => {
  const tabs = visibleTabs(
    [
      { name: 'a', titleKey: 'a' },
      { name: 'b', titleKey: 'b' },
      { name: 'secret', titleKey: 's', perms: ['x.view_y'] },
      { name: 'hidden', titleKey: 'h', hidden: true },
    ],
    [],
  );
  const cases: [string | null, string | undefined, string | undefined, string | undefined][] = [
    ['b', 'a', 'a', 'b'],
    [null, 'b', 'a', 'b'],
    ['nope', 'b', 'a', 'b'],
    [null, 'secret', 'b', 'b'],
    [null, undefined, 'hidden', 'a'],
    [null, undefined, undefined, 'a'],
  ];
  for (const [query, cookie, fallback, want] of cases) {
    it(`picks ${want} from query ${query}, cookie ${cookie}, default ${fallback}`, () => {
      expect(resolveActiveTab(tabs, query, cookie, fallback)).toBe(want);
    });
  }
  it('has no active tab when none is visible', () => {
    expect(resolveActiveTab([], 'a', 'b', 'c')).toBeUndefined();
  });
});

describe('redirect targets after sign-in', () => {
  const known = ['/mainboard', '/workbench'];
  const cases: [string | null, string | null][] = [
    ['/workbench', '/workbench'],
    ['/workbench?tab=1', '/workbench?tab=1'],
    ['/workbench/evil', null],
    ['/work', null],
    ['//evil.example/workbench', null],
    ['https://evil.example/workbench', null],
    ['/\\evil.example', null],
    ['', null],
    [null, null],
  ];
  for (const [target, want] of cases) {
    it(`answers ${want} for ${JSON.stringify(target)}`, () => {
      expect(safeRedirect(target, known)).toBe(want);
    });
  }
});

describe('the route set', () => {
  it('is reduced when either the build variable or the service setting says so', async () => {
    const { routeSetOf } = await import('#web/state/settings.ts');
    const settings = (routeSet: 'full' | 'reduced') => ({ routeSet }) as never;
    expect(routeSetOf(undefined, null)).toBe('full');
    expect(routeSetOf('reduced', null)).toBe('reduced');
    expect(routeSetOf(undefined, settings('reduced'))).toBe('reduced');
    expect(routeSetOf('full', settings('reduced'))).toBe('reduced');
    expect(routeSetOf('full', settings('full'))).toBe('full');
  });
});
