// Building blocks of the administration sections: a toolbar (with the section's "add" button), a table
// with its row actions and pages, a select, a dialog holding one form (Enter submits, the first field
// takes the focus), and the membership rows that both the users' and the organisations' pages edit.
import { type FormEvent, type ReactNode, type SelectHTMLAttributes, useId, useState } from 'react';
import { useTranslation } from 'react-i18next';
import type { Membership } from '#shared/user.ts';
import { Loadable, SkeletonRows } from '#web/boards/Loadable.tsx';
import type { Req } from '#web/boards/store.ts';
import { CopyButton } from '#web/components/CopyButton.tsx';
import type { IconName } from '#web/components/icons.tsx';
import { Modal } from '#web/components/Modal.tsx';
import { Alert, Button, Card, cx, EmptyState, Field, IconButton } from '#web/components/ui.tsx';
import { call, U } from './api.ts';

export const selectClass =
  'h-8 max-w-56 rounded-md border border-zinc-200 bg-white px-2 text-[13px] text-zinc-800 focus:border-zinc-400 focus:outline-none focus:ring-2 focus:ring-zinc-900/10 dark:border-zinc-700 dark:bg-zinc-900 dark:text-zinc-100';

export function Select({ className, ...rest }: SelectHTMLAttributes<HTMLSelectElement>) {
  return <select className={cx(selectClass, className)} {...rest} />;
}

/** A section's "add" button: shown only when the user may add (`false` or `null` leaves it out). */
export interface AddAction {
  icon: IconName;
  label: string;
  testId: string;
  onClick: () => void;
}

export function Toolbar({
  children,
  onRefresh,
  add,
}: {
  children?: ReactNode;
  onRefresh?: () => void;
  add?: AddAction | false | null;
}) {
  const { t } = useTranslation('admin');
  return (
    <div className="mb-3 flex flex-wrap items-center gap-2">
      {children}
      {add ? (
        <Button variant="primary" icon={add.icon} onClick={add.onClick} data-testid={add.testId}>
          {add.label}
        </Button>
      ) : null}
      {onRefresh ? (
        <IconButton icon="refresh" label={t('common.refresh')} onClick={onRefresh} className="ml-auto" />
      ) : null}
    </div>
  );
}

/** A list in a card: loading, failure and emptiness drawn once for every section. */
export function DataTable<T>({
  req,
  onRetry,
  head,
  rows,
  empty,
  testId,
}: {
  req: Req<T[]>;
  onRetry: () => void;
  head: ReactNode[];
  rows: (items: T[]) => ReactNode;
  empty: { icon: IconName; title: string };
  testId: string;
}) {
  return (
    <Card className="overflow-x-auto">
      <Loadable req={req} onRetry={onRetry} skeleton={<SkeletonRows rows={4} />}>
        {(items, reloading) =>
          items.length === 0 ? (
            <div className="p-4">
              <EmptyState icon={empty.icon} title={empty.title} />
            </div>
          ) : (
            <table
              className={cx('w-full text-left text-[13px]', reloading && 'opacity-70')}
              data-testid={testId}
            >
              <thead className="border-b border-zinc-100 bg-zinc-50/60 text-[11px] tracking-wide text-zinc-500 uppercase dark:border-zinc-800 dark:bg-zinc-900/60">
                <tr>
                  {head.map((h, i) => (
                    // biome-ignore lint/suspicious/noArrayIndexKey: the columns are fixed.
                    <th key={i} className="px-4 py-2 font-medium whitespace-nowrap">
                      {h}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">{rows(items)}</tbody>
            </table>
          )
        }
      </Loadable>
    </Card>
  );
}

export const cell = 'px-4 py-2.5 align-top';

/** The last cell of a row: its buttons, on the right. */
export function RowActions({ children, wrap }: { children: ReactNode; wrap?: boolean }) {
  return (
    <td className={`${cell} text-right`}>
      <div className={cx('flex justify-end gap-1', wrap && 'flex-wrap')}>{children}</div>
    </td>
  );
}

/** Previous and next under a list of more than one page. */
export function Pager({
  page,
  pages,
  onPage,
}: {
  page: number;
  pages: number;
  onPage: (page: number) => void;
}) {
  const { t } = useTranslation('admin');
  if (pages <= 1) return null;
  return (
    <div className="mt-3 flex items-center justify-end gap-2 text-xs text-zinc-500">
      <Button size="sm" disabled={page <= 1} onClick={() => onPage(page - 1)}>
        {t('common.previous')}
      </Button>
      {t('common.pageOf', { page, pages })}
      <Button size="sm" disabled={page >= pages} onClick={() => onPage(page + 1)}>
        {t('common.next')}
      </Button>
    </div>
  );
}

/**
 * A dialog with one form. `submit` runs on Enter or the primary button; a failure stays in the dialog
 * (the service's words), a success closes it.
 */
export function FormDialog({
  open,
  onClose,
  title,
  submitLabel,
  submit,
  children,
  danger,
  testId,
}: {
  open: boolean;
  onClose: () => void;
  title: string;
  submitLabel: string;
  submit: () => Promise<unknown>;
  children: ReactNode;
  danger?: boolean;
  testId?: string;
}) {
  const { t } = useTranslation('admin');
  const id = useId();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    if (busy) return;
    setBusy(true);
    setError(null);
    submit().then(
      () => {
        setBusy(false);
        onClose();
      },
      (err: unknown) => {
        setBusy(false);
        setError(err instanceof Error ? err.message : String(err));
      },
    );
  };
  return (
    <Modal
      open={open}
      onClose={onClose}
      title={title}
      closeLabel={t('common.close')}
      testId={testId}
      footer={
        <>
          <Button onClick={onClose}>{t('common.cancel')}</Button>
          <Button type="submit" form={id} variant={danger ? 'danger' : 'primary'} loading={busy}>
            {submitLabel}
          </Button>
        </>
      }
    >
      <form id={id} onSubmit={onSubmit} className="space-y-3">
        {children}
        {error ? (
          <Alert tone="danger" role="alert">
            {error}
          </Alert>
        ) : null}
      </form>
    </Modal>
  );
}

/** A secret shown this once (a password, a host's credential): closed with Done, which takes the focus. */
export function ShownOnceDialog({
  open,
  onClose,
  title,
  width,
  testId,
  children,
}: {
  open: boolean;
  onClose: () => void;
  title: string;
  width?: string;
  testId?: string;
  children: ReactNode;
}) {
  const { t } = useTranslation('admin');
  return (
    <Modal
      open={open}
      onClose={onClose}
      width={width}
      title={title}
      closeLabel={t('common.close')}
      testId={testId}
      footer={
        <Button variant="primary" onClick={onClose} autoFocus>
          {t('common.done')}
        </Button>
      }
    >
      {children}
    </Modal>
  );
}

/** A value in monospace with its copy button. */
export function CopyableCode({
  text,
  testId,
  className,
  top,
}: {
  text: string;
  testId: string;
  className?: string;
  top?: boolean;
}) {
  return (
    <div className={cx('flex gap-2', top ? 'items-start' : 'items-center')}>
      <code
        className={cx('flex-1 rounded bg-zinc-100 px-2 py-1.5 font-mono dark:bg-zinc-800', className)}
        data-testid={testId}
      >
        {text}
      </code>
      <CopyButton text={text} />
    </div>
  );
}

/** `<option>`s for organisations or roles, by id, showing the name (and the id with `withId`). */
export function Options({
  items,
  withId,
}: {
  items: readonly { id: string; name: string }[];
  withId?: boolean;
}) {
  return (
    <>
      {items.map((o) => (
        <option key={o.id} value={o.id}>
          {withId ? `${o.name} (${o.id})` : o.name}
        </option>
      ))}
    </>
  );
}

/**
 * Changes to memberships made in place (a role picked, someone taken out, someone added): each runs, then
 * `after` (reload what is shown); a failure is kept to be shown under them.
 */
export function useMembershipRun(after: () => unknown) {
  const [error, setError] = useState<string | null>(null);
  const run = async (work: () => Promise<unknown>) => {
    setError(null);
    try {
      await work();
      await after();
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    }
  };
  return { run, error, setError };
}

export const setMembership = (m: Pick<Membership, 'userId' | 'orgId'>, roleId: string) =>
  call(U.adminMembershipSet, { userId: m.userId, orgId: m.orgId, roleId }, { silent: true });

export const removeMembership = (m: Pick<Membership, 'userId' | 'orgId'>) =>
  call(U.adminMembershipRemove, { userId: m.userId, orgId: m.orgId }, { silent: true });

/** A membership's role, changed in place (the options are the caller's). */
export function MembershipRole({
  m,
  editable,
  run,
  children,
}: {
  m: Membership;
  editable: boolean;
  run: (work: () => Promise<unknown>) => Promise<void>;
  children: ReactNode;
}) {
  const { t } = useTranslation('admin');
  return (
    <Select
      aria-label={t('users.role')}
      value={m.roleId}
      disabled={!editable}
      onChange={(e) => {
        const roleId = e.target.value;
        void run(() => setMembership(m, roleId));
      }}
    >
      {children}
    </Select>
  );
}

/** The form that adds a membership: who or where (`children`), the role to give, and its button. */
export function AddMembershipForm({
  className,
  onAdd,
  roleId,
  onRoleId,
  roles,
  icon,
  label,
  children,
}: {
  className?: string;
  onAdd: () => void;
  roleId: string;
  onRoleId: (roleId: string) => void;
  roles: readonly { id: string; name: string }[];
  icon: IconName;
  label: string;
  children: ReactNode;
}) {
  const { t } = useTranslation('admin');
  const id = useId();
  return (
    <form
      className={cx('flex flex-wrap items-end gap-2', className)}
      onSubmit={(e) => {
        e.preventDefault();
        onAdd();
      }}
    >
      {children}
      <Field label={t('users.role')} htmlFor={`${id}-r`}>
        <Select id={`${id}-r`} value={roleId} onChange={(e) => onRoleId(e.target.value)}>
          <Options items={roles} />
        </Select>
      </Field>
      <Button type="submit" icon={icon}>
        {label}
      </Button>
    </form>
  );
}

export function ErrorLine({ error }: { error: string | null }) {
  return error ? (
    <p className="mt-2 text-red-600" role="alert">
      {error}
    </p>
  ) : null;
}
