// The head of a page (spec section 2): title from the route meta, the go-back button (disabled on
// a dashboard path or without history), an optional green help alert and optional tab sub-menus.
import { useState } from 'react';
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { ACTIVE_TAB_COOKIE_DAYS, STORAGE } from '#shared/constants.ts';
import { Alert, cx, IconButton } from '#web/components/ui.tsx';
import { resolveActiveTab, visibleTabs } from '#web/router/access.ts';
import { useLocation, useNavigate, useSearchParams } from '#web/router/router.tsx';
import type { RouteMeta, TabDef } from '#web/router/types.ts';
import { session } from '#web/state/session.ts';
import { readCookie, writeCookie } from '#web/state/storage.ts';

export function canGoBack(pathname: string, locationKey: string): boolean {
  // The router gives the first entry of a session the key "default": nothing to go back to.
  return !pathname.startsWith('/dashboard') && locationKey !== 'default';
}

export interface PageTabs {
  tabs: TabDef[];
  active: string | undefined;
  select: (name: string) => void;
}

/** Active tab: ?activeTab, then the activeTab cookie, then the default, then the first visible tab. */
export function usePageTabs(meta: RouteMeta | undefined): PageTabs {
  const { perms } = useSnapshot(session);
  const [params, setParams] = useSearchParams();
  const [cookie, setCookie] = useState(() => readCookie(STORAGE.activeTabCookie));
  const tabs = visibleTabs(meta?.tabs, perms);
  const active = resolveActiveTab(tabs, params.get('activeTab'), cookie, meta?.defaultTab);
  const select = (name: string) => {
    writeCookie(STORAGE.activeTabCookie, name, ACTIVE_TAB_COOKIE_DAYS);
    setCookie(name);
    if (params.has('activeTab')) {
      const next = new URLSearchParams(params);
      next.delete('activeTab');
      setParams(next, { replace: true });
    }
  };
  return { tabs, active, select };
}

export function PageHeader({
  meta,
  tabs,
  actions,
  className,
}: {
  meta: RouteMeta | undefined;
  tabs?: PageTabs;
  actions?: React.ReactNode;
  className?: string;
}) {
  const { t } = useTranslation('layout');
  const navigate = useNavigate();
  const location = useLocation();
  const back = canGoBack(location.pathname, location.key);
  return (
    <div className={cx('space-y-3', className)}>
      <div className="flex items-center gap-2">
        <IconButton
          icon="arrowLeft"
          label={t('page.back')}
          disabled={!back}
          onClick={() => navigate(-1)}
          data-testid="go-back"
          className="-ml-1.5"
        />
        <h1 className="min-w-0 flex-1 truncate text-lg font-semibold tracking-tight text-zinc-900 dark:text-zinc-50">
          {meta ? t(meta.titleKey) : ''}
        </h1>
        {actions}
      </div>
      {meta?.helpKey ? <Alert tone="success">{t(meta.helpKey)}</Alert> : null}
      {tabs && tabs.tabs.length > 0 ? (
        <div
          role="tablist"
          aria-label={meta ? t(meta.titleKey) : undefined}
          className="flex gap-1 overflow-x-auto border-b border-zinc-200 dark:border-zinc-800"
        >
          {tabs.tabs.map((tab) => {
            const selected = tab.name === tabs.active;
            return (
              <button
                key={tab.name}
                type="button"
                role="tab"
                aria-selected={selected}
                data-tab={tab.name}
                onClick={() => tabs.select(tab.name)}
                className={cx(
                  '-mb-px h-9 shrink-0 border-b-2 px-3 text-[13px] font-medium transition-colors focus-ring',
                  selected
                    ? 'border-zinc-900 text-zinc-900 dark:border-zinc-100 dark:text-zinc-50'
                    : 'border-transparent text-zinc-500 hover:text-zinc-800 dark:text-zinc-400 dark:hover:text-zinc-200',
                )}
              >
                {t(tab.titleKey)}
              </button>
            );
          })}
        </div>
      ) : null}
    </div>
  );
}
