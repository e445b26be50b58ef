// Shown when a page fails to render or its chunk fails to load (a deploy replaced the assets).
import { useTranslation } from 'react-i18next';
import { Button } from '#web/components/ui.tsx';
import { useRouteError } from '#web/router/router.tsx';

export function RouteError() {
  const error = useRouteError();
  const { t } = useTranslation('common');
  const detail = error instanceof Error ? error.message : String(error ?? '');
  return (
    <div className="flex min-h-dvh flex-col items-center justify-center gap-3 p-6 text-center">
      <h1 className="text-base font-semibold text-zinc-900 dark:text-zinc-100">{t('routeError.title')}</h1>
      <p className="max-w-md text-[13px] text-zinc-500 dark:text-zinc-400">{t('routeError.text')}</p>
      {detail ? (
        <code className="max-w-xl truncate rounded bg-zinc-100 px-2 py-1 font-mono text-xs text-zinc-600 dark:bg-zinc-800 dark:text-zinc-300">
          {detail}
        </code>
      ) : null}
      <Button variant="primary" icon="refresh" onClick={() => window.location.reload()}>
        {t('actions.reload')}
      </Button>
    </div>
  );
}
