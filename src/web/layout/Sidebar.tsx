// The sidebar of the layout routes, built from the route table (spec section 2): hidden and
// unpermitted entries left out, a single visible child collapsed into one entry, external links in
// a new tab. 180px wide; collapsed to an icon rail on desktop, a drawer on mobile.
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { SIDEBAR_WIDTH_PX } from '#shared/constants.ts';
import { routeSet } from '#web/auth/flow.ts';
import { Logo } from '#web/components/controls.tsx';
import { Icon } from '#web/components/icons.tsx';
import { cx } from '#web/components/ui.tsx';
import { buildMenu, type MenuItem } from '#web/router/access.ts';
import { Link, NavLink } from '#web/router/router.tsx';
import { routeTable } from '#web/router/table.ts';
import { appState, closeSidebar } from '#web/state/app.ts';
import { licenceState, licenceValid } from '#web/state/licence.ts';
import { session } from '#web/state/session.ts';
import { publicSettingsState } from '#web/state/settings.ts';

export const RAIL_WIDTH_PX = 56;

function Entry({
  item,
  collapsed,
  onNavigate,
}: {
  item: MenuItem;
  collapsed: boolean;
  onNavigate: () => void;
}) {
  const { t } = useTranslation('layout');
  const title = t(item.titleKey);
  const base =
    'group flex h-8 items-center gap-2 rounded-md text-[13px] font-medium transition-colors focus-ring';
  const pad = collapsed ? 'justify-center px-0' : 'px-2';
  const content = (
    <>
      <Icon name={item.icon ?? 'arrowRight'} size={16} className="shrink-0" />
      {collapsed ? null : (
        <span className="min-w-0 flex-1 truncate" title={title}>
          {title}
        </span>
      )}
      {!collapsed && item.href ? <Icon name="external" size={12} className="shrink-0 opacity-50" /> : null}
    </>
  );
  if (item.href) {
    return (
      <a
        href={item.href}
        target="_blank"
        rel="noopener noreferrer"
        title={collapsed ? title : undefined}
        aria-label={collapsed ? title : undefined}
        className={cx(
          base,
          pad,
          'text-zinc-600 hover:bg-zinc-100 hover:text-zinc-900 dark:text-zinc-400 dark:hover:bg-zinc-800/70 dark:hover:text-zinc-100',
        )}
      >
        {content}
      </a>
    );
  }
  return (
    <NavLink
      to={item.path ?? '/'}
      onClick={onNavigate}
      title={collapsed ? title : undefined}
      aria-label={collapsed ? title : undefined}
      className={({ isActive }) =>
        cx(
          base,
          pad,
          isActive
            ? 'bg-zinc-900/[0.06] text-zinc-900 dark:bg-white/[0.08] dark:text-white'
            : 'text-zinc-600 hover:bg-zinc-100 hover:text-zinc-900 dark:text-zinc-400 dark:hover:bg-zinc-800/70 dark:hover:text-zinc-100',
        )
      }
    >
      {content}
    </NavLink>
  );
}

export function Sidebar() {
  const { sidebar, device } = useSnapshot(appState);
  const { perms } = useSnapshot(session);
  const { value: settings } = useSnapshot(publicSettingsState);
  const { detail } = useSnapshot(licenceState);
  const { t } = useTranslation('layout');
  const mobile = device === 'mobile';
  const collapsed = !mobile && !sidebar.opened;
  const items = buildMenu(routeTable, {
    perms,
    licenceValid: licenceValid(detail, Date.now()),
    routeSet: routeSet(),
    settings: settings as typeof publicSettingsState.value,
  });
  const onNavigate = () => {
    if (mobile) closeSidebar(false);
  };
  if (mobile && !sidebar.opened) return null;

  const width = collapsed ? RAIL_WIDTH_PX : SIDEBAR_WIDTH_PX;
  return (
    <>
      {mobile ? (
        <button
          type="button"
          aria-label={t('sidebar.close')}
          className="fixed inset-0 z-30 bg-zinc-950/40 backdrop-blur-[1px]"
          onClick={() => closeSidebar(false)}
        />
      ) : null}
      <aside
        data-testid="sidebar"
        data-collapsed={collapsed}
        style={{ width }}
        className={cx(
          'flex shrink-0 flex-col border-r border-zinc-200 bg-zinc-50/80 dark:border-zinc-800 dark:bg-zinc-950',
          mobile ? 'fixed inset-y-0 left-0 z-40 shadow-xl' : 'sticky top-0 h-dvh',
          sidebar.withoutAnimation ? '' : 'transition-[width] duration-200',
        )}
      >
        <div
          className={cx(
            'flex h-12 shrink-0 items-center border-b border-zinc-200 dark:border-zinc-800',
            collapsed ? 'justify-center' : 'px-3.5',
          )}
        >
          <Link to="/mainboard" className="rounded focus-ring" aria-label="Bianbu Cloud">
            <Logo compact={collapsed} />
          </Link>
        </div>
        <nav aria-label={t('sidebar.label')} className="flex-1 space-y-0.5 overflow-y-auto p-2">
          {items.map((item) =>
            item.children ? (
              <div key={item.key} className="pt-3 first:pt-0">
                {collapsed ? (
                  <div className="mx-auto mb-1 h-px w-6 bg-zinc-200 dark:bg-zinc-800" />
                ) : (
                  <div className="px-2 pb-1 text-[11px] font-medium tracking-wide text-zinc-400 uppercase">
                    {t(item.titleKey)}
                  </div>
                )}
                <div className="space-y-0.5">
                  {item.children.map((c) => (
                    <Entry key={c.key} item={c} collapsed={collapsed} onNavigate={onNavigate} />
                  ))}
                </div>
              </div>
            ) : (
              <Entry key={item.key} item={item} collapsed={collapsed} onNavigate={onNavigate} />
            ),
          )}
        </nav>
        <div className="border-t border-zinc-200 p-2 dark:border-zinc-800">
          <Link
            to="/mainboard"
            data-testid="exit-layout"
            title={collapsed ? t('sidebar.exit') : undefined}
            aria-label={collapsed ? t('sidebar.exit') : undefined}
            className={cx(
              'flex h-8 items-center gap-2 rounded-md text-[13px] font-medium text-zinc-600 transition-colors hover:bg-zinc-100 hover:text-zinc-900 focus-ring dark:text-zinc-400 dark:hover:bg-zinc-800/70 dark:hover:text-zinc-100',
              collapsed ? 'justify-center' : 'px-2',
            )}
          >
            <Icon name="arrowLeft" size={16} className="shrink-0" />
            {collapsed ? null : (
              <span className="truncate" title={t('sidebar.exit')}>
                {t('sidebar.exit')}
              </span>
            )}
          </Link>
        </div>
      </aside>
    </>
  );
}
