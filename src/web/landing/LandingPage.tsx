// The public landing page (/): what the service is, and the ways in.
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { LEASE_DURATIONS } from '#shared/constants.ts';
import { isMac } from '#web/commands/keys.ts';
import { LanguageMenu, Logo, ThemeToggle } from '#web/components/controls.tsx';
import { Icon, type IconName } from '#web/components/icons.tsx';
import { Kbd } from '#web/components/ui.tsx';
import { Link } from '#web/router/router.tsx';
import { session } from '#web/state/session.ts';
import { publicSettingsState } from '#web/state/settings.ts';

const FEATURES: { key: string; icon: IconName }[] = [
  { key: 'apply', icon: 'board' },
  { key: 'shell', icon: 'terminal' },
  { key: 'files', icon: 'layers' },
  { key: 'flash', icon: 'cpu' },
  { key: 'share', icon: 'user' },
  { key: 'keyboard', icon: 'keyboard' },
];

const primaryLink =
  'inline-flex h-9 items-center gap-2 rounded-md bg-zinc-900 px-4 text-[13px] font-medium text-white shadow-sm transition-colors hover:bg-zinc-700 focus-ring dark:bg-zinc-50 dark:text-zinc-900 dark:hover:bg-white';
const secondaryLink =
  'inline-flex h-9 items-center gap-2 rounded-md border border-zinc-200 bg-white px-4 text-[13px] font-medium text-zinc-800 shadow-sm transition-colors hover:bg-zinc-50 focus-ring dark:border-zinc-800 dark:bg-zinc-900 dark:text-zinc-100 dark:hover:bg-zinc-800';

export default function LandingPage() {
  const { t } = useTranslation('landing');
  const { token, name } = useSnapshot(session);
  const { value: settings } = useSnapshot(publicSettingsState);
  const signedIn = !!token;
  return (
    <div className="relative min-h-dvh overflow-hidden">
      <div
        aria-hidden="true"
        className="pointer-events-none absolute inset-x-0 top-0 h-[520px] bg-[radial-gradient(ellipse_60%_50%_at_50%_0%,rgba(139,92,246,0.14),transparent)] dark:bg-[radial-gradient(ellipse_60%_50%_at_50%_0%,rgba(139,92,246,0.22),transparent)]"
      />
      <div
        aria-hidden="true"
        className="pointer-events-none absolute inset-0 [background-image:linear-gradient(to_right,rgba(113,113,122,0.08)_1px,transparent_1px),linear-gradient(to_bottom,rgba(113,113,122,0.08)_1px,transparent_1px)] [background-size:48px_48px] [mask-image:radial-gradient(ellipse_70%_45%_at_50%_0%,black,transparent)]"
      />
      <header className="relative mx-auto flex h-14 max-w-6xl items-center gap-3 px-4 sm:px-6">
        <Logo />
        <div className="ml-auto flex items-center gap-1">
          {settings?.docsUrl ? (
            <a
              href={settings.docsUrl}
              target="_blank"
              rel="noopener noreferrer"
              className="hidden h-8 items-center rounded-md px-2.5 text-[13px] font-medium text-zinc-600 hover:text-zinc-900 sm:inline-flex dark:text-zinc-400 dark:hover:text-zinc-100"
            >
              {t('nav.docs')}
            </a>
          ) : null}
          <LanguageMenu />
          <ThemeToggle />
          {signedIn ? (
            <Link to="/mainboard" className={`${primaryLink} ml-2 h-8 px-3`} data-testid="open-console">
              {t('nav.console')}
            </Link>
          ) : (
            <Link to="/mainboard" className={`${primaryLink} ml-2 h-8 px-3`} data-testid="sign-in">
              {t('nav.signIn')}
            </Link>
          )}
        </div>
      </header>

      <main className="relative">
        <section className="mx-auto max-w-4xl px-4 pt-20 pb-16 text-center sm:px-6 sm:pt-28">
          <span className="inline-flex items-center gap-2 rounded-full border border-zinc-200 bg-white/70 px-3 py-1 text-xs font-medium text-zinc-600 backdrop-blur dark:border-zinc-800 dark:bg-zinc-900/70 dark:text-zinc-300">
            <span className="h-1.5 w-1.5 rounded-full bg-emerald-500" />
            {t('hero.badge')}
          </span>
          <h1 className="mt-6 text-4xl font-semibold tracking-tight text-pretty text-zinc-900 sm:text-5xl dark:text-zinc-50">
            {t('hero.title')}
          </h1>
          <p className="mx-auto mt-5 max-w-2xl text-[15px] leading-relaxed text-pretty text-zinc-600 dark:text-zinc-400">
            {t('hero.subtitle')}
          </p>
          <div className="mt-8 flex flex-wrap items-center justify-center gap-3">
            <Link to="/mainboard" className={primaryLink} data-testid="get-started">
              {signedIn ? t('hero.continue', { name }) : t('hero.start')}
              <Icon name="arrowRight" size={15} />
            </Link>
            {signedIn ? null : (
              <Link to="/register" className={secondaryLink}>
                {t('hero.register')}
              </Link>
            )}
          </div>
          <p
            className="mt-6 flex items-center justify-center gap-1.5 text-xs text-zinc-500 pointer-coarse:hidden! dark:text-zinc-500"
            data-key-hints
          >
            {t('hero.paletteHint.before')}
            <Kbd>{isMac() ? '⌘' : 'Ctrl'}</Kbd>
            <Kbd>K</Kbd>
            {t('hero.paletteHint.after')}
          </p>
        </section>

        <section className="mx-auto max-w-6xl px-4 pb-20 sm:px-6" aria-labelledby="features-title">
          <h2 id="features-title" className="sr-only">
            {t('features.title')}
          </h2>
          <div className="grid gap-px overflow-hidden rounded-xl border border-zinc-200 bg-zinc-200 sm:grid-cols-2 lg:grid-cols-3 dark:border-zinc-800 dark:bg-zinc-800">
            {FEATURES.map((f) => (
              <div key={f.key} className="bg-white p-5 dark:bg-zinc-950">
                <div className="flex h-8 w-8 items-center justify-center rounded-md border border-zinc-200 bg-zinc-50 text-zinc-700 dark:border-zinc-800 dark:bg-zinc-900 dark:text-zinc-300">
                  <Icon name={f.icon} size={16} />
                </div>
                <h3 className="mt-3 text-sm font-semibold text-zinc-900 dark:text-zinc-100">
                  {t(`features.${f.key}.title`)}
                </h3>
                <p className="mt-1 text-[13px] leading-relaxed text-zinc-600 dark:text-zinc-400">
                  {t(`features.${f.key}.text`)}
                </p>
              </div>
            ))}
          </div>
        </section>

        <section className="mx-auto max-w-6xl px-4 pb-24 sm:px-6">
          <div className="grid gap-8 md:grid-cols-3">
            {(['signIn', 'apply', 'work'] as const).map((step, i) => (
              <div key={step} className="flex gap-3">
                <span className="flex h-6 w-6 shrink-0 items-center justify-center rounded-full bg-zinc-900 font-mono text-xs text-white dark:bg-zinc-100 dark:text-zinc-900">
                  {i + 1}
                </span>
                <div>
                  <h3 className="text-sm font-semibold text-zinc-900 dark:text-zinc-100">
                    {t(`steps.${step}.title`)}
                  </h3>
                  <p className="mt-1 text-[13px] leading-relaxed text-zinc-600 dark:text-zinc-400">
                    {t(`steps.${step}.text`, {
                      durations: LEASE_DURATIONS.map((d) => t(`durations.${d.key}`)).join(t('listSeparator')),
                    })}
                  </p>
                </div>
              </div>
            ))}
          </div>
        </section>
      </main>

      <footer className="relative border-t border-zinc-200 dark:border-zinc-800">
        <div className="mx-auto flex max-w-6xl flex-wrap items-center justify-between gap-2 px-4 py-5 text-xs text-zinc-500 sm:px-6">
          <span>{t('footer.product')}</span>
          {settings?.version ? <span className="font-mono">v{settings.version}</span> : null}
        </div>
      </footer>
    </div>
  );
}
