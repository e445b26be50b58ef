// Controls shared by the navbar, the console frame and the sign-in pages.
import { Menu, MenuButton, MenuItem, MenuItems } from '@headlessui/react';
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { LANGUAGES } from '#shared/constants.ts';
import { logoutAndLeave } from '#web/auth/flow.ts';
import { openProfile } from '#web/auth/profile-state.ts';
import { Icon } from '#web/components/icons.tsx';
import { Avatar, cx, IconButton, Kbd } from '#web/components/ui.tsx';
import { currentLanguage, LANGUAGE_LABELS, setLanguage } from '#web/i18n/i18n.ts';
import { isMac } from '#web/palette/keys.ts';
import { openPalette } from '#web/palette/registry.ts';
import { appState, toggleTheme } from '#web/state/app.ts';
import { session } from '#web/state/session.ts';

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
        <path d="M7 7h5.5a2.5 2.5 0 0 1 0 5H7zM7 12h6.5a2.5 2.5 0 0 1 0 5H7z" fill="none" stroke="white" strokeWidth="1.9" strokeLinejoin="round" />
      </svg>
      {compact ? null : (
        <span className="text-[13px] font-semibold tracking-tight whitespace-nowrap text-zinc-900 dark:text-zinc-50">Bianbu Cloud</span>
      )}
    </span>
  );
}

export function PaletteButton({ className }: { className?: string }) {
  const { t } = useTranslation('palette');
  return (
    <button
      type="button"
      onClick={openPalette}
      data-testid="palette-button"
      className={cx(
        'hidden h-8 items-center gap-2 rounded-md border border-zinc-200 bg-zinc-50 pr-1.5 pl-2.5 text-xs text-zinc-500 transition-colors hover:border-zinc-300 hover:text-zinc-700 focus-ring sm:inline-flex dark:border-zinc-800 dark:bg-zinc-900 dark:text-zinc-400 dark:hover:border-zinc-700 dark:hover:text-zinc-200',
        className,
      )}
    >
      <Icon name="search" size={13} />
      <span className="mr-6">{t('open')}</span>
      <span className="flex gap-0.5">
        <Kbd>{isMac() ? '⌘' : 'Ctrl'}</Kbd>
        <Kbd>K</Kbd>
      </span>
    </button>
  );
}

export function LanguageMenu({ className }: { className?: string }) {
  const { t, i18n } = useTranslation('common');
  const lng = i18n.language;
  return (
    <Menu as="div" className={cx('relative', className)}>
      <MenuButton
        aria-label={t('language.label')}
        title={t('language.label')}
        data-testid="language-menu"
        className="inline-flex h-8 items-center gap-1.5 rounded-md px-2 text-xs font-medium text-zinc-500 transition-colors hover:bg-zinc-100 hover:text-zinc-900 focus-ring dark:text-zinc-400 dark:hover:bg-zinc-800 dark:hover:text-zinc-100"
      >
        <Icon name="globe" size={15} />
        <span className="uppercase">{lng}</span>
      </MenuButton>
      <MenuItems
        anchor="bottom end"
        className="z-50 mt-1 w-36 rounded-lg border border-zinc-200 bg-white p-1 shadow-lg focus:outline-none dark:border-zinc-800 dark:bg-zinc-900"
      >
        {LANGUAGES.map((l) => (
          <MenuItem key={l}>
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
          </MenuItem>
        ))}
      </MenuItems>
    </Menu>
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

/** Avatar with the "change avatar" label, opening the profile dialog; and logout. */
export function UserControls({ showName = true }: { showName?: boolean }) {
  const { name, avatar, token } = useSnapshot(session);
  const { t } = useTranslation('layout');
  if (!token) return null;
  return (
    <div className="flex items-center gap-1">
      <button
        type="button"
        onClick={() => openProfile(false)}
        title={t('navbar.changeAvatar')}
        aria-label={t('navbar.changeAvatar')}
        data-testid="avatar-button"
        className="group flex h-8 items-center gap-2 rounded-md pr-2 pl-1 transition-colors hover:bg-zinc-100 focus-ring dark:hover:bg-zinc-800"
      >
        <Avatar src={avatar} name={name} size={24} />
        {showName ? (
          <span data-testid="user-name" className="hidden max-w-32 truncate text-[13px] font-medium text-zinc-700 md:inline dark:text-zinc-200">
            {name}
          </span>
        ) : null}
      </button>
      <IconButton
        icon="logout"
        label={t('navbar.logout')}
        data-testid="logout-button"
        onClick={() => void logoutAndLeave()}
      />
    </div>
  );
}
