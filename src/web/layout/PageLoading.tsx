import { useTranslation } from 'react-i18next';
import { Spinner } from '#web/components/ui.tsx';

export function PageLoading() {
  const { t } = useTranslation('common');
  return (
    <div className="flex h-full min-h-40 w-full items-center justify-center gap-2 text-[13px] text-zinc-500" role="status">
      <Spinner size={14} />
      {t('status.loading')}
    </div>
  );
}

export function FullPageStatus({ text }: { text: string }) {
  return (
    <div className="flex min-h-dvh items-center justify-center gap-2.5 text-[13px] text-zinc-500 dark:text-zinc-400" role="status">
      <Spinner size={16} />
      {text}
    </div>
  );
}
