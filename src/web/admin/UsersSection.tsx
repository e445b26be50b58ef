// Users: search (and, for global administrators, an organisation filter), one page at a time; create a
// user in an organisation with a role, reset a password, deactivate or reactivate, and edit the user's
// memberships (organisation → role). An organisation admin sees and manages their organisation only.
import { useState } from 'react';
import { useTranslation } from 'react-i18next';
import type { AdminOrg, AdminRole, AdminUser } from '#shared/user.ts';
import { dataOf } from '#web/boards/store.ts';
import { Button, Input } from '#web/components/ui.tsx';
import { notify } from '#web/state/notices.ts';
import { session } from '#web/state/session.ts';
import { type AdminAccess, call, U, useAdminAccess, useLoad } from './api.ts';
import { useIntent } from './state.ts';
import { CreateUserDialog, MembershipsDialog, PasswordDialog, ShownPassword } from './UserDialogs.tsx';
import { cell, DataTable, FormDialog, Options, Pager, RowActions, Select, Toolbar } from './ui.tsx';

const PAGE_SIZE = 50;

/** Organisations and roles for the pickers, as far as the user may list them. */
export function usePickers(access: AdminAccess) {
  const [orgs] = useLoad<AdminOrg[]>(
    () => (access.can('rbac.view_organization') ? call(U.adminOrgList, {}) : Promise.resolve([])),
    [],
  );
  const [roles] = useLoad<AdminRole[]>(
    () => (access.can('rbac.view_role') ? call(U.adminRoleList, {}) : Promise.resolve([])),
    [],
  );
  return { orgs: dataOf(orgs) ?? [], roles: dataOf(roles) ?? [] };
}

export function UsersSection() {
  const { t } = useTranslation('admin');
  const access = useAdminAccess();
  const pickers = usePickers(access);
  const [search, setSearch] = useState('');
  const [orgId, setOrgId] = useState('');
  const [page, setPage] = useState(1);
  const [total, setTotal] = useState(0);
  const [req, reload] = useLoad(
    () =>
      call(U.adminUserList, {
        search: search.trim() || undefined,
        orgId: orgId || undefined,
        page,
        pageSize: PAGE_SIZE,
      }).then((r) => {
        setTotal(r.total);
        return r.items;
      }),
    [search, orgId, page],
  );
  const [creating, setCreating] = useState(false);
  const [shown, setShown] = useState<{ username: string; password: string } | null>(null);
  const [passwordOf, setPasswordOf] = useState<AdminUser | null>(null);
  const [membersOf, setMembersOf] = useState<AdminUser | null>(null);
  const [deactivating, setDeactivating] = useState<AdminUser | null>(null);
  useIntent('user.create', () => setCreating(true));

  const reactivate = async (u: AdminUser) => {
    await call(U.adminUserUpdate, { id: u.id, isActive: true });
    notify('success', t('users.reactivated', { name: u.username }));
    reload();
  };
  const pages = Math.max(1, Math.ceil(total / PAGE_SIZE));

  return (
    <section aria-labelledby="admin-users-title" data-testid="admin-users">
      <h2 id="admin-users-title" className="sr-only">
        {t('users.title')}
      </h2>
      <Toolbar
        onRefresh={reload}
        add={
          access.can('rbac.add_user') && {
            icon: 'user',
            label: t('users.add'),
            testId: 'admin-user-add',
            onClick: () => setCreating(true),
          }
        }
      >
        <Input
          type="search"
          aria-label={t('users.search')}
          placeholder={t('users.search')}
          value={search}
          onChange={(e) => {
            setSearch(e.target.value);
            setPage(1);
          }}
          className="h-8 max-w-56"
          data-testid="admin-user-search"
        />
        {access.global ? (
          <Select
            aria-label={t('users.org')}
            value={orgId}
            onChange={(e) => {
              setOrgId(e.target.value);
              setPage(1);
            }}
          >
            <option value="">{t('users.anyOrg')}</option>
            <Options items={pickers.orgs} />
          </Select>
        ) : null}
      </Toolbar>
      <DataTable
        req={req}
        onRetry={reload}
        testId="admin-user-table"
        empty={{ icon: 'user', title: t('users.empty') }}
        head={[t('users.user'), t('users.contact'), t('users.memberships'), t('users.status'), '']}
        rows={(items) =>
          items.map((u) => (
            <tr key={u.id} data-testid="admin-user-row" data-username={u.username}>
              <td className={cell}>
                <div className="font-medium text-zinc-900 dark:text-zinc-100">{u.username}</div>
                {u.name !== u.username ? <div className="text-xs text-zinc-500">{u.name}</div> : null}
              </td>
              <td className={`${cell} text-zinc-600 dark:text-zinc-300`}>
                <div>{u.email ?? '—'}</div>
                {u.phone ? <div className="text-xs text-zinc-500">{u.phone}</div> : null}
              </td>
              <td className={cell}>
                <div className="flex flex-wrap gap-1">
                  {u.memberships.map((m) => (
                    <span
                      key={m.orgId}
                      className="rounded bg-zinc-100 px-1.5 py-0.5 text-xs whitespace-nowrap text-zinc-600 dark:bg-zinc-800 dark:text-zinc-300"
                    >
                      {m.orgId} · {m.roleId}
                    </span>
                  ))}
                </div>
              </td>
              <td className={`${cell} whitespace-nowrap`}>
                {u.isActive ? t('users.active') : <span className="text-red-600">{t('users.inactive')}</span>}
              </td>
              <RowActions>
                {access.can('rbac.view_membership') ? (
                  <Button size="sm" onClick={() => setMembersOf(u)} data-testid="admin-user-roles">
                    {t('users.roles')}
                  </Button>
                ) : null}
                {access.can('rbac.change_user') ? (
                  <Button size="sm" onClick={() => setPasswordOf(u)} data-testid="admin-user-passwd">
                    {t('users.resetPassword')}
                  </Button>
                ) : null}
                {u.isActive && access.can('rbac.del_user') && u.id !== session.id ? (
                  <Button
                    size="sm"
                    variant="ghost"
                    onClick={() => setDeactivating(u)}
                    data-testid="admin-user-deactivate"
                  >
                    {t('users.deactivate')}
                  </Button>
                ) : null}
                {!u.isActive && access.can('rbac.change_user') ? (
                  <Button size="sm" variant="ghost" onClick={() => void reactivate(u).catch(() => {})}>
                    {t('users.reactivate')}
                  </Button>
                ) : null}
              </RowActions>
            </tr>
          ))
        }
      />
      <Pager page={page} pages={pages} onPage={setPage} />
      <CreateUserDialog
        open={creating}
        onClose={() => setCreating(false)}
        access={access}
        {...pickers}
        onCreated={(username, password) => {
          reload();
          if (password) setShown({ username, password });
        }}
      />
      <ShownPassword shown={shown} onClose={() => setShown(null)} />
      <FormDialog
        open={!!deactivating}
        onClose={() => setDeactivating(null)}
        title={t('users.deactivate')}
        submitLabel={t('users.deactivate')}
        danger
        testId="admin-deactivate-dialog"
        submit={async () => {
          if (!deactivating) return;
          await call(U.adminUserDeactivate, { id: deactivating.id }, { silent: true });
          notify('success', t('users.deactivated', { name: deactivating.username }));
          reload();
        }}
      >
        <p>{t('users.deactivateConfirm', { name: deactivating?.username ?? '' })}</p>
      </FormDialog>
      <PasswordDialog user={passwordOf} onClose={() => setPasswordOf(null)} />
      <MembershipsDialog
        user={membersOf}
        onClose={() => setMembersOf(null)}
        onChanged={reload}
        access={access}
        {...pickers}
      />
    </section>
  );
}
