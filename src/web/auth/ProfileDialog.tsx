// The profile dialog of the navbar avatar: who is signed in, in which organisation, and the avatar
// crop. Escape closes the crop first (spec section 4), then the dialog.
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { Modal } from '#web/components/Modal.tsx';
import { Avatar, Button } from '#web/components/ui.tsx';
import { session } from '#web/state/session.ts';
import { AvatarCrop } from './AvatarCrop.tsx';
import { closeProfile, profileDialog } from './profile-state.ts';

export function ProfileSummary({ onChangeAvatar }: { onChangeAvatar: () => void }) {
  const { t } = useTranslation('auth');
  const snap = useSnapshot(session);
  const user = snap.userData;
  const rows: [string, string][] = [
    [t('profile.username'), user?.username ?? ''],
    [t('profile.id'), snap.id],
    [
      t('profile.org'),
      snap.currentOrg
        ? `${snap.currentOrg.name || snap.currentOrg.id} · ${snap.currentOrg.type}`
        : t('profile.none'),
    ],
    [t('profile.roles'), snap.roles.length ? snap.roles.join(', ') : t('profile.none')],
    [
      t('profile.perms'),
      snap.perms.includes('*') ? t('profile.allPerms') : t('profile.permCount', { count: snap.perms.length }),
    ],
  ];
  return (
    <div className="space-y-4" data-testid="profile">
      <div className="flex items-center gap-3">
        <Avatar src={snap.avatar} name={snap.name} size={56} />
        <div className="min-w-0 flex-1">
          <div
            className="truncate text-sm font-semibold text-zinc-900 dark:text-zinc-100"
            data-testid="profile-name"
          >
            {snap.name}
          </div>
          <div className="truncate text-xs text-zinc-500">{user?.username}</div>
        </div>
        <Button icon="image" onClick={onChangeAvatar} data-testid="change-avatar">
          {t('profile.changeAvatar')}
        </Button>
      </div>
      <dl className="divide-y divide-zinc-100 rounded-lg border border-zinc-200 dark:divide-zinc-800 dark:border-zinc-800">
        {rows.map(([k, v]) => (
          <div key={k} className="flex gap-4 px-3 py-2 text-[13px]">
            <dt className="w-28 shrink-0 text-zinc-500">{k}</dt>
            <dd className="min-w-0 flex-1 truncate font-mono text-xs leading-5 text-zinc-800 dark:text-zinc-200">
              {v}
            </dd>
          </div>
        ))}
      </dl>
    </div>
  );
}

export default function ProfileDialog() {
  const { t } = useTranslation('auth');
  const { open, cropping } = useSnapshot(profileDialog);
  const closeCrop = () => {
    profileDialog.cropping = false;
  };
  return (
    <Modal
      open={open}
      onClose={cropping ? closeCrop : closeProfile}
      title={cropping ? t('avatar.title') : t('profile.title')}
      closeLabel={t('actions.close')}
      width={cropping ? 'max-w-xl' : 'max-w-md'}
      testId="profile-dialog"
    >
      {cropping ? (
        <AvatarCrop onClose={closeCrop} />
      ) : (
        <ProfileSummary onChangeAvatar={() => (profileDialog.cropping = true)} />
      )}
    </Modal>
  );
}
