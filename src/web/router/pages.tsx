// Page keys of the route table bound to lazily loaded components: each page is its own chunk.
// The pages a visit can start on (landing, sign-in, the board list) come without zod and load it
// themselves where they validate; every other page waits for it (src/web/lazy-zod.ts), so it can
// parse with the shared schemas from its first render on.
import { type ComponentType, type LazyExoticComponent, lazy } from 'react';
import { type LazyNamespace, loadNamespace } from '#web/i18n/i18n.ts';
import { withZod } from '#web/lazy-zod.ts';
import type { PageKey } from './table.ts';

// biome-ignore lint/suspicious/noExplicitAny: pages take different props (the device list's scope).
type Page = LazyExoticComponent<ComponentType<any>>;

/** A page whose words are in namespaces left out of the first load: both load together. */
const withWords =
  <T,>(load: () => Promise<T>, ...names: LazyNamespace[]): (() => Promise<T>) =>
  () =>
    Promise.all([load(), loadNamespace(...names)]).then(([m]) => m);

export const pages: Record<PageKey, Page> = {
  landing: lazy(() => import('#web/landing/LandingPage.tsx')),
  login: lazy(() => import('#web/auth/LoginPage.tsx')),
  loginEn: lazy(withZod(() => import('#web/auth/LoginEnPage.tsx'))),
  register: lazy(withZod(() => import('#web/auth/RegisterPage.tsx'))),
  thirdParty: lazy(withZod(() => import('#web/auth/ThirdPartyPage.tsx'))),
  mainboard: lazy(() => import('#web/devices/MainboardPage.tsx')),
  apply: lazy(withZod(() => import('#web/devices/ApplyPage.tsx'))),
  // The words of the workbench's panes come with it (namespaces left out of the first load).
  workbench: lazy(
    withZod(withWords(() => import('#web/workbench/WorkbenchPage.tsx'), 'desktop', 'files', 'terminal', 'snapshots', 'workbench')),
  ),
  images: lazy(withZod(() => import('#web/flash/ImageCataloguePage.tsx'))),
  // A joined shell is a terminal pane.
  share: lazy(withZod(withWords(() => import('#web/share/SharePage.tsx'), 'terminal'))),
  settings: lazy(withZod(withWords(() => import('#web/settings/SettingsPage.tsx'), 'settings', 'workbench'))),
  dashboard: lazy(withZod(() => import('#web/devices/DashboardPage.tsx'))),
  deviceList: lazy(withZod(() => import('#web/devices/DeviceListPage.tsx'))),
  // Every section of the administration area in one chunk, which brings its words.
  admin: lazy(withZod(() => import('#web/admin/AdminPage.tsx').then((m) => m.page))),
  notFound: lazy(() => import('#web/pages/NotFoundPage.tsx')),
  forbidden: lazy(() => import('#web/pages/ForbiddenPage.tsx')),
};
