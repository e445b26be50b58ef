// Spec section 8: after 50008/50012/50014 the user chooses between logging in again (the token is
// reset and the page reloads, so the guard starts the sign-in) and staying on the page.
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { closeReLogin, sessionEnded } from '#web/state/notices.ts';
import { resetSession } from '#web/state/session.ts';
import { Modal } from './Modal.tsx';
import { Button } from './ui.tsx';

export function SessionEndedDialog() {
  const snap = useSnapshot(sessionEnded);
  const { t } = useTranslation('http');
  const reLogin = () => {
    resetSession();
    window.location.reload();
  };
  return (
    <Modal
      open={snap.open}
      onClose={closeReLogin}
      title={t('sessionEnded.title')}
      role="alertdialog"
      testId="session-ended-dialog"
      footer={
        <>
          <Button onClick={closeReLogin}>{t('sessionEnded.cancel')}</Button>
          <Button variant="primary" onClick={reLogin} autoFocus>
            {t('sessionEnded.reLogin')}
          </Button>
        </>
      }
    >
      <p>{t('sessionEnded.text')}</p>
    </Modal>
  );
}
