// The renew and unlock dialogs of a held board (src/web/devices/LeaseDialogs.tsx opens them). A chunk
// of their own, fetched when a page that hosts them first renders, so /mainboard's first load does
// not carry them.
import { type FormEvent, useEffect, useMemo, useState } from 'react';
import { useTranslation } from 'react-i18next';
import { LEASE_DURATIONS, LONGEST_LEASE_MS } from '#shared/constants.ts';
import { latestRenewal, messageOf, renewalPresets, renewLease, unlockLease } from '#web/boards/store.ts';
import { dateTimeText, fromLocalInput, toLocalInput } from '#web/boards/time.ts';
import { Modal } from '#web/components/Modal.tsx';
import { Alert, Button, Field, Input } from '#web/components/ui.tsx';
import { recordRenewal } from '#web/sequences/state.ts';
import { notify } from '#web/state/notices.ts';
import { closeLeaseDialog } from './LeaseDialogs.tsx';

export function RenewDialog({ deviceId, name, endsAt }: { deviceId: string; name: string; endsAt: string }) {
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

export function UnlockDialog({
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
