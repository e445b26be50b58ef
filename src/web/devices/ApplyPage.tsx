// /riscvhouse: apply for a board. The user accepts the terms, picks the Apply Time (48 hours, 7 days,
// 1 month), optionally narrows the board by attributes from the catalogue, names it and gets a free
// matching board at once — or learns that none is free and when the next matching one frees, and may
// then wait in line (opt-in): the place, the estimate and Leave the line show here and on /mainboard.
import { type FormEvent, useEffect, useId, useMemo, useRef, useState } from 'react';
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { LEASE_DURATIONS, type LeaseDurationKey } from '#shared/constants.ts';
import { LeaseErrorKey } from '#shared/leases.ts';
import type { QueueEntryDto } from '#shared/queue.ts';
import {
  boards,
  dataOf,
  errorData,
  keyOf,
  leases,
  loadAttributes,
  loadCounts,
  loadLeases,
  messageOf,
  requestLease,
} from '#web/boards/store.ts';
import { attrLabel, attrValueText, dateTimeText, relativeText } from '#web/boards/time.ts';
import { registerCommands } from '#web/commands/registry.ts';
import { Alert, Button, Card, cx, Field, Input, Spinner } from '#web/components/ui.tsx';
import { joinAndTell, QUEUE_SECTION } from '#web/queue/commands.ts';
import { QueueEntryView } from '#web/queue/QueuePanel.tsx';
import { queue } from '#web/queue/state.ts';
import { useNavigate } from '#web/router/router.tsx';
import { notify } from '#web/state/notices.ts';
import { installDeviceCommands } from './commands.ts';
import { suggestName } from './names.ts';

type Outcome =
  | { kind: 'none' }
  | { kind: 'noneFree'; nextFreeAt: string | null; matching: number }
  | { kind: 'noMatch' }
  | { kind: 'failed'; error: string };

export default function ApplyPage() {
  const { t, i18n } = useTranslation('devices');
  const navigate = useNavigate();
  const bSnap = useSnapshot(boards);
  const lSnap = useSnapshot(leases);
  const ids = useId();
  const [agreed, setAgreed] = useState(false);
  const [duration, setDuration] = useState<LeaseDurationKey>('48h');
  const [filters, setFilters] = useState<Record<string, string>>({});
  const [name, setName] = useState('');
  const [nameTouched, setNameTouched] = useState(false);
  const [submitting, setSubmitting] = useState(false);
  const [outcome, setOutcome] = useState<Outcome>({ kind: 'none' });
  const [showErrors, setShowErrors] = useState(false);
  // Waiting in line after lease.none_free (opt-in): the entry joined from this page.
  const [queuedId, setQueuedId] = useState<string | null>(null);
  const [joining, setJoining] = useState(false);
  const [joined, setJoined] = useState<QueueEntryDto | null>(null);
  const qSnap = useSnapshot(queue);

  useEffect(() => {
    installDeviceCommands();
    void loadAttributes();
    void loadCounts();
    void loadLeases();
  }, []);

  const taken = useMemo(
    () => (dataOf(lSnap.mine as typeof leases.mine)?.items ?? []).map((l) => l.serverName),
    [lSnap.mine],
  );
  useEffect(() => {
    if (!nameTouched) setName(suggestName(taken));
  }, [taken, nameTouched]);

  const attributes = dataOf(bSnap.attributes as typeof boards.attributes);
  const freeNow = dataOf(bSnap.freeNow as typeof boards.freeNow);

  const waitInLine = async () => {
    if (joining || !name.trim()) return;
    setJoining(true);
    try {
      const entry = await joinAndTell({ durationKey: duration, filters, serverName: name });
      if (!entry) return;
      if (entry.lease) navigate('/mainboard');
      else {
        setJoined(entry);
        setQueuedId(entry.entryId);
      }
    } finally {
      setJoining(false);
    }
  };

  // The palette offers the same opt-in while the answer on screen is "none free".
  const offerQueue = outcome.kind === 'noneFree' && !queuedId;
  const waitRef = useRef(waitInLine);
  waitRef.current = waitInLine;
  useEffect(() => {
    if (!offerQueue) return;
    return registerCommands('queue-apply', [
      {
        id: 'queue.joinThis',
        titleKey: 'queue:palette.joinThis',
        section: QUEUE_SECTION,
        keywords: ['queue', 'wait', 'line', 'join'],
        icon: 'layers',
        run: () => waitRef.current(),
      },
    ]);
  }, [offerQueue]);

  const queuedList = dataOf(qSnap.list as typeof queue.list);
  const queuedEnded = queuedId ? queuedList?.recent.find((x) => x.entryId === queuedId) : undefined;
  // The store's copy moves live; the join answer stands in until the list has it.
  const queuedEntry = queuedId
    ? (queuedList?.items.find((x) => x.entryId === queuedId) ??
      (queuedEnded ? undefined : (joined ?? undefined)))
    : undefined;

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setShowErrors(true);
    if (!agreed || !name.trim()) return;
    setSubmitting(true);
    setOutcome({ kind: 'none' });
    setQueuedId(null);
    try {
      const lease = await requestLease({ durationKey: duration, filters, serverName: name });
      notify(
        'success',
        t('apply.success', { name: lease.serverName, date: dateTimeText(i18n.language, lease.endsAt) }),
      );
      void loadLeases();
      navigate('/mainboard');
    } catch (err) {
      const key = keyOf(err);
      if (key === LeaseErrorKey.noneFree) {
        const data = errorData(err);
        setOutcome({
          kind: 'noneFree',
          nextFreeAt: typeof data?.nextFreeAt === 'string' ? data.nextFreeAt : null,
          matching: typeof data?.matching === 'number' ? data.matching : 0,
        });
      } else if (key === LeaseErrorKey.noMatch) {
        setOutcome({ kind: 'noMatch' });
      } else {
        setOutcome({ kind: 'failed', error: messageOf(err) });
      }
      void loadCounts();
    } finally {
      setSubmitting(false);
    }
  };

  const attrEntries = attributes ? Object.entries(attributes).filter(([, values]) => values.length > 0) : [];

  return (
    <div className="mx-auto w-full max-w-5xl px-4 py-6 sm:px-6" data-testid="apply-page">
      <div className="mb-5">
        <h1 className="text-lg font-semibold tracking-tight text-zinc-900 dark:text-zinc-50">
          {t('apply.title')}
        </h1>
        <p className="mt-0.5 text-[13px] text-zinc-500 dark:text-zinc-400">{t('apply.subtitle')}</p>
      </div>
      <form onSubmit={submit} className="grid gap-5 lg:grid-cols-[1fr_1.1fr]" noValidate>
        <Card className="flex flex-col p-4">
          <h2 className="mb-2 text-[13px] font-semibold text-zinc-900 dark:text-zinc-100">
            {t('apply.termsTitle')}
          </h2>
          <ol
            className="max-h-64 flex-1 list-decimal lg:max-h-none space-y-2 overflow-y-auto rounded-md border border-zinc-100 bg-zinc-50/60 py-3 pr-3 pl-8 text-[13px] leading-relaxed text-zinc-600 dark:border-zinc-800 dark:bg-zinc-950/40 dark:text-zinc-400"
            data-testid="terms"
          >
            <li>{t('apply.terms1')}</li>
            <li>{t('apply.terms2')}</li>
            <li>{t('apply.terms3')}</li>
            <li>{t('apply.terms4')}</li>
          </ol>
          <label className="mt-3 flex cursor-pointer items-center gap-2 text-[13px] text-zinc-800 select-none dark:text-zinc-200">
            <input
              type="checkbox"
              checked={agreed}
              onChange={(e) => setAgreed(e.target.checked)}
              className="h-4 w-4 rounded border-zinc-300 accent-zinc-900 dark:accent-zinc-100"
              // The page opens on what the user acts on first (issue 38: it took 13 to 15 Tabs).
              // biome-ignore lint/a11y/noAutofocus: the page's first field, as a dialog's.
              autoFocus
              data-testid="agree"
            />
            <span>
              {t('apply.agree')} <span className="font-medium">{t('apply.agreeTerms')}</span>
            </span>
          </label>
          {showErrors && !agreed ? (
            <p className="mt-1 text-xs text-red-600 dark:text-red-400" role="alert">
              {t('apply.mustAgree')}
            </p>
          ) : null}
        </Card>

        <Card className="space-y-5 p-4">
          <fieldset>
            <legend className="mb-1.5 text-xs font-medium text-zinc-700 dark:text-zinc-300">
              {t('apply.applyTime')}
            </legend>
            <div
              className="grid grid-cols-3 gap-1 rounded-lg bg-zinc-100 p-1 dark:bg-zinc-800/70"
              role="radiogroup"
            >
              {LEASE_DURATIONS.map((d) => (
                <label
                  key={d.key}
                  className={cx(
                    'flex h-8 cursor-pointer items-center justify-center rounded-md text-[13px] font-medium transition-colors has-[:focus-visible]:ring-2 has-[:focus-visible]:ring-zinc-400',
                    duration === d.key
                      ? 'bg-white text-zinc-900 shadow-sm dark:bg-zinc-950 dark:text-zinc-50'
                      : 'text-zinc-500 hover:text-zinc-800 dark:text-zinc-400 dark:hover:text-zinc-200',
                  )}
                >
                  <input
                    type="radio"
                    name="duration"
                    value={d.key}
                    checked={duration === d.key}
                    onChange={() => setDuration(d.key)}
                    className="sr-only"
                    data-testid={`duration-${d.key}`}
                  />
                  {t(`duration.${d.key}`)}
                </label>
              ))}
            </div>
          </fieldset>

          <fieldset>
            <legend className="mb-1.5 flex w-full items-center justify-between text-xs font-medium text-zinc-700 dark:text-zinc-300">
              <span>{t('apply.boardAttributes')}</span>
              {freeNow !== undefined ? (
                <span
                  className={cx(
                    'font-normal',
                    freeNow === 0
                      ? 'text-amber-600 dark:text-amber-400'
                      : 'text-emerald-600 dark:text-emerald-400',
                  )}
                  data-testid="free-now"
                >
                  {t('apply.freeNow', { count: freeNow })}
                </span>
              ) : null}
            </legend>
            {bSnap.attributes.status === 'loading' && !attributes ? (
              <div className="flex items-center gap-2 py-2 text-[13px] text-zinc-500">
                <Spinner size={13} /> {t('common.loading')}
              </div>
            ) : bSnap.attributes.status === 'failed' && !attributes ? (
              <Alert tone="danger">
                <span className="flex items-center justify-between gap-2">
                  {t('common.loadFailed', { error: bSnap.attributes.error })}
                  <Button size="sm" onClick={() => void loadAttributes()}>
                    {t('common.retry')}
                  </Button>
                </span>
              </Alert>
            ) : attrEntries.length === 0 ? (
              <p className="text-[13px] text-zinc-500">{t('apply.noAttributes')}</p>
            ) : (
              <div className="grid grid-cols-2 gap-3">
                {attrEntries.map(([key, values]) => (
                  <div key={key} className="space-y-1">
                    <label
                      htmlFor={`${ids}-${key}`}
                      className="block text-[11px] font-medium text-zinc-500 dark:text-zinc-400"
                    >
                      {attrLabel(t, key)}
                    </label>
                    <select
                      id={`${ids}-${key}`}
                      data-testid={`attr-${key}`}
                      value={filters[key] ?? ''}
                      onChange={(e) => setFilters((f) => ({ ...f, [key]: e.target.value }))}
                      className="h-8 w-full rounded-md border border-zinc-200 bg-white px-2 text-[13px] text-zinc-900 focus:border-zinc-400 focus:outline-none focus:ring-2 focus:ring-zinc-900/10 dark:border-zinc-700 dark:bg-zinc-900 dark:text-zinc-100"
                    >
                      <option value="">{t('common.any')}</option>
                      {values.map((v) => (
                        <option key={v} value={v}>
                          {attrValueText(t, key, v)}
                        </option>
                      ))}
                    </select>
                  </div>
                ))}
              </div>
            )}
            <p className="mt-1.5 text-xs text-zinc-500 dark:text-zinc-400">{t('apply.attributesHint')}</p>
          </fieldset>

          <Field label={t('apply.boardName')} htmlFor={`${ids}-name`} hint={t('apply.boardNameHint')}>
            <Input
              id={`${ids}-name`}
              data-testid="board-name-input"
              maxLength={64}
              placeholder={t('apply.boardNamePlaceholder')}
              value={name}
              onChange={(e) => {
                setNameTouched(true);
                setName(e.target.value);
              }}
            />
          </Field>
          {showErrors && !name.trim() ? (
            <p className="-mt-3 text-xs text-red-600 dark:text-red-400" role="alert">
              {t('apply.mustName')}
            </p>
          ) : null}

          {queuedId ? (
            <Alert tone={queuedEnded?.state === 'granted' ? 'success' : 'info'} role="status">
              <div data-testid="queued" tabIndex={-1}>
                {queuedEntry ? (
                  <>
                    <div className="mb-1 font-medium">{t('queue:waitingTitle')}</div>
                    <QueueEntryView entry={queuedEntry as QueueEntryDto} autoFocus />
                  </>
                ) : queuedEnded ? (
                  <div className="font-medium">
                    {t(`queue:state.${queuedEnded.state}`, { name: queuedEnded.serverName })}
                  </div>
                ) : null}
                <div className="mt-2">
                  <Button
                    size="sm"
                    variant="ghost"
                    icon="arrowRight"
                    onClick={() => navigate('/mainboard')}
                    data-testid="queued-mainboard"
                  >
                    {t('queue:goMainboard')}
                  </Button>
                </div>
              </div>
            </Alert>
          ) : outcome.kind === 'noneFree' ? (
            <Alert tone="warning" role="alert">
              <div data-testid="none-free">
                <div className="font-medium">{t('apply.noneFreeTitle')}</div>
                <div className="mt-0.5">
                  {outcome.nextFreeAt
                    ? t('apply.noneFreeAt', {
                        count: outcome.matching,
                        date: dateTimeText(i18n.language, outcome.nextFreeAt),
                        relative: relativeText(i18n.language, outcome.nextFreeAt),
                      })
                    : t('apply.noneFreeUnknown', { count: outcome.matching })}
                </div>
                <div className="mt-2 flex flex-wrap items-center gap-2">
                  <Button
                    size="sm"
                    variant="primary"
                    icon="layers"
                    loading={joining}
                    onClick={() => void waitInLine()}
                    data-testid="join-queue"
                  >
                    {t('queue:join')}
                  </Button>
                  <span className="text-xs opacity-80">{t('queue:joinHint')}</span>
                </div>
              </div>
            </Alert>
          ) : outcome.kind === 'noMatch' ? (
            <Alert tone="warning" role="alert">
              {t('apply.noMatch')}
            </Alert>
          ) : outcome.kind === 'failed' ? (
            <Alert tone="danger">{t('apply.failed', { error: outcome.error })}</Alert>
          ) : null}

          <div className="flex items-center justify-between gap-3 border-t border-zinc-100 pt-4 dark:border-zinc-800">
            <Button variant="ghost" icon="arrowLeft" onClick={() => navigate('/mainboard')}>
              {t('apply.back')}
            </Button>
            <Button
              type="submit"
              variant="primary"
              icon="arrowRight"
              loading={submitting}
              data-testid="get-started"
            >
              {t('apply.getStarted')}
            </Button>
          </div>
        </Card>
      </form>
    </div>
  );
}
