// Controls the console frame and the sign-in pages share: the logo, the language menu, the theme toggle.
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { LANGUAGES } from '#shared/constants.ts';
import { Icon } from '#web/components/icons.tsx';
import { DropMenu, DropMenuButton, DropMenuItem, DropMenuItems } from '#web/components/Menu.tsx';
import { cx, IconButton } from '#web/components/ui.tsx';
import { currentLanguage, LANGUAGE_LABELS, setLanguage } from '#web/i18n/i18n.ts';
import { appState, toggleTheme } from '#web/state/app.ts';

export function Logo({ compact = false, className }: { compact?: boolean; className?: string }) {
  return (
    <span className={cx('inline-flex items-center gap-2', className)}>
      <svg width="22" height="22" viewBox="0 0 24 24" aria-hidden="true" className="shrink-0">
        <defs>
          <linearGradient id="bb-logo" x1="0" y1="0" x2="1" y2="1">
            <stop offset="0" stopColor="#8b5cf6" />
            <stop offset="1" stopColor="#0ea5e9" />
          </linearGradient>
        </defs>
        <rect x="1" y="1" width="22" height="22" rx="6" fill="url(#bb-logo)" />
        <path
          d="M7 7h5.5a2.5 2.5 0 0 1 0 5H7zM7 12h6.5a2.5 2.5 0 0 1 0 5H7z"
          fill="none"
          stroke="white"
          strokeWidth="1.9"
          strokeLinejoin="round"
        />
      </svg>
      {compact ? null : (
        <span className="text-[13px] font-semibold tracking-tight whitespace-nowrap text-zinc-900 dark:text-zinc-50">
          Bianbu Cloud
        </span>
      )}
    </span>
  );
}

export function LanguageMenu({ className }: { className?: string }) {
  const { t, i18n } = useTranslation('common');
  const lng = i18n.language;
  return (
    <DropMenu className={className}>
      <DropMenuButton
        aria-label={t('language.label')}
        title={t('language.label')}
        data-testid="language-menu"
        className="inline-flex h-8 items-center gap-1.5 rounded-md px-2 text-xs font-medium text-zinc-500 transition-colors hover:bg-zinc-100 hover:text-zinc-900 focus-ring dark:text-zinc-400 dark:hover:bg-zinc-800 dark:hover:text-zinc-100"
      >
        <Icon name="globe" size={15} />
        <span className="uppercase">{lng}</span>
      </DropMenuButton>
      <DropMenuItems
        align="end"
        className="z-50 mt-1 w-36 rounded-lg border border-zinc-200 bg-white p-1 shadow-lg focus:outline-none dark:border-zinc-800 dark:bg-zinc-900"
      >
        {LANGUAGES.map((l) => (
          <DropMenuItem key={l}>
            <button
              type="button"
              lang={l}
              data-lang={l}
              onClick={() => void setLanguage(l)}
              className="flex w-full items-center justify-between rounded-md px-2 py-1.5 text-left text-[13px] text-zinc-700 data-[focus]:bg-zinc-100 dark:text-zinc-300 dark:data-[focus]:bg-zinc-800"
            >
              {LANGUAGE_LABELS[l]}
              {currentLanguage() === l ? <Icon name="check" size={14} className="text-zinc-500" /> : null}
            </button>
          </DropMenuItem>
        ))}
      </DropMenuItems>
    </DropMenu>
  );
}

export function ThemeToggle() {
  const { theme } = useSnapshot(appState);
  const { t } = useTranslation('common');
  return (
    <IconButton
      icon={theme === 'dark' ? 'sun' : 'moon'}
      label={theme === 'dark' ? t('theme.toLight') : t('theme.toDark')}
      onClick={toggleTheme}
      data-testid="theme-toggle"
    />
  );
}
