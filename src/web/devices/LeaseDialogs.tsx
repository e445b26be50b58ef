// The rename, renew and unlock dialogs of a held board. They open from the store (`leases.dialog`),
// so a button, a keyboard shortcut and a palette command all open the same dialog. The renew and
// unlock dialogs are in LeaseDialogForms.tsx, fetched when the host first renders (not with the
// first load), so they are there before anyone opens one.
import { lazy, Suspense, useEffect, useState } from 'react';
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { leaseOf, leases, messageOf, renameLease } from '#web/boards/store.ts';
import { notify } from '#web/state/notices.ts';

const loadForms = () => import('./LeaseDialogForms.tsx');
const RenewDialog = lazy(() => loadForms().then((m) => ({ default: m.RenewDialog })));
const UnlockDialog = lazy(() => loadForms().then((m) => ({ default: m.UnlockDialog })));

export function closeLeaseDialog(): void {
  leases.dialog = null;
}

export function LeaseDialogs({ onUnlocked }: { onUnlocked?: (deviceId: string) => void }) {
  const snap = useSnapshot(leases);
  useEffect(() => {
    void loadForms().catch(() => {});
  }, []);
  const dialog = snap.dialog;
  const lease = dialog ? leaseOf(dialog.deviceId) : undefined;
  if (!dialog || !lease) return null;
  return (
    <Suspense fallback={null}>
      {dialog.kind === 'renew' ? (
        <RenewDialog
          key={`n-${lease.deviceId}`}
          deviceId={lease.deviceId}
          name={lease.serverName}
          endsAt={lease.endsAt}
        />
      ) : (
        <UnlockDialog
          key={`u-${lease.deviceId}`}
          deviceId={lease.deviceId}
          name={lease.serverName}
          onUnlocked={onUnlocked}
        />
      )}
    </Suspense>
  );
}

/**
 * A board's name that turns into an input in place (F2, the rename button or the palette): Enter
 * saves, Escape cancels. Renaming is tracked in the store (`leases.renaming`) so only one is open.
 */
export function InlineName({
  deviceId,
  name,
  className,
}: {
  deviceId: string;
  name: string;
  className?: string;
}) {
  const { t } = useTranslation('devices');
  const snap = useSnapshot(leases);
  const editing = snap.renaming === deviceId;
  const [value, setValue] = useState(name);
  const [error, setError] = useState('');
  const saving = snap.busy[deviceId] === 'rename';
  useEffect(() => {
    if (editing) {
      setValue(name);
      setError('');
    }
  }, [editing, name]);
  if (!editing) {
    return (
      <span className={className} data-testid="board-name">
        {name}
      </span>
    );
  }
  const stop = () => {
    leases.renaming = null;
  };
  const save = async () => {
    const next = value.trim();
    if (!next) return setError(t('rename.empty'));
    if (next === name) return stop();
    setError('');
    try {
      const updated = await renameLease(deviceId, next);
      notify('success', t('rename.done', { name: updated.serverName }));
      stop();
    } catch (err) {
      setError(t('rename.failed', { error: messageOf(err) }));
    }
  };
  return (
    <span className="flex min-w-0 flex-1 flex-col gap-1">
      <input
        autoFocus
        aria-label={t('rename.label')}
        data-testid="rename-input"
        maxLength={64}
        disabled={saving}
        value={value}
        onChange={(e) => setValue(e.target.value)}
        onFocus={(e) => e.currentTarget.select()}
        onClick={(e) => e.stopPropagation()}
        onKeyDown={(e) => {
          e.stopPropagation();
          if (e.key === 'Enter') {
            e.preventDefault();
            void save();
          } else if (e.key === 'Escape') {
            e.preventDefault();
            stop();
          }
        }}
        onBlur={() => {
          if (!saving && value.trim() === name) stop();
        }}
        className="h-7 w-full max-w-xs rounded border border-zinc-300 bg-white px-2 text-[13px] font-medium text-zinc-900 focus:border-zinc-500 focus:outline-none focus:ring-2 focus:ring-zinc-900/10 dark:border-zinc-600 dark:bg-zinc-900 dark:text-zinc-100"
      />
      <span
        className={error ? 'text-xs text-red-600 dark:text-red-400' : 'text-[11px] text-zinc-500'}
        role={error ? 'alert' : undefined}
      >
        {error || t('rename.inlineHint')}
      </span>
    </span>
  );
}
