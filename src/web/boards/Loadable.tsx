// Loading, failed and loaded states of one request slot, drawn the same way on every device page.
// While a reload runs the previous answer stays on screen (dimmed by the caller if it likes), so a
// refresh never flashes an empty list.
import type { ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import { dataOf, type Req } from '#web/boards/store.ts';
import { Alert, Button, Spinner } from '#web/components/ui.tsx';

export function Loadable<T>({
  req,
  onRetry,
  children,
  skeleton,
}: {
  req: Req<T>;
  onRetry: () => void;
  children: (data: T, reloading: boolean) => ReactNode;
  skeleton?: ReactNode;
}) {
  const { t } = useTranslation('devices');
  const data = dataOf(req);
  if (data !== undefined) {
    return (
      <>
        {req.status === 'failed' ? (
          <Alert tone="danger" className="mb-3">
            <span className="flex items-center justify-between gap-3">
              {t('common.loadFailed', { error: req.error })}
              <Button size="sm" onClick={onRetry}>
                {t('common.retry')}
              </Button>
            </span>
          </Alert>
        ) : null}
        {children(data, req.status === 'loading')}
      </>
    );
  }
  if (req.status === 'failed') {
    return (
      <Alert tone="danger">
        <span className="flex items-center justify-between gap-3" data-testid="load-error">
          {t('common.loadFailed', { error: req.error })}
          <Button size="sm" onClick={onRetry}>
            {t('common.retry')}
          </Button>
        </span>
      </Alert>
    );
  }
  return (
    <div aria-busy="true" data-testid="loading">
      {skeleton ?? (
        <div className="flex items-center gap-2 py-10 text-[13px] text-zinc-500 justify-center">
          <Spinner size={14} /> {t('common.loading')}
        </div>
      )}
    </div>
  );
}

export function SkeletonRows({ rows = 3 }: { rows?: number }) {
  return (
    <div className="divide-y divide-zinc-100 dark:divide-zinc-800">
      {Array.from({ length: rows }, (_, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: placeholder rows have no identity.
        <div key={i} className="flex items-center gap-4 px-4 py-3.5">
          <div className="h-3.5 w-40 animate-pulse rounded bg-zinc-200 dark:bg-zinc-800" />
          <div className="h-3.5 w-16 animate-pulse rounded bg-zinc-100 dark:bg-zinc-800/70" />
          <div className="ml-auto h-3.5 w-24 animate-pulse rounded bg-zinc-100 dark:bg-zinc-800/70" />
        </div>
      ))}
    </div>
  );
}
