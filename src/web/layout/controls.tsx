// The signed-in frame's own controls: the palette button and the user menu (shared ones: components/controls.tsx).
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { logoutAndLeave } from '#web/auth/flow.ts';
import { openProfile } from '#web/auth/profile-state.ts';
import { isMac } from '#web/commands/keys.ts';
import { openPalette, openPaletteAsking } from '#web/commands/registry.ts';
import { Icon } from '#web/components/icons.tsx';
import { Avatar, cx, IconButton, Kbd } from '#web/components/ui.tsx';
import { session } from '#web/state/session.ts';

export function PaletteButton({ className }: { className?: string }) {
  const { t } = useTranslation('palette');
  return (
    <>
      {/* A phone has no Ctrl+K: the palette (and every action only it offers) is one tap away. */}
      <button
        type="button"
        onClick={openPalette}
        aria-label={t('open')}
        title={t('open')}
        data-testid="palette-button-touch"
        className={cx(
          'inline-flex h-11 w-11 shrink-0 items-center justify-center rounded-md text-zinc-600 transition-colors focus-ring active:bg-zinc-100 sm:hidden dark:text-zinc-300 dark:active:bg-zinc-800',
          className,
        )}
      >
        <Icon name="command" size={18} />
      </button>
      <button
        type="button"
        onClick={openPalette}
        data-testid="palette-button"
        aria-label={t('open')}
        title={t('open')}
        className={cx(
          'hidden h-8 items-center gap-2 rounded-md border border-zinc-200 bg-zinc-50 pr-1.5 pl-2.5 text-xs text-zinc-500 transition-colors hover:border-zinc-300 hover:text-zinc-700 focus-ring sm:inline-flex dark:border-zinc-800 dark:bg-zinc-900 dark:text-zinc-400 dark:hover:border-zinc-700 dark:hover:text-zinc-200',
          className,
        )}
      >
        <Icon name="search" size={13} />
        {/* Below 1440 px the sections need the room: the search icon and the keys say enough. */}
        <span className="mr-6 hidden min-[1440px]:inline">{t('open')}</span>
        <span className="flex gap-0.5 pointer-coarse:hidden!" data-key-hints>
          <Kbd>{isMac() ? '⌘' : 'Ctrl'}</Kbd>
          <Kbd>K</Kbd>
        </span>
      </button>
    </>
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
          <span
            data-testid="user-name"
            className="hidden max-w-32 truncate text-[13px] font-medium text-zinc-700 md:inline dark:text-zinc-200"
          >
            {name}
          </span>
        ) : null}
      </button>
      <IconButton
        icon="logout"
        label={t('navbar.logout')}
        data-testid="logout-button"
        // Signing out ends this tab's shells: the palette asks first ("Stay" chosen, Enter keeps).
        onClick={() => {
          if (!openPaletteAsking('account.logout')) void logoutAndLeave();
        }}
      />
    </div>
  );
}
