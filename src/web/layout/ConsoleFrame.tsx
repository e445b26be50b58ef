// The slim frame of the stand-alone console pages (/mainboard, /riscvhouse, /workbench,
// /cloudsetting): one top bar with the console's sections, the palette, language, theme and the
// user; the page gets all the remaining height (the workbench needs every pixel).
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { routeSet } from '#web/auth/flow.ts';
import { LanguageMenu, Logo, ThemeToggle } from '#web/components/controls.tsx';
import { Icon, type IconName } from '#web/components/icons.tsx';
import { DropMenu, DropMenuButton, DropMenuItem, DropMenuItems } from '#web/components/Menu.tsx';
import { cx } from '#web/components/ui.tsx';
import { useNarrow } from '#web/components/useMedia.ts';
import { routeAllowed } from '#web/router/access.ts';
import { Link, NavLink, Outlet } from '#web/router/router.tsx';
import { routeTable } from '#web/router/table.ts';
import { inSet, joinPath } from '#web/router/types.ts';
import { licenceState, licenceValid } from '#web/state/licence.ts';
import { session } from '#web/state/session.ts';
import { PaletteButton, UserControls } from './controls.tsx';
import { LicenceBanner } from './LicenceBanner.tsx';
import { DocsLink } from './Navbar.tsx';

interface Section {
  path: string;
  titleKey: string;
  icon?: IconName;
}

/** The console's sections: the framed pages and the first page of each layout group. */
export function consoleSections(perms: readonly string[], licenceOk: boolean): Section[] {
  const set = routeSet();
  const out: Section[] = [];
  for (const node of routeTable) {
    if (!inSet(node, set) || node.meta.hidden || node.meta.external) continue;
    if (!routeAllowed(node.meta, { perms, licenceValid: licenceOk })) continue;
    if (node.frame === 'console')
      out.push({ path: node.path, titleKey: node.meta.titleKey, icon: node.meta.icon });
    // The first layout group (the dashboard) and the administration area, each by its first permitted page.
    if (
      node.frame === 'layout' &&
      (node.path === '/admin' || out.every((s) => !s.path.startsWith('/dashboard')))
    ) {
      const child = node.children?.find(
        (c) => !c.meta.hidden && inSet(c, set) && routeAllowed(c.meta, { perms, licenceValid: licenceOk }),
      );
      if (child)
        out.push({
          path: joinPath(node.path, child.path),
          titleKey: node.meta.titleKey,
          icon: node.meta.icon,
        });
    }
  }
  // Settings sits last, like in every console.
  return out.sort((a, b) => Number(a.path === '/cloudsetting') - Number(b.path === '/cloudsetting'));
}

export function ConsoleFrame() {
  const { t } = useTranslation('layout');
  const { perms } = useSnapshot(session);
  const { detail } = useSnapshot(licenceState);
  const sections = consoleSections(perms, licenceValid(detail, Date.now()));
  // A phone keeps the mark and drops the wordmark, so the palette, language, theme and user all fit.
  const narrow = useNarrow();
  return (
    <div className="flex h-dvh flex-col">
      <header className="z-20 flex h-12 shrink-0 items-center gap-1 border-b border-zinc-200 bg-white/85 px-3 backdrop-blur sm:px-4 dark:border-zinc-800 dark:bg-zinc-950/85">
        <Link
          to="/mainboard"
          className="inline-flex h-11 min-w-11 shrink-0 items-center justify-center rounded focus-ring sm:mr-2"
          aria-label="Bianbu Cloud"
        >
          <Logo compact={narrow} />
        </Link>
        <nav aria-label={t('navbar.sections')} className="ml-3 hidden items-center gap-0.5 xl:flex">
          {sections.map((s) => (
            <NavLink
              key={s.path}
              to={s.path}
              className={({ isActive }) =>
                cx(
                  'inline-flex h-8 items-center rounded-md px-2.5 text-[13px] font-medium whitespace-nowrap transition-colors focus-ring',
                  isActive
                    ? 'bg-zinc-900/[0.06] text-zinc-900 dark:bg-white/[0.08] dark:text-white'
                    : 'text-zinc-500 hover:text-zinc-900 dark:text-zinc-400 dark:hover:text-zinc-100',
                )
              }
            >
              {t(s.titleKey)}
            </NavLink>
          ))}
        </nav>
        <DropMenu className="xl:hidden">
          <DropMenuButton
            aria-label={t('navbar.sections')}
            className="inline-flex h-11 w-11 items-center justify-center rounded-md text-[13px] font-medium text-zinc-600 hover:bg-zinc-100 focus-ring sm:h-8 sm:w-auto sm:px-2 dark:text-zinc-300 dark:hover:bg-zinc-800"
          >
            <Icon name="menu" size={15} />
          </DropMenuButton>
          <DropMenuItems className="z-50 mt-1 w-48 rounded-lg border border-zinc-200 bg-white p-1 shadow-lg focus:outline-none dark:border-zinc-800 dark:bg-zinc-900">
            {sections.map((s) => (
              <DropMenuItem key={s.path}>
                <Link
                  to={s.path}
                  className="flex items-center gap-2 rounded-md px-2 py-1.5 text-[13px] text-zinc-700 data-[focus]:bg-zinc-100 dark:text-zinc-300 dark:data-[focus]:bg-zinc-800"
                >
                  <Icon name={s.icon ?? 'arrowRight'} size={15} className="text-zinc-400" />
                  {t(s.titleKey)}
                </Link>
              </DropMenuItem>
            ))}
          </DropMenuItems>
        </DropMenu>
        <div className="ml-auto flex shrink-0 items-center gap-1">
          <PaletteButton className="mr-1" />
          <DocsLink className="hidden sm:inline-flex" />
          <LanguageMenu />
          <ThemeToggle />
          <div className="mx-1 hidden h-4 w-px bg-zinc-200 sm:block dark:bg-zinc-800" />
          <UserControls />
        </div>
      </header>
      <LicenceBanner />
      <main className="flex min-h-0 flex-1 flex-col overflow-auto">
        <Outlet />
      </main>
    </div>
  );
}
