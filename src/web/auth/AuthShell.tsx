// The frame of the sign-in pages: brand, language and theme, one centred card.
import type { ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import { LanguageMenu, Logo, ThemeToggle } from '#web/components/controls.tsx';
import { Link } from '#web/router/router.tsx';

export function AuthShell({
  title,
  subtitle,
  children,
  footer,
}: {
  title: string;
  subtitle?: string;
  children: ReactNode;
  footer?: ReactNode;
}) {
  const { t } = useTranslation('auth');
  return (
    <div className="relative flex min-h-dvh flex-col bg-zinc-50 dark:bg-zinc-950">
      <div
        aria-hidden="true"
        className="pointer-events-none absolute inset-x-0 top-0 h-80 bg-[radial-gradient(ellipse_50%_60%_at_50%_0%,rgba(139,92,246,0.10),transparent)] dark:bg-[radial-gradient(ellipse_50%_60%_at_50%_0%,rgba(139,92,246,0.18),transparent)]"
      />
      <header className="relative flex h-14 items-center px-4 sm:px-6">
        <Link to="/" className="rounded focus-ring">
          <Logo />
        </Link>
        <div className="ml-auto flex items-center gap-1">
          <LanguageMenu />
          <ThemeToggle />
        </div>
      </header>
      <main className="relative flex flex-1 items-start justify-center px-4 pt-[8vh] pb-16">
        <div className="w-full max-w-[380px]">
          <div className="mb-6 text-center">
            <h1 className="text-xl font-semibold tracking-tight text-zinc-900 dark:text-zinc-50">{title}</h1>
            {subtitle ? (
              <p className="mt-1.5 text-[13px] text-zinc-500 dark:text-zinc-400">{subtitle}</p>
            ) : null}
          </div>
          <div className="rounded-xl border border-zinc-200 bg-white p-5 shadow-sm dark:border-zinc-800 dark:bg-zinc-900">
            {children}
          </div>
          {footer ? (
            <div className="mt-5 text-center text-[13px] text-zinc-500 dark:text-zinc-400">{footer}</div>
          ) : null}
          <p className="mt-8 text-center text-xs text-zinc-400 dark:text-zinc-600">{t('shell.legal')}</p>
        </div>
      </main>
    </div>
  );
}
