// The layout of /dashboard/dashboard, /clouddevice/public and /private-clouddevice/private:
// sidebar, navbar, licence banner, page header with tabs; the page gets the active tab through
// the outlet context.
import { PageHeader, usePageTabs } from '#web/pages/PageHeader.tsx';
import { useRouteMeta } from '#web/router/handle.ts';
import { Outlet } from '#web/router/router.tsx';
import { LicenceBanner } from './LicenceBanner.tsx';
import { Navbar } from './Navbar.tsx';
import { Sidebar } from './Sidebar.tsx';

export interface LayoutOutletContext {
  activeTab: string | undefined;
}

export function Layout() {
  const handle = useRouteMeta();
  const tabs = usePageTabs(handle?.meta);
  return (
    <div className="flex min-h-dvh">
      <Sidebar />
      <div className="flex min-w-0 flex-1 flex-col">
        <Navbar />
        <LicenceBanner />
        <main className="flex-1 px-4 py-4 sm:px-6">
          <div className="mx-auto max-w-6xl space-y-4">
            <PageHeader meta={handle?.meta} tabs={tabs} />
            <Outlet context={{ activeTab: tabs.active } satisfies LayoutOutletContext} />
          </div>
        </main>
      </div>
    </div>
  );
}
