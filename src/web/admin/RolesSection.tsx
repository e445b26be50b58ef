// Roles: each role's permission entries; global administrators create, change and delete roles (the
// super admin role is kept as it is, built-in roles and roles in use are not deleted). The entries to
// tick are every one the console knows of (the features' permission constants and every role's), and
// any other `app.action_resource` may be typed.
import { useEffect, useId, useState } from 'react';
import { useTranslation } from 'react-i18next';
import type { AdminRole } from '#shared/user.ts';
import { dataOf } from '#web/boards/store.ts';
import { Button, Field, Input } from '#web/components/ui.tsx';
import { notify } from '#web/state/notices.ts';
import { B, call, U, useAdminAccess, useLoad } from './api.ts';
import { useIntent } from './state.ts';
import { cell, DataTable, FormDialog, RowActions, Toolbar } from './ui.tsx';

type Editing = { kind: 'create' } | { kind: 'edit'; role: AdminRole } | { kind: 'delete'; role: AdminRole };

// The permission entries of the administration calls (src/shared/user.ts), for the role editor.
const ADMIN_CALLS = [
  'adminUserList',
  'adminUserCreate',
  'adminUserUpdate',
  'adminUserDeactivate',
  'adminOrgList',
  'adminOrgCreate',
  'adminOrgUpdate',
  'adminOrgDelete',
  'adminRoleList',
  'adminRoleCreate',
  'adminRoleUpdate',
  'adminRoleDelete',
  'adminMembershipList',
  'adminMembershipSet',
  'adminAuditList',
  'adminPhoneOutbox',
  'adminSequenceCodeCreate',
  'licenseDetail',
] as const;

const PERM_RE = /^(\*|[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*)$/;

export function knownPerms(roles: readonly AdminRole[]): string[] {
  const all = new Set<string>([
    ...ADMIN_CALLS.flatMap((n) => U[n].perms ?? []),
    ...Object.values(B).flatMap((c) => c.perms ?? []),
    // Publishing images (src/shared/flash.ts; imported from there it would split that module out of the
    // first load's chunk); the other image entries are in the built-in roles.
    'device.add_image',
    // Sharing boards with users of any organisation (SHARE_ANY_ORG_PERM of src/shared/share.ts).
    'device.share_any_org',
    ...roles.flatMap((r) => r.perms),
  ]);
  all.delete('*');
  return [...all].sort();
}

export function RolesSection() {
  const { t } = useTranslation('admin');
  const access = useAdminAccess();
  const [req, reload] = useLoad(() => call(U.adminRoleList, {}), []);
  const [editing, setEditing] = useState<Editing | null>(null);
  useIntent('role.create', () => setEditing({ kind: 'create' }));
  const manage = access.global;

  return (
    <section data-testid="admin-roles">
      <Toolbar
        onRefresh={reload}
        add={
          manage &&
          access.can('rbac.add_role') && {
            icon: 'key',
            label: t('roles.add'),
            testId: 'admin-role-add',
            onClick: () => setEditing({ kind: 'create' }),
          }
        }
      />
      <DataTable
        req={req}
        onRetry={reload}
        testId="admin-role-table"
        empty={{ icon: 'key', title: t('roles.empty') }}
        head={[t('roles.name'), t('roles.perms'), '']}
        rows={(items) =>
          items.map((r) => (
            <tr key={r.id} data-testid="admin-role-row" data-role={r.id}>
              <td className={cell}>
                <div className="font-medium text-zinc-900 dark:text-zinc-100">{r.name}</div>
                <div className="font-mono text-xs text-zinc-500">
                  {r.id}
                  {r.builtin ? ` · ${t('common.builtin')}` : ''}
                </div>
              </td>
              <td className={cell}>
                <div className="flex max-w-xl flex-wrap gap-1">
                  {r.perms.map((p) => (
                    <span
                      key={p}
                      className="rounded bg-zinc-100 px-1.5 py-0.5 font-mono text-[11px] text-zinc-600 dark:bg-zinc-800 dark:text-zinc-300"
                    >
                      {p === '*' ? t('roles.everything') : p}
                    </span>
                  ))}
                </div>
              </td>
              <RowActions>
                {manage && access.can('rbac.change_role') && r.id !== 'superadmin' ? (
                  <Button size="sm" onClick={() => setEditing({ kind: 'edit', role: r })}>
                    {t('common.edit')}
                  </Button>
                ) : null}
                {manage && access.can('rbac.del_role') && !r.builtin ? (
                  <Button size="sm" variant="ghost" onClick={() => setEditing({ kind: 'delete', role: r })}>
                    {t('common.delete')}
                  </Button>
                ) : null}
              </RowActions>
            </tr>
          ))
        }
      />
      <RoleDialog
        editing={editing}
        roles={dataOf(req) ?? []}
        onClose={() => setEditing(null)}
        onDone={reload}
      />
    </section>
  );
}

function RoleDialog({
  editing,
  roles,
  onClose,
  onDone,
}: {
  editing: Editing | null;
  roles: AdminRole[];
  onClose: () => void;
  onDone: () => void;
}) {
  const { t } = useTranslation('admin');
  const id = useId();
  const [name, setName] = useState('');
  const [roleId, setRoleId] = useState('');
  const [picked, setPicked] = useState<Set<string>>(new Set());
  const [extra, setExtra] = useState('');
  useEffect(() => {
    const role = editing && editing.kind !== 'create' ? editing.role : null;
    setName(role?.name ?? '');
    setRoleId('');
    setPicked(new Set(role?.perms ?? []));
    setExtra('');
  }, [editing]);
  const kind = editing?.kind;
  const known = knownPerms(roles);
  const toggle = (p: string) =>
    setPicked((s) => {
      const n = new Set(s);
      if (n.has(p)) n.delete(p);
      else n.add(p);
      return n;
    });
  const perms = () => {
    const typed = extra.split(/[\s,]+/).filter(Boolean);
    const bad = typed.find((p) => !PERM_RE.test(p));
    if (bad) throw new Error(t('roles.badPerm', { perm: bad }));
    return [...new Set([...picked, ...typed])];
  };
  return (
    <FormDialog
      open={!!editing}
      onClose={onClose}
      danger={kind === 'delete'}
      testId="admin-role-dialog"
      title={kind === 'create' ? t('roles.add') : kind === 'edit' ? t('roles.edit') : t('roles.deleteTitle')}
      submitLabel={
        kind === 'create' ? t('common.create') : kind === 'edit' ? t('common.save') : t('common.delete')
      }
      submit={async () => {
        if (!editing) return;
        if (editing.kind === 'create') {
          const r = await call(
            U.adminRoleCreate,
            { name: name.trim(), id: roleId.trim() || undefined, perms: perms() },
            { silent: true },
          );
          notify('success', t('roles.created', { name: r.name }));
        } else if (editing.kind === 'edit') {
          await call(
            U.adminRoleUpdate,
            { id: editing.role.id, name: name.trim(), perms: perms() },
            { silent: true },
          );
        } else {
          await call(U.adminRoleDelete, { id: editing.role.id }, { silent: true });
        }
        onDone();
      }}
    >
      {kind === 'delete' ? (
        <p>{t('roles.deleteText', { name: editing?.kind === 'delete' ? editing.role.name : '' })}</p>
      ) : (
        <>
          <div className="grid grid-cols-2 gap-3">
            <Field label={t('roles.name')} htmlFor={`${id}-n`}>
              <Input
                id={`${id}-n`}
                value={name}
                required
                autoFocus
                onChange={(e) => setName(e.target.value)}
                data-testid="admin-role-name"
              />
            </Field>
            {kind === 'create' ? (
              <Field label={t('roles.id')} htmlFor={`${id}-i`}>
                <Input
                  id={`${id}-i`}
                  value={roleId}
                  pattern="[A-Za-z0-9_\-]{2,64}"
                  onChange={(e) => setRoleId(e.target.value)}
                  data-testid="admin-role-id"
                />
              </Field>
            ) : null}
          </div>
          <fieldset>
            <legend className="mb-1.5 text-xs font-medium text-zinc-700 dark:text-zinc-300">
              {t('roles.perms')}
            </legend>
            <div className="grid max-h-64 grid-cols-2 gap-x-3 gap-y-1 overflow-y-auto rounded-md border border-zinc-200 p-2 dark:border-zinc-700">
              {known.map((p) => (
                <label key={p} className="flex items-center gap-1.5 font-mono text-[11px]">
                  <input
                    type="checkbox"
                    checked={picked.has(p)}
                    onChange={() => toggle(p)}
                    data-testid="admin-role-perm"
                    data-perm={p}
                  />
                  {p}
                </label>
              ))}
            </div>
          </fieldset>
          <Field label={t('roles.extra')} htmlFor={`${id}-x`} hint={t('roles.extraHint')}>
            <Input id={`${id}-x`} value={extra} onChange={(e) => setExtra(e.target.value)} />
          </Field>
        </>
      )}
    </FormDialog>
  );
}
