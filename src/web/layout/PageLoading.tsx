import { useTranslation } from 'react-i18next';
import { Button, Spinner } from '#web/components/ui.tsx';

export function PageLoading() {
  const { t } = useTranslation('common');
  return (
    <div
      className="flex h-full min-h-40 w-full items-center justify-center gap-2 text-[13px] text-zinc-500"
      role="status"
    >
      <Spinner size={14} />
      {t('status.loading')}
    </div>
  );
}

export function FullPageStatus({
  text,
  action,
}: {
  text: string;
  action?: { label: string; run: () => void };
}) {
  return (
    <div
      className="flex min-h-dvh items-center justify-center gap-2.5 text-[13px] text-zinc-500 dark:text-zinc-400"
      role="status"
    >
      {action ? null : <Spinner size={16} />}
      {text}
      {action ? (
        <Button variant="primary" size="sm" className="ml-2" onClick={action.run}>
          {action.label}
        </Button>
      ) : null}
    </div>
  );
}
