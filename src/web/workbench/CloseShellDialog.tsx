// The question before closing a shell that runs a foreground job (close-shells.ts): focus-trapped,
// Enter on the focused Close button confirms, Escape (or Cancel) keeps the shell and goes back to it.
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { Modal } from '#web/components/Modal.tsx';
import { Button } from '#web/components/ui.tsx';
import { answerClose, closeUi } from './close-shells.ts';

export function CloseShellDialog() {
  const { t } = useTranslation('workbench');
  const { question } = useSnapshot(closeUi);
  const named = (question?.commands ?? []).filter((c): c is string => !!c);
  const count = question?.slotIds.length ?? 1;
  return (
    <Modal
      open={question !== null}
      onClose={() => answerClose(false)}
      title={t('closeBusy.title', { count })}
      role="alertdialog"
      testId="close-shell-dialog"
      footer={
        <>
          <Button onClick={() => answerClose(false)} data-testid="close-shell-cancel">
            {t('closeBusy.cancel')}
          </Button>
          <Button
            variant="danger"
            icon="x"
            autoFocus
            onClick={() => answerClose(true)}
            data-testid="close-shell-confirm"
          >
            {t('closeBusy.confirm', { count })}
          </Button>
        </>
      }
    >
      <p>
        {named.length > 0 ? t('closeBusy.bodyNamed', { command: named.join(', ') }) : t('closeBusy.body')}
      </p>
      <p className="mt-2 text-xs text-zinc-500 dark:text-zinc-400">{t('closeBusy.hint')}</p>
    </Modal>
  );
}
