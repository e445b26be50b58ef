// The one route table of the console (spec section 2). Pages are named by key here and bound to
// lazily loaded components in pages.tsx, so the guard, the menu and the palette can read the table
// without pulling any page code into their bundle.
import type { RouteNode } from './types.ts';

export type PageKey =
  | 'landing'
  | 'login'
  | 'loginEn'
  | 'register'
  | 'thirdParty'
  | 'mainboard'
  | 'apply'
  | 'workbench'
  | 'images'
  | 'share'
  | 'settings'
  | 'dashboard'
  | 'deviceList'
  | 'admin'
  | 'notFound'
  | 'forbidden';

export const routeTable: readonly RouteNode<PageKey>[] = [
  {
    path: '/',
    page: 'landing',
    frame: 'bare',
    meta: { titleKey: 'routes.home', icon: 'home', public: true },
  },
  {
    path: '/login',
    page: 'login',
    frame: 'bare',
    redirect: { reduced: '/thridparty' },
    meta: { titleKey: 'routes.login', public: true, hidden: true },
  },
  {
    path: '/login-en',
    page: 'loginEn',
    frame: 'bare',
    redirect: { reduced: '/thridparty' },
    meta: { titleKey: 'routes.login', public: true, hidden: true },
  },
  {
    path: '/register',
    page: 'register',
    frame: 'bare',
    meta: { titleKey: 'routes.register', public: true, hidden: true },
  },
  {
    path: '/thridparty',
    page: 'thirdParty',
    frame: 'bare',
    meta: { titleKey: 'routes.thirdParty', public: true, hidden: true },
  },
  {
    path: '/mainboard',
    page: 'mainboard',
    frame: 'console',
    meta: { titleKey: 'routes.mainboard', icon: 'board' },
  },
  { path: '/riscvhouse', page: 'apply', frame: 'console', meta: { titleKey: 'routes.apply', icon: 'cpu' } },
  {
    path: '/workbench',
    page: 'workbench',
    frame: 'console',
    meta: { titleKey: 'routes.workbench', icon: 'workbench' },
  },
  {
    path: '/flash-images',
    page: 'images',
    frame: 'console',
    meta: { titleKey: 'routes.images', icon: 'image', perms: ['device.view_flash'] },
  },
  {
    path: '/share',
    page: 'share',
    frame: 'console',
    meta: { titleKey: 'routes.share', icon: 'user', perms: ['device.view_share'] },
  },
  {
    path: '/cloudsetting',
    page: 'settings',
    frame: 'console',
    meta: {
      titleKey: 'routes.settings',
      icon: 'settings',
      helpKey: 'help.settings',
      defaultTab: 'general',
      tabs: [
        { name: 'general', titleKey: 'tabs.general' },
        { name: 'terminal', titleKey: 'tabs.terminal' },
        { name: 'keys', titleKey: 'tabs.keys' },
        { name: 'apikey', titleKey: 'tabs.apikey' },
        { name: 'profile', titleKey: 'tabs.profile' },
      ],
    },
  },
  {
    path: '/dashboard',
    frame: 'layout',
    meta: { titleKey: 'routes.dashboard', icon: 'dashboard', sets: ['full'] },
    children: [
      { path: 'dashboard', page: 'dashboard', meta: { titleKey: 'routes.dashboard', icon: 'dashboard' } },
    ],
  },
  {
    path: '/clouddevice',
    frame: 'layout',
    meta: { titleKey: 'routes.cloudDevices', icon: 'cloud', sets: ['full'] },
    children: [
      {
        path: 'public',
        page: 'deviceList',
        props: { scope: 'public' },
        meta: { titleKey: 'routes.publicDevices', icon: 'cloud' },
      },
    ],
  },
  {
    path: '/private-clouddevice',
    frame: 'layout',
    meta: { titleKey: 'routes.privateDevices', icon: 'lock', sets: ['full'] },
    children: [
      {
        path: 'private',
        page: 'deviceList',
        props: { scope: 'private' },
        meta: { titleKey: 'routes.privateDevices', icon: 'lock' },
      },
    ],
  },
  // The administration area (issue 38): one lazily loaded chunk (src/web/admin) whose page draws the
  // section its path names; each section is shown to whom the service allows its list call (the group
  // shows when one of them is), and the service stays the judge of every action. Board hosts
  // (issue 37) are listed by whoever may change boards, as the service's adminHostsList.
  {
    path: '/admin',
    frame: 'layout',
    meta: { titleKey: 'routes.admin', icon: 'shield', sets: ['full'] },
    // [path, icon, the entry of the section's list call]; images are the catalogue page, which publishes.
    children: (
      [
        ['users', 'user', 'rbac.view_user'],
        ['orgs', 'layers', 'rbac.view_organization'],
        ['roles', 'key', 'rbac.view_role'],
        ['boards', 'board', 'device.change_device'],
        ['hosts', 'server', 'device.change_device'],
        ['images', 'image', 'device.add_image'],
        ['audit', 'book', 'audit.view_log'],
      ] as const
    ).map(([path, icon, perm]) => ({
      path,
      page: path === 'images' ? 'images' : 'admin',
      meta: { titleKey: `admin.${path}`, icon, perms: [perm] },
    })),
  },
  {
    path: 'docs',
    meta: { titleKey: 'routes.docs', icon: 'book', external: (s) => s?.docsUrl || undefined },
  },
  {
    path: '/404',
    page: 'notFound',
    frame: 'bare',
    meta: { titleKey: 'routes.notFound', public: true, hidden: true },
  },
  {
    path: '/403',
    page: 'forbidden',
    frame: 'bare',
    meta: { titleKey: 'routes.forbidden', public: true, hidden: true },
  },
];
