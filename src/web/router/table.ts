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
