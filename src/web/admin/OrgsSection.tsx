// Organisations: the list (an organisation admin sees their own), create, rename and delete (global
// administrators; built-in ones and ones with members are kept), and an organisation's members with
// their roles (add an existing user, change a role, take someone out).
import { useEffect, useId, useRef, useState } from 'react';
import { useTranslation } from 'react-i18next';
import type { AdminOrg, Membership } from '#shared/user.ts';
import { Button, Card, Field, IconButton, Input } from '#web/components/ui.tsx';
import { notify } from '#web/state/notices.ts';
import { grantable } from './access.ts';
import { type AdminAccess, call, U, useAdminAccess, useLoad } from './api.ts';
import { useIntent } from './state.ts';
import { usePickers } from './UsersSection.tsx';
import {
  AddMembershipForm,
  cell,
  DataTable,
  ErrorLine,
  FormDialog,
  MembershipRole,
  RowActions,
  removeMembership,
  setMembership,
  Toolbar,
  useMembershipRun,
} from './ui.tsx';

type Editing = { kind: 'create' } | { kind: 'rename'; org: AdminOrg } | { kind: 'delete'; org: AdminOrg };

export function OrgsSection() {
  const { t } = useTranslation('admin');
  const access = useAdminAccess();
  const [req, reload] = useLoad(() => call(U.adminOrgList, {}), []);
  const [editing, setEditing] = useState<Editing | null>(null);
  const [open, setOpen] = useState<AdminOrg | null>(null);
  useIntent('org.create', () => setEditing({ kind: 'create' }));
  const manage = access.global;

  return (
    <section data-testid="admin-orgs">
      <Toolbar
        onRefresh={reload}
        add={
          manage &&
          access.can('rbac.add_organization') && {
            icon: 'layers',
            label: t('orgs.add'),
            testId: 'admin-org-add',
            onClick: () => setEditing({ kind: 'create' }),
          }
        }
      />
      <DataTable
        req={req}
        onRetry={reload}
        testId="admin-org-table"
        empty={{ icon: 'layers', title: t('orgs.empty') }}
        head={[t('orgs.name'), t('orgs.id'), t('orgs.members'), '']}
        rows={(items) =>
          items.map((o) => (
            <tr key={o.id} data-testid="admin-org-row" data-org={o.id}>
              <td className={cell}>
                <div className="font-medium text-zinc-900 dark:text-zinc-100">{o.name}</div>
                {o.builtin ? <div className="text-xs text-zinc-500">{t('common.builtin')}</div> : null}
              </td>
              <td className={`${cell} font-mono text-xs`}>{o.id}</td>
              <td className={`${cell} tabular-nums`}>{o.members}</td>
              <RowActions>
                {access.can('rbac.view_membership') ? (
                  <Button size="sm" onClick={() => setOpen(o)} data-testid="admin-org-members">
                    {t('orgs.showMembers')}
                  </Button>
                ) : null}
                {manage && access.can('rbac.change_organization') ? (
                  <Button size="sm" onClick={() => setEditing({ kind: 'rename', org: o })}>
                    {t('orgs.rename')}
                  </Button>
                ) : null}
                {manage && access.can('rbac.del_organization') && !o.builtin ? (
                  <Button size="sm" variant="ghost" onClick={() => setEditing({ kind: 'delete', org: o })}>
                    {t('common.delete')}
                  </Button>
                ) : null}
              </RowActions>
            </tr>
          ))
        }
      />
      {open ? (
        <OrgMembers org={open} access={access} onClose={() => setOpen(null)} onChanged={reload} />
      ) : null}
      <OrgDialog editing={editing} onClose={() => setEditing(null)} onDone={reload} />
    </section>
  );
}

function OrgDialog({
  editing,
  onClose,
  onDone,
}: {
  editing: Editing | null;
  onClose: () => void;
  onDone: () => void;
}) {
  const { t } = useTranslation('admin');
  const id = useId();
  const [name, setName] = useState('');
  const [orgId, setOrgId] = useState('');
  useEffect(() => {
    setName(editing?.kind === 'rename' ? editing.org.name : '');
    setOrgId('');
  }, [editing]);
  const kind = editing?.kind;
  return (
    <FormDialog
      open={!!editing}
      onClose={onClose}
      danger={kind === 'delete'}
      testId="admin-org-dialog"
      title={
        kind === 'create'
          ? t('orgs.add')
          : kind === 'rename'
            ? t('orgs.rename')
            : t('orgs.deleteTitle', { name: editing?.kind === 'delete' ? editing.org.name : '' })
      }
      submitLabel={
        kind === 'create' ? t('common.create') : kind === 'rename' ? t('common.save') : t('common.delete')
      }
      submit={async () => {
        if (!editing) return;
        if (editing.kind === 'create') {
          const o = await call(
            U.adminOrgCreate,
            { name: name.trim(), id: orgId.trim() || undefined },
            { silent: true },
          );
          notify('success', t('orgs.created', { name: o.name }));
        } else if (editing.kind === 'rename') {
          await call(U.adminOrgUpdate, { id: editing.org.id, name: name.trim() }, { silent: true });
        } else {
          await call(U.adminOrgDelete, { id: editing.org.id }, { silent: true });
          notify('success', t('orgs.deleted', { name: editing.org.name }));
        }
        onDone();
      }}
    >
      {kind === 'delete' ? (
        <p>{t('orgs.deleteText')}</p>
      ) : (
        <>
          <Field label={t('orgs.name')} htmlFor={`${id}-n`}>
            <Input
              id={`${id}-n`}
              value={name}
              onChange={(e) => setName(e.target.value)}
              required
              autoFocus
              data-testid="admin-org-name"
            />
          </Field>
          {kind === 'create' ? (
            <Field label={t('orgs.id')} htmlFor={`${id}-i`} hint={t('orgs.idHint')}>
              <Input
                id={`${id}-i`}
                value={orgId}
                pattern="[A-Za-z0-9_\-]{2,64}"
                onChange={(e) => setOrgId(e.target.value)}
                data-testid="admin-org-id"
              />
            </Field>
          ) : null}
        </>
      )}
    </FormDialog>
  );
}

/** The members of one organisation, their roles, and adding an existing user by username. */
function OrgMembers({
  org,
  access,
  onClose,
  onChanged,
}: {
  org: AdminOrg;
  access: AdminAccess;
  onClose: () => void;
  onChanged: () => void;
}) {
  const { t } = useTranslation('admin');
  const id = useId();
  const { roles } = usePickers(access);
  const [req, reload] = useLoad(() => call(U.adminMembershipList, { orgId: org.id }), [org.id]);
  const [username, setUsername] = useState('');
  const [roleId, setRoleId] = useState('org_user');
  const { run, error } = useMembershipRun(() => {
    reload();
    onChanged();
  });
  const editable = access.can('rbac.change_membership');
  const offered = grantable(roles, access);
  // The panel opens below the list: the keyboard follows it there (its heading takes the focus).
  const heading = useRef<HTMLHeadingElement>(null);
  // biome-ignore lint/correctness/useExhaustiveDependencies: again for each organisation opened.
  useEffect(() => {
    heading.current?.focus();
    heading.current?.scrollIntoView?.({ block: 'nearest' });
  }, [org.id]);

  const add = async () => {
    const found = await call(
      U.adminUserList,
      { search: username.trim(), page: 1, pageSize: 20 },
      { silent: true },
    );
    const user = found.items.find((u) => u.username === username.trim());
    if (!user) throw new Error(t('orgs.noSuchUser', { name: username.trim() }));
    await setMembership({ userId: user.id, orgId: org.id }, roleId);
    setUsername('');
  };

  return (
    <Card className="mt-4 p-4">
      <div className="mb-3 flex items-center gap-2" data-testid="admin-org-members-panel" data-org={org.id}>
        <h3 ref={heading} tabIndex={-1} className="flex-1 text-sm font-semibold focus:outline-none">
          {t('orgs.membersOf', { name: org.name })}
        </h3>
        <IconButton icon="x" label={t('common.close')} onClick={onClose} />
      </div>
      <DataTable<Membership>
        req={req}
        onRetry={reload}
        testId="admin-member-table"
        empty={{ icon: 'user', title: t('orgs.noMembers') }}
        head={[t('users.user'), t('users.role'), '']}
        rows={(items) =>
          items.map((m) => (
            <tr key={m.userId} data-testid="admin-member-row" data-username={m.username}>
              <td className={cell}>{m.username}</td>
              <td className={cell}>
                <MembershipRole m={m} editable={editable} run={run}>
                  {roles.some((r) => r.id === m.roleId) ? null : <option value={m.roleId}>{m.roleId}</option>}
                  {roles.map((r) => (
                    <option key={r.id} value={r.id} disabled={!offered.includes(r)}>
                      {r.name}
                    </option>
                  ))}
                </MembershipRole>
              </td>
              <td className={`${cell} text-right`}>
                {editable ? (
                  <Button size="sm" variant="ghost" onClick={() => void run(() => removeMembership(m))}>
                    {t('orgs.removeMember')}
                  </Button>
                ) : null}
              </td>
            </tr>
          ))
        }
      />
      {editable ? (
        <AddMembershipForm
          className="mt-3"
          onAdd={() => void run(add)}
          roleId={roleId}
          onRoleId={setRoleId}
          roles={offered}
          icon="user"
          label={t('orgs.addMember')}
        >
          <Field label={t('users.username')} htmlFor={`${id}-u`}>
            <Input
              id={`${id}-u`}
              value={username}
              required
              onChange={(e) => setUsername(e.target.value)}
              className="h-8"
              data-testid="admin-member-username"
            />
          </Field>
        </AddMembershipForm>
      ) : null}
      <ErrorLine error={error} />
    </Card>
  );
}
