// The top bar of the layout (spec section 2): sidebar toggle, breadcrumb, home and documentation
// links, the avatar (change avatar) and logout.
import { Fragment } from 'react';
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { LanguageMenu, ThemeToggle } from '#web/components/controls.tsx';
import { Icon } from '#web/components/icons.tsx';
import { cx, IconButton } from '#web/components/ui.tsx';
import { useRouteHandles } from '#web/router/handle.ts';
import { Link } from '#web/router/router.tsx';
import { appState, toggleSidebar } from '#web/state/app.ts';
import { publicSettingsState } from '#web/state/settings.ts';
import { PaletteButton, UserControls } from './controls.tsx';

export function Breadcrumb() {
  const { t } = useTranslation('layout');
  const handles = useRouteHandles();
  // A collapsed single child repeats its parent's title: show it once.
  const crumbs = handles.filter((h, i) => i === 0 || t(h.meta.titleKey) !== t(handles[i - 1].meta.titleKey));
  return (
    <nav aria-label={t('navbar.breadcrumb')} className="flex min-w-0 items-center gap-1.5 text-[13px]">
      <Link
        to="/mainboard"
        className="hidden shrink-0 text-zinc-500 hover:text-zinc-900 sm:inline dark:text-zinc-400 dark:hover:text-zinc-100"
      >
        {t('navbar.console')}
      </Link>
      {crumbs.map((h, i) => (
        <Fragment key={h.path}>
          <Icon
            name="chevronRight"
            size={13}
            className="hidden shrink-0 text-zinc-300 sm:block dark:text-zinc-600"
          />
          {i === crumbs.length - 1 ? (
            <span aria-current="page" className="truncate font-medium text-zinc-900 dark:text-zinc-100">
              {t(h.meta.titleKey)}
            </span>
          ) : (
            <span className="hidden truncate text-zinc-500 sm:inline dark:text-zinc-400">
              {t(h.meta.titleKey)}
            </span>
          )}
        </Fragment>
      ))}
    </nav>
  );
}

export function DocsLink({ className = 'inline-flex' }: { className?: string }) {
  const { t } = useTranslation('layout');
  const { value } = useSnapshot(publicSettingsState);
  if (!value?.docsUrl) return null;
  return (
    <a
      href={value.docsUrl}
      target="_blank"
      rel="noopener noreferrer"
      title={t('navbar.docs')}
      aria-label={t('navbar.docs')}
      className={cx(
        'h-8 w-8 items-center justify-center rounded-md text-zinc-500 transition-colors hover:bg-zinc-100 hover:text-zinc-900 focus-ring dark:text-zinc-400 dark:hover:bg-zinc-800 dark:hover:text-zinc-100',
        className,
      )}
    >
      <Icon name="book" size={16} />
    </a>
  );
}

export function HomeLink({ className = 'inline-flex' }: { className?: string }) {
  const { t } = useTranslation('layout');
  return (
    <Link
      to="/"
      title={t('navbar.home')}
      aria-label={t('navbar.home')}
      className={cx(
        'h-8 w-8 items-center justify-center rounded-md text-zinc-500 transition-colors hover:bg-zinc-100 hover:text-zinc-900 focus-ring dark:text-zinc-400 dark:hover:bg-zinc-800 dark:hover:text-zinc-100',
        className,
      )}
    >
      <Icon name="home" size={16} />
    </Link>
  );
}

export function Navbar() {
  const { t } = useTranslation('layout');
  const { sidebar } = useSnapshot(appState);
  return (
    <header className="sticky top-0 z-20 flex h-12 shrink-0 items-center gap-2 border-b border-zinc-200 bg-white/85 px-3 backdrop-blur dark:border-zinc-800 dark:bg-zinc-950/85">
      <IconButton
        icon="panelLeft"
        label={sidebar.opened ? t('sidebar.collapse') : t('sidebar.expand')}
        onClick={toggleSidebar}
        data-testid="sidebar-toggle"
        aria-expanded={sidebar.opened}
      />
      <div className="mx-1 h-4 w-px bg-zinc-200 dark:bg-zinc-800" />
      <Breadcrumb />
      <div className="ml-auto flex shrink-0 items-center gap-1">
        <PaletteButton className="mr-1" />
        <HomeLink className="hidden sm:inline-flex" />
        <DocsLink className="hidden sm:inline-flex" />
        <LanguageMenu />
        <ThemeToggle />
        <div className="mx-1 h-4 w-px bg-zinc-200 dark:bg-zinc-800" />
        <UserControls />
      </div>
    </header>
  );
}
