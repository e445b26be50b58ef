// /cloudsetting: language and theme, terminal theme, the workbench's keys, the API key for scripts,
// and the profile.
import { useState } from 'react';
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { LANGUAGES } from '#shared/constants.ts';
import type { ApiKeyAnswer } from '#shared/user.ts';
import { ApiError, call } from '#web/api/http.ts';
import { userCall } from '#web/auth/flow.ts';
import { openProfile } from '#web/auth/profile-state.ts';
import { CopyButton } from '#web/components/CopyButton.tsx';
import { Icon, type IconName } from '#web/components/icons.tsx';
import { Modal } from '#web/components/Modal.tsx';
import { Alert, Avatar, Button, cx } from '#web/components/ui.tsx';
import { LANGUAGE_LABELS, setLanguage } from '#web/i18n/i18n.ts';
import { PageHeader, usePageTabs } from '#web/pages/PageHeader.tsx';
import { useRouteMeta } from '#web/router/handle.ts';
import { appState, setDarkTermTheme, setTheme } from '#web/state/app.ts';
import { session } from '#web/state/session.ts';
import { KeymapTab } from './KeymapTab.tsx';
import { Section } from './Section.tsx';

function Choice({
  selected,
  onClick,
  icon,
  label,
  testId,
  children,
}: {
  selected: boolean;
  onClick: () => void;
  icon?: IconName;
  label: string;
  testId?: string;
  children?: React.ReactNode;
}) {
  return (
    <button
      type="button"
      aria-pressed={selected}
      onClick={onClick}
      data-testid={testId}
      className={cx(
        'flex min-w-32 flex-col gap-2 rounded-lg border p-3 text-left text-[13px] transition-colors focus-ring',
        selected
          ? 'border-zinc-900 ring-1 ring-zinc-900 dark:border-zinc-100 dark:ring-zinc-100'
          : 'border-zinc-200 hover:border-zinc-300 dark:border-zinc-800 dark:hover:border-zinc-700',
      )}
    >
      {children}
      <span className="flex items-center gap-2 font-medium text-zinc-800 dark:text-zinc-200">
        {icon ? <Icon name={icon} size={14} /> : null}
        {label}
      </span>
    </button>
  );
}

function GeneralTab() {
  const { t, i18n } = useTranslation('settings');
  const { theme } = useSnapshot(appState);
  return (
    <div className="space-y-4">
      <Section title={t('language.title')} description={t('language.description')}>
        <fieldset aria-label={t('language.title')} className="flex flex-wrap gap-2 border-0 p-0">
          {LANGUAGES.map((l) => (
            <Choice
              key={l}
              selected={i18n.language === l}
              onClick={() => void setLanguage(l)}
              label={LANGUAGE_LABELS[l]}
              icon="globe"
              testId={`set-lang-${l}`}
            />
          ))}
        </fieldset>
      </Section>
      <Section title={t('theme.title')} description={t('theme.description')}>
        <fieldset aria-label={t('theme.title')} className="flex flex-wrap gap-2 border-0 p-0">
          {(['light', 'dark'] as const).map((th) => (
            <Choice
              key={th}
              selected={theme === th}
              onClick={() => setTheme(th)}
              label={t(`theme.${th}`)}
              icon={th === 'dark' ? 'moon' : 'sun'}
              testId={`set-theme-${th}`}
            >
              <span
                aria-hidden="true"
                className={cx(
                  'block h-14 w-full rounded-md border p-2',
                  th === 'dark' ? 'border-zinc-700 bg-zinc-950' : 'border-zinc-200 bg-white',
                )}
              >
                <span
                  className={cx('block h-1.5 w-10 rounded', th === 'dark' ? 'bg-zinc-700' : 'bg-zinc-200')}
                />
                <span
                  className={cx(
                    'mt-1.5 block h-1.5 w-16 rounded',
                    th === 'dark' ? 'bg-zinc-800' : 'bg-zinc-100',
                  )}
                />
                <span className="mt-1.5 block h-1.5 w-6 rounded bg-violet-500" />
              </span>
            </Choice>
          ))}
        </fieldset>
      </Section>
    </div>
  );
}

function TerminalTab() {
  const { t } = useTranslation('settings');
  const { darkTermTheme } = useSnapshot(appState);
  return (
    <Section title={t('terminal.title')} description={t('terminal.description')}>
      <fieldset aria-label={t('terminal.title')} className="flex flex-wrap gap-2 border-0 p-0">
        {([true, false] as const).map((dark) => (
          <Choice
            key={String(dark)}
            selected={darkTermTheme === dark}
            onClick={() => setDarkTermTheme(dark)}
            label={dark ? t('terminal.dark') : t('terminal.light')}
          >
            <span
              aria-hidden="true"
              className={cx(
                'flex h-14 w-36 gap-1 rounded-md border p-2',
                dark ? 'border-zinc-700 bg-[#0b0b0f]' : 'border-zinc-200 bg-[#fafafa]',
              )}
            >
              {['#22c55e', '#3b82f6', '#eab308', '#ef4444', dark ? '#e4e4e7' : '#27272a'].map((c) => (
                <span key={c} className="h-3 w-3 rounded-sm" style={{ background: c }} />
              ))}
            </span>
          </Choice>
        ))}
      </fieldset>
    </Section>
  );
}

type KeyState =
  | { kind: 'idle' }
  | { kind: 'loading' }
  | { kind: 'ok'; key: ApiKeyAnswer }
  | { kind: 'failed'; message: string };

function ApiKeyTab() {
  const { t, i18n } = useTranslation('settings');
  const [state, setState] = useState<KeyState>({ kind: 'idle' });
  const [confirm, setConfirm] = useState(false);
  const run = async (which: 'apikeyGet' | 'apikeyRefresh') => {
    setConfirm(false);
    setState({ kind: 'loading' });
    try {
      const key = await call(userCall(which), {}, { silent: true });
      setState({ kind: 'ok', key });
    } catch (err) {
      setState({ kind: 'failed', message: err instanceof ApiError ? err.message : t('apikey.failed') });
    }
  };
  const key = state.kind === 'ok' ? state.key : null;
  return (
    <Section title={t('apikey.title')} description={t('apikey.description')}>
      <div className="space-y-3" data-testid="apikey">
        {key?.apiKey ? (
          <>
            <Alert tone="warning">{t('apikey.showOnce')}</Alert>
            <div className="flex items-center gap-2 rounded-md border border-zinc-200 bg-zinc-50 p-2 dark:border-zinc-800 dark:bg-zinc-950">
              <code
                className="min-w-0 flex-1 truncate font-mono text-xs text-zinc-900 select-all dark:text-zinc-100"
                data-testid="apikey-value"
              >
                {key.apiKey}
              </code>
              <CopyButton text={key.apiKey} />
            </div>
          </>
        ) : key ? (
          <div className="flex items-center gap-3 rounded-md border border-zinc-200 p-3 text-[13px] dark:border-zinc-800">
            <Icon name="key" size={16} className="text-zinc-400" />
            <code className="font-mono text-xs text-zinc-800 dark:text-zinc-200" data-testid="apikey-hint">
              {key.hint}
            </code>
            <span className="ml-auto text-xs text-zinc-500">
              {t('apikey.created', {
                date: new Intl.DateTimeFormat(i18n.language, {
                  dateStyle: 'medium',
                  timeStyle: 'short',
                }).format(new Date(key.createdAt)),
              })}
            </span>
          </div>
        ) : (
          <p className="text-[13px] text-zinc-500 dark:text-zinc-400">{t('apikey.empty')}</p>
        )}
        {state.kind === 'failed' ? <Alert tone="danger">{state.message}</Alert> : null}
        <div className="flex gap-2">
          <Button
            icon="key"
            onClick={() => void run('apikeyGet')}
            loading={state.kind === 'loading'}
            data-testid="apikey-get"
          >
            {t('apikey.get')}
          </Button>
          <Button
            icon="refresh"
            variant="ghost"
            onClick={() => setConfirm(true)}
            disabled={state.kind === 'loading'}
            data-testid="apikey-refresh"
          >
            {t('apikey.refresh')}
          </Button>
        </div>
        <p className="text-xs text-zinc-500 dark:text-zinc-400">
          {t('apikey.usage')}{' '}
          <code className="rounded bg-zinc-100 px-1 py-0.5 font-mono text-[11px] dark:bg-zinc-800">
            Authorization: &lt;key&gt;
          </code>
        </p>
      </div>
      <Modal
        open={confirm}
        onClose={() => setConfirm(false)}
        title={t('apikey.refreshTitle')}
        footer={
          <>
            <Button onClick={() => setConfirm(false)}>{t('common:actions.cancel')}</Button>
            <Button variant="danger" onClick={() => void run('apikeyRefresh')}>
              {t('apikey.refresh')}
            </Button>
          </>
        }
      >
        {t('apikey.refreshText')}
      </Modal>
    </Section>
  );
}

function ProfileTab() {
  const { t } = useTranslation('settings');
  const snap = useSnapshot(session);
  return (
    <Section title={t('profile.title')} description={t('profile.description')}>
      <div className="flex items-center gap-4">
        <Avatar src={snap.avatar} name={snap.name} size={56} />
        <div className="min-w-0 flex-1">
          <div className="truncate text-sm font-semibold text-zinc-900 dark:text-zinc-100">{snap.name}</div>
          <div className="truncate text-xs text-zinc-500">{snap.userData?.username}</div>
        </div>
        <Button icon="image" onClick={() => openProfile(true)}>
          {t('profile.changeAvatar')}
        </Button>
        <Button variant="ghost" onClick={() => openProfile(false)}>
          {t('profile.details')}
        </Button>
      </div>
    </Section>
  );
}

export default function SettingsPage() {
  const handle = useRouteMeta();
  const tabs = usePageTabs(handle?.meta);
  return (
    <div className="mx-auto w-full max-w-4xl space-y-5 px-4 py-6 sm:px-6">
      <PageHeader meta={handle?.meta} tabs={tabs} />
      <div role="tabpanel">
        {tabs.active === 'terminal' ? (
          <TerminalTab />
        ) : tabs.active === 'keys' ? (
          <KeymapTab />
        ) : tabs.active === 'apikey' ? (
          <ApiKeyTab />
        ) : tabs.active === 'profile' ? (
          <ProfileTab />
        ) : (
          <GeneralTab />
        )}
      </div>
    </div>
  );
}
