import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { Logo } from '#web/components/controls.tsx';
import { Icon } from '#web/components/icons.tsx';
import { Button } from '#web/components/ui.tsx';
import { Link, useNavigate } from '#web/router/router.tsx';
import { session } from '#web/state/session.ts';

/** The 403 and 404 pages: what happened, and the two ways out. */
export function ErrorPage({ code, titleKey, textKey }: { code: string; titleKey: string; textKey: string }) {
  const { t } = useTranslation('common');
  const navigate = useNavigate();
  const { token } = useSnapshot(session);
  return (
    <div className="flex min-h-dvh flex-col">
      <header className="flex h-12 items-center px-4">
        <Link to="/" className="rounded focus-ring">
          <Logo />
        </Link>
      </header>
      <main className="flex flex-1 flex-col items-center justify-center px-6 pb-24 text-center">
        <p
          className="font-mono text-sm font-medium text-violet-600 dark:text-violet-400"
          data-testid="error-code"
        >
          {code}
        </p>
        <h1 className="mt-2 text-2xl font-semibold tracking-tight text-zinc-900 dark:text-zinc-50">
          {t(titleKey)}
        </h1>
        <p className="mt-2 max-w-md text-[13px] leading-relaxed text-zinc-500 dark:text-zinc-400">
          {t(textKey)}
        </p>
        <div className="mt-6 flex gap-2">
          <Button icon="arrowLeft" onClick={() => navigate(-1)}>
            {t('actions.back')}
          </Button>
          <Link
            to={token ? '/mainboard' : '/'}
            className="inline-flex h-8 items-center gap-2 rounded-md bg-zinc-900 px-3 text-[13px] font-medium text-white shadow-sm hover:bg-zinc-700 focus-ring dark:bg-zinc-100 dark:text-zinc-900 dark:hover:bg-white"
          >
            <Icon name="home" size={15} />
            {token ? t('actions.toConsole') : t('actions.toHome')}
          </Link>
        </div>
      </main>
    </div>
  );
}
