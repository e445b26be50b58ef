// The users section's dialogs: create a user, the generated password shown once, reset a password, and
// a user's memberships (organisation → role; add, change, remove).
import { useEffect, useId, useState } from 'react';
import { useTranslation } from 'react-i18next';
import type { AdminOrg, AdminRole, AdminUser, Membership } from '#shared/user.ts';
import { CopyButton } from '#web/components/CopyButton.tsx';
import { Modal } from '#web/components/Modal.tsx';
import { Button, Field, IconButton, Input } from '#web/components/ui.tsx';
import { notify } from '#web/state/notices.ts';
import { grantable } from './access.ts';
import { type AdminAccess, call, randomPassword, U } from './api.ts';
import {
  AddMembershipForm,
  CopyableCode,
  ErrorLine,
  FormDialog,
  MembershipRole,
  Options,
  removeMembership,
  Select,
  ShownOnceDialog,
  setMembership,
  useMembershipRun,
} from './ui.tsx';

interface Pickers {
  orgs: AdminOrg[];
  roles: AdminRole[];
}

export function CreateUserDialog({
  open,
  onClose,
  onCreated,
  access,
  orgs,
  roles,
}: {
  open: boolean;
  onClose: () => void;
  onCreated: (username: string, password: string | null) => void;
  access: AdminAccess;
} & Pickers) {
  const { t } = useTranslation('admin');
  const id = useId();
  const [username, setUsername] = useState('');
  const [name, setName] = useState('');
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [orgId, setOrgId] = useState('');
  const [roleId, setRoleId] = useState('org_user');
  useEffect(() => {
    if (!open) return;
    setUsername('');
    setName('');
    setEmail('');
    setPassword('');
    setOrgId(access.global ? '' : (access.orgId ?? ''));
    setRoleId('org_user');
  }, [open, access.global, access.orgId]);
  const offered = grantable(roles, access);
  return (
    <FormDialog
      open={open}
      onClose={onClose}
      title={t('users.add')}
      submitLabel={t('users.create')}
      testId="admin-user-dialog"
      submit={async () => {
        const r = await call(
          U.adminUserCreate,
          {
            username: username.trim(),
            name: name.trim() || undefined,
            email: email.trim() || undefined,
            password: password || undefined,
            orgId: orgId || undefined,
            roleId: roleId || undefined,
          },
          { silent: true },
        );
        notify('success', t('users.created', { name: r.user.username }));
        onCreated(r.user.username, r.password);
      }}
    >
      <Field label={t('users.username')} htmlFor={`${id}-u`}>
        <Input
          id={`${id}-u`}
          value={username}
          onChange={(e) => setUsername(e.target.value)}
          autoFocus
          required
          autoComplete="off"
          data-testid="admin-user-username"
        />
      </Field>
      <Field label={t('users.name')} htmlFor={`${id}-n`}>
        <Input id={`${id}-n`} value={name} onChange={(e) => setName(e.target.value)} autoComplete="off" />
      </Field>
      <Field label={t('users.email')} htmlFor={`${id}-e`}>
        <Input id={`${id}-e`} type="email" value={email} onChange={(e) => setEmail(e.target.value)} />
      </Field>
      <Field label={t('users.password')} htmlFor={`${id}-p`} hint={t('users.passwordHint')}>
        <Input
          id={`${id}-p`}
          type="text"
          value={password}
          minLength={8}
          onChange={(e) => setPassword(e.target.value)}
          autoComplete="new-password"
          data-testid="admin-user-password"
        />
      </Field>
      <div className="grid grid-cols-2 gap-3">
        <Field label={t('users.org')} htmlFor={`${id}-o`}>
          {access.global ? (
            <Select
              id={`${id}-o`}
              value={orgId}
              onChange={(e) => setOrgId(e.target.value)}
              className="w-full max-w-none"
              data-testid="admin-user-org"
            >
              <option value="">{t('users.defaultOrg')}</option>
              <Options items={orgs} withId />
            </Select>
          ) : (
            <Input id={`${id}-o`} value={orgId} readOnly />
          )}
        </Field>
        <Field label={t('users.role')} htmlFor={`${id}-r`}>
          <Select
            id={`${id}-r`}
            value={roleId}
            onChange={(e) => setRoleId(e.target.value)}
            className="w-full max-w-none"
            data-testid="admin-user-role"
          >
            {offered.length === 0 ? <option value="org_user">org_user</option> : null}
            <Options items={offered} withId />
          </Select>
        </Field>
      </div>
    </FormDialog>
  );
}

export function ShownPassword({
  shown,
  onClose,
}: {
  shown: { username: string; password: string } | null;
  onClose: () => void;
}) {
  const { t } = useTranslation('admin');
  return (
    <ShownOnceDialog open={!!shown} onClose={onClose} title={t('users.passwordOnce')}>
      <p className="mb-2">{t('users.passwordOnceText', { name: shown?.username ?? '' })}</p>
      <CopyableCode text={shown?.password ?? ''} testId="admin-shown-password" />
    </ShownOnceDialog>
  );
}

export function PasswordDialog({ user, onClose }: { user: AdminUser | null; onClose: () => void }) {
  const { t } = useTranslation('admin');
  const id = useId();
  const [password, setPassword] = useState('');
  useEffect(() => {
    if (user) setPassword('');
  }, [user]);
  return (
    <FormDialog
      open={!!user}
      onClose={onClose}
      title={t('users.resetPasswordOf', { name: user?.username ?? '' })}
      submitLabel={t('users.resetPassword')}
      testId="admin-passwd-dialog"
      submit={async () => {
        if (!user) return;
        await call(U.adminUserUpdate, { id: user.id, password }, { silent: true });
        notify('success', t('users.passwordReset', { name: user.username }));
      }}
    >
      <p>{t('users.resetPasswordText')}</p>
      <Field label={t('users.newPassword')} htmlFor={`${id}-p`}>
        <div className="flex gap-2">
          <Input
            id={`${id}-p`}
            value={password}
            minLength={8}
            required
            autoFocus
            autoComplete="new-password"
            onChange={(e) => setPassword(e.target.value)}
            data-testid="admin-passwd-input"
          />
          <IconButton
            icon="sparkle"
            label={t('users.generate')}
            onClick={() => setPassword(randomPassword())}
          />
          <CopyButton text={password} />
        </div>
      </Field>
    </FormDialog>
  );
}

export function MembershipsDialog({
  user,
  onClose,
  onChanged,
  access,
  orgs,
  roles,
}: {
  user: AdminUser | null;
  onClose: () => void;
  onChanged: () => void;
  access: AdminAccess;
} & Pickers) {
  const { t } = useTranslation('admin');
  const id = useId();
  const [items, setItems] = useState<Membership[]>([]);
  const [orgId, setOrgId] = useState('');
  const [roleId, setRoleId] = useState('org_user');
  const { run, error, setError } = useMembershipRun(async () => {
    if (user) await load(user.id);
    onChanged();
  });
  const editable = access.can('rbac.change_membership');
  const offered = grantable(roles, access);
  const orgChoices = access.global ? orgs : orgs.filter((o) => o.id === access.orgId);

  const load = (userId: string) =>
    call(U.adminMembershipList, { userId }, { silent: true }).then(setItems, (e: Error) =>
      setError(e.message),
    );
  // biome-ignore lint/correctness/useExhaustiveDependencies: reloaded when another user is shown.
  useEffect(() => {
    if (!user) return;
    setItems([]);
    setError(null);
    setOrgId(access.global ? '' : (access.orgId ?? ''));
    void load(user.id);
  }, [user, access.global, access.orgId]);

  return (
    <Modal
      open={!!user}
      onClose={onClose}
      width="max-w-lg"
      title={t('users.membershipsOf', { name: user?.username ?? '' })}
      closeLabel={t('common.close')}
      testId="admin-memberships-dialog"
      footer={<Button onClick={onClose}>{t('common.close')}</Button>}
    >
      <ul className="mb-3 divide-y divide-zinc-100 dark:divide-zinc-800">
        {items.map((m) => (
          <li
            key={m.orgId}
            className="flex items-center gap-2 py-2"
            data-testid="admin-membership"
            data-org={m.orgId}
          >
            <span className="flex-1 font-medium">{orgs.find((o) => o.id === m.orgId)?.name ?? m.orgId}</span>
            <MembershipRole m={m} editable={editable} run={run}>
              <Options
                items={[...offered, ...roles.filter((r) => r.id === m.roleId && !offered.includes(r))]}
              />
              {roles.some((r) => r.id === m.roleId) ? null : <option value={m.roleId}>{m.roleId}</option>}
            </MembershipRole>
            {editable ? (
              <IconButton
                icon="x"
                label={t('users.removeMembership', { org: m.orgId })}
                onClick={() => void run(() => removeMembership(m))}
              />
            ) : null}
          </li>
        ))}
      </ul>
      {editable ? (
        <AddMembershipForm
          onAdd={() => {
            if (user && orgId) void run(() => setMembership({ userId: user.id, orgId }, roleId));
          }}
          roleId={roleId}
          onRoleId={setRoleId}
          roles={offered}
          icon="check"
          label={t('users.addMembership')}
        >
          <Field label={t('users.org')} htmlFor={`${id}-o`}>
            <Select id={`${id}-o`} value={orgId} onChange={(e) => setOrgId(e.target.value)} required>
              <option value="">—</option>
              <Options items={orgChoices} />
            </Select>
          </Field>
        </AddMembershipForm>
      ) : null}
      <ErrorLine error={error} />
    </Modal>
  );
}
