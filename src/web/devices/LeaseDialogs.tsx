// The rename, renew and unlock dialogs of a held board. They open from the store (`leases.dialog`),
// so a button, a keyboard shortcut and a palette command all open the same dialog.
import { type FormEvent, useEffect, useMemo, useState } from 'react';
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { LEASE_DURATIONS, LONGEST_LEASE_MS } from '#shared/constants.ts';
import {
  latestRenewal,
  leaseOf,
  leases,
  messageOf,
  renameLease,
  renewalPresets,
  renewLease,
  unlockLease,
} from '#web/boards/store.ts';
import { dateTimeText, fromLocalInput, toLocalInput } from '#web/boards/time.ts';
import { Modal } from '#web/components/Modal.tsx';
import { Alert, Button, Field, Input } from '#web/components/ui.tsx';
import { recordRenewal } from '#web/sequences/state.ts';
import { notify } from '#web/state/notices.ts';

export function closeLeaseDialog(): void {
  leases.dialog = null;
}

export function LeaseDialogs({ onUnlocked }: { onUnlocked?: (deviceId: string) => void }) {
  const snap = useSnapshot(leases);
  const dialog = snap.dialog;
  const lease = dialog ? leaseOf(dialog.deviceId) : undefined;
  if (!dialog || !lease) return null;
  if (dialog.kind === 'renew')
    return (
      <RenewDialog
        key={`n-${lease.deviceId}`}
        deviceId={lease.deviceId}
        name={lease.serverName}
        endsAt={lease.endsAt}
      />
    );
  return (
    <UnlockDialog
      key={`u-${lease.deviceId}`}
      deviceId={lease.deviceId}
      name={lease.serverName}
      onUnlocked={onUnlocked}
    />
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

function RenewDialog({ deviceId, name, endsAt }: { deviceId: string; name: string; endsAt: string }) {
  const { t, i18n } = useTranslation('devices');
  const currentEnd = useMemo(() => new Date(endsAt), [endsAt]);
  const [latest, setLatest] = useState(() => new Date(latestRenewal()));
  // The limit moves with the clock; refresh it so a dialog left open does not offer a stale bound.
  useEffect(() => {
    const id = window.setInterval(() => setLatest(new Date(latestRenewal())), 30_000);
    return () => window.clearInterval(id);
  }, []);
  const presets = renewalPresets(currentEnd.getTime(), latest.getTime()).map((p) => ({
    key: p.key,
    date: new Date(p.ms),
  }));
  const firstChoice = presets.find((p) => p.date.getTime() > currentEnd.getTime())?.date ?? latest;
  const [value, setValue] = useState(() => toLocalInput(firstChoice));
  const [error, setError] = useState('');
  const [saving, setSaving] = useState(false);
  const canExtend = latest.getTime() - currentEnd.getTime() > 60_000;

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const chosen = fromLocalInput(value);
    if (!chosen || chosen.getTime() <= currentEnd.getTime()) return setError(t('renew.notLater'));
    // The input has minute precision; a choice within the minute of the limit means the limit itself.
    const date =
      chosen.getTime() > latest.getTime()
        ? chosen.getTime() - latest.getTime() < 60_000
          ? latest
          : null
        : chosen;
    if (!date) return setError(t('renew.tooLate', { date: dateTimeText(i18n.language, latest) }));
    setSaving(true);
    setError('');
    try {
      const updated = await renewLease(deviceId, date);
      recordRenewal(new Date(updated.endsAt));
      notify(
        'success',
        t('renew.done', { name: updated.serverName, date: dateTimeText(i18n.language, updated.endsAt) }),
      );
      closeLeaseDialog();
    } catch (err) {
      setError(t('renew.failed', { error: messageOf(err) }));
    } finally {
      setSaving(false);
    }
  };

  return (
    <Modal
      open
      onClose={closeLeaseDialog}
      title={t('renew.title', { name })}
      closeLabel={t('common.close')}
      testId="renew-dialog"
    >
      <form onSubmit={submit} className="space-y-3">
        <p className="text-zinc-500 dark:text-zinc-400">
          {t('renew.current', { date: dateTimeText(i18n.language, currentEnd) })}
        </p>
        <fieldset className="flex flex-wrap gap-1.5" aria-label={t('renew.label')}>
          {presets.map((p) => (
            <Button
              key={p.key}
              size="sm"
              disabled={p.date.getTime() <= currentEnd.getTime()}
              onClick={() => setValue(toLocalInput(p.date))}
            >
              {t('renew.extendBy', { duration: t(`duration.${p.key}`) })}
            </Button>
          ))}
          <Button size="sm" variant="ghost" onClick={() => setValue(toLocalInput(latest))}>
            {t('renew.latest')}
          </Button>
        </fieldset>
        <Field
          label={t('renew.label')}
          htmlFor="renew-input"
          hint={t('renew.hint', {
            longest: t(`duration.${LEASE_DURATIONS.find((d) => d.ms === LONGEST_LEASE_MS)?.key ?? '1m'}`),
            latest: dateTimeText(i18n.language, latest),
          })}
        >
          <Input
            id="renew-input"
            type="datetime-local"
            min={toLocalInput(currentEnd)}
            max={toLocalInput(latest)}
            value={value}
            onChange={(e) => setValue(e.target.value)}
          />
        </Field>
        {error ? <Alert tone="danger">{error}</Alert> : null}
        <div className="flex justify-end gap-2 pt-1">
          <Button onClick={closeLeaseDialog}>{t('common.cancel')}</Button>
          <Button type="submit" variant="primary" loading={saving} disabled={!canExtend}>
            {t('renew.submit')}
          </Button>
        </div>
      </form>
    </Modal>
  );
}

function UnlockDialog({
  deviceId,
  name,
  onUnlocked,
}: {
  deviceId: string;
  name: string;
  onUnlocked?: (deviceId: string) => void;
}) {
  const { t } = useTranslation('devices');
  const [error, setError] = useState('');
  const [saving, setSaving] = useState(false);
  const confirm = async () => {
    setSaving(true);
    setError('');
    try {
      await unlockLease(deviceId);
      notify('success', t('unlock.done', { name }));
      closeLeaseDialog();
      onUnlocked?.(deviceId);
    } catch (err) {
      setError(t('unlock.failed', { error: messageOf(err) }));
    } finally {
      setSaving(false);
    }
  };
  return (
    <Modal
      open
      onClose={closeLeaseDialog}
      title={t('unlock.title', { name })}
      closeLabel={t('common.close')}
      role="alertdialog"
      testId="unlock-dialog"
      footer={
        <>
          <Button onClick={closeLeaseDialog} autoFocus>
            {t('common.cancel')}
          </Button>
          <Button variant="danger" loading={saving} onClick={confirm}>
            {t('unlock.confirm')}
          </Button>
        </>
      }
    >
      <p>{t('unlock.body')}</p>
      {error ? (
        <Alert tone="danger" className="mt-3">
          {error}
        </Alert>
      ) : null}
    </Modal>
  );
}
