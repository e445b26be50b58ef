// Page keys of the route table bound to lazily loaded components: each page is its own chunk.
import { type ComponentType, type LazyExoticComponent, lazy } from 'react';
import { loadNamespace } from '#web/i18n/i18n.ts';
import type { PageKey } from './table.ts';

// biome-ignore lint/suspicious/noExplicitAny: pages take different props (the device list's scope).
type Page = LazyExoticComponent<ComponentType<any>>;

export const pages: Record<PageKey, Page> = {
  landing: lazy(() => import('#web/landing/LandingPage.tsx')),
  login: lazy(() => import('#web/auth/LoginPage.tsx')),
  loginEn: lazy(() => import('#web/auth/LoginEnPage.tsx')),
  register: lazy(() => import('#web/auth/RegisterPage.tsx')),
  thirdParty: lazy(() => import('#web/auth/ThirdPartyPage.tsx')),
  mainboard: lazy(() => import('#web/devices/MainboardPage.tsx')),
  apply: lazy(() => import('#web/devices/ApplyPage.tsx')),
  // The desktop panes' words come with the workbench (a namespace left out of the first load).
  workbench: lazy(() => loadNamespace('desktop').then(() => import('#web/workbench/WorkbenchPage.tsx'))),
  images: lazy(() => import('#web/flash/ImageCataloguePage.tsx')),
  share: lazy(() => import('#web/share/SharePage.tsx')),
  settings: lazy(() => import('#web/settings/SettingsPage.tsx')),
  dashboard: lazy(() => import('#web/devices/DashboardPage.tsx')),
  deviceList: lazy(() => import('#web/devices/DeviceListPage.tsx')),
  notFound: lazy(() => import('#web/pages/NotFoundPage.tsx')),
  forbidden: lazy(() => import('#web/pages/ForbiddenPage.tsx')),
};
