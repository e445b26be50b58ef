// A held board's flash actions where boards are listed (the mainboard rows): "Flash" opens the wizard,
// the history icon opens its flash history, and while a job of this tab runs on the board the button
// shows its percent and opens the job.
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { FlashPerm } from '#shared/flash.ts';
import { hasPermission } from '#shared/permissions.ts';
import { Button, IconButton } from '#web/components/ui.tsx';
import { session } from '#web/state/session.ts';
import { isFinal, shownPercent } from './format.ts';
import { flash, openHistory, openJob, openWizard } from './state.ts';

export function FlashRowActions({ deviceId, disabled }: { deviceId: string; disabled?: boolean }) {
  const { t } = useTranslation('flash');
  const snap = useSnapshot(flash);
  const { perms } = useSnapshot(session);
  const jobId = snap.byDevice[deviceId];
  const job = jobId ? snap.jobs[jobId]?.job : undefined;
  const running = !!job && !isFinal(job);
  const canFlash = hasPermission([FlashPerm.add], perms);
  const canView = hasPermission([FlashPerm.view], perms);
  return (
    <>
      {running && job ? (
        <Button
          size="sm"
          variant="ghost"
          className="text-violet-700 dark:text-violet-300"
          onClick={(e) => {
            e.stopPropagation();
            openJob(deviceId);
          }}
          data-testid="flash-progress"
        >
          <span className="tabular-nums">{t('board.progress', { percent: shownPercent(job) })}</span>
        </Button>
      ) : canFlash ? (
        <Button
          size="sm"
          variant="ghost"
          icon="upload"
          disabled={disabled}
          onClick={(e) => {
            e.stopPropagation();
            openWizard('one', [deviceId]);
          }}
          data-testid="flash"
        >
          {t('board.flash')}
        </Button>
      ) : null}
      {canView ? (
        <IconButton
          icon="book"
          size={14}
          className="h-7 w-7"
          label={t('history.open')}
          onClick={(e) => {
            e.stopPropagation();
            openHistory(deviceId);
          }}
          data-testid="flash-history-open"
        />
      ) : null}
    </>
  );
}
