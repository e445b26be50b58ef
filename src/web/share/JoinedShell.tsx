// A shell another user shared into one of the user's groups, watched in a dialog: the user needs an
// apply of their own on the board (opened here without changing the workbench's current apply), then
// subscribes as a guest. Closing the dialog leaves the shell for this user only.

import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { Modal } from '#web/components/Modal.tsx';
import { TerminalPane } from '#web/terminal/TerminalPane.tsx';
import { leaveJoined } from './join.ts';
import { ShellShareBar } from './ShellShareBar.tsx';
import { share } from './state.ts';

export function JoinedShellDialog() {
  const { t } = useTranslation('share');
  const { joined } = useSnapshot(share);
  return (
    <Modal
      open={joined !== null}
      onClose={leaveJoined}
      title={joined ? t('joined.title', { host: joined.hostName, name: joined.serverName }) : ''}
      width="max-w-4xl"
      closeLabel={t('joined.leave')}
      testId="joined-shell"
    >
      {joined && (
        <div className="h-[60vh]">
          <TerminalPane
            shellId={joined.clientId}
            guest
            autoFocus
            bar={<ShellShareBar shellId={joined.clientId} guest />}
          />
        </div>
      )}
    </Modal>
  );
}
