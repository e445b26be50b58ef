// What sequences show, hosted once at the root (loaded the first time a recording starts or a dialog
// opens): the recording badge (bottom left, red, with the step count, Save… and Discard), the Sequences
// dialog (the list, a file editor that names a problem's line, run on boards, recent runs) and a run's
// progress (every board's steps, live, with each command's output).
import { useEffect, useState } from 'react';
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import type { RunStepDto, SequenceDto, SequenceRunDto } from '#shared/sequences.ts';
import { call } from '#web/api/http.ts';
import { dataOf, leases, messageOf } from '#web/boards/store.ts';
import { dateTimeText } from '#web/boards/time.ts';
import { openPalette, paletteState } from '#web/commands/registry.ts';
import { Icon } from '#web/components/icons.tsx';
import { Modal } from '#web/components/Modal.tsx';
import { usePulse } from '#web/components/pulse.ts';
import { Alert, Button, cx, Input, Spinner } from '#web/components/ui.tsx';
import { notify } from '#web/state/notices.ts';
import { SequenceCalls } from './commands.ts';
import { closeSequenceDialog, openRun, openSequences, seqUi, stopRecording } from './state.ts';

const RUN_POLL_MS = 700;

const STEP_TONE: Record<RunStepDto['state'], string> = {
  pending: 'bg-zinc-200 text-zinc-500 dark:bg-zinc-800 dark:text-zinc-400',
  running: 'bg-sky-500 text-white pulse-step',
  success: 'bg-emerald-500 text-white',
  failure: 'bg-red-500 text-white',
  skipped: 'bg-zinc-300 text-zinc-600 dark:bg-zinc-700 dark:text-zinc-300',
  cancelled: 'bg-amber-400 text-zinc-900',
};
const STEP_MARK: Record<RunStepDto['state'], string> = {
  pending: '·',
  running: '▶',
  success: '✓',
  failure: '✗',
  skipped: '–',
  cancelled: '⊘',
};
const RUN_TONE: Record<SequenceRunDto['state'], string> = {
  running: 'text-sky-600 dark:text-sky-400',
  success: 'text-emerald-600 dark:text-emerald-400',
  failure: 'text-red-600 dark:text-red-400',
  cancelled: 'text-amber-600 dark:text-amber-400',
};

function RecordingBadge() {
  const { t } = useTranslation('sequences');
  const { recording } = useSnapshot(seqUi);
  usePulse(Boolean(recording));
  if (!recording) return null;
  return (
    <div
      className="fixed bottom-4 left-4 z-40 flex items-center gap-2 rounded-full border border-red-300 bg-white py-1 pr-1 pl-3 text-[13px] shadow-lg dark:border-red-800 dark:bg-zinc-900"
      data-testid="recording-badge"
      role="status"
    >
      <span className="pulse-step h-2.5 w-2.5 rounded-full bg-red-500" aria-hidden="true" />
      <span className="font-medium text-red-700 dark:text-red-300">{t('recording.badge')}</span>
      <span className="text-zinc-500 dark:text-zinc-400" data-testid="recording-count">
        {t('recording.steps', { count: recording.length })}
      </span>
      <Button
        size="sm"
        variant="ghost"
        onClick={() => {
          // The palette opens on its "Stop recording and save…" row, which asks for the name.
          paletteState.pending = t('palette.save').replace('…', '');
          openPalette();
        }}
        data-testid="recording-save"
      >
        {t('recording.stop')}
      </Button>
      <Button size="sm" variant="ghost" onClick={stopRecording}>
        {t('recording.discard')}
      </Button>
    </div>
  );
}

function StepChips({ steps }: { steps: readonly RunStepDto[] }) {
  const { t } = useTranslation('sequences');
  usePulse(steps.some((s) => s.state === 'running'));
  return (
    <div className="flex flex-wrap gap-1">
      {steps.map((s, i) => (
        <span
          // biome-ignore lint/suspicious/noArrayIndexKey: steps are positional and never reorder
          key={i}
          title={`${s.label} — ${t(`run.step.${s.state}`)}${s.detail ? ` (${s.detail})` : ''}`}
          className={cx(
            'inline-flex h-5 min-w-5 items-center justify-center rounded px-1 text-[11px] font-semibold',
            STEP_TONE[s.state],
          )}
          data-step-state={s.state}
        >
          {STEP_MARK[s.state]}
        </span>
      ))}
    </div>
  );
}

function RunView({ runId }: { runId: string }) {
  const { t, i18n } = useTranslation('sequences');
  const [run, setRun] = useState<SequenceRunDto | null>(null);
  const [error, setError] = useState('');
  const [open, setOpen] = useState<string | null>(null);
  const [cancelling, setCancelling] = useState(false);
  useEffect(() => {
    let stop = false;
    let timer = 0;
    const load = async () => {
      try {
        const r = await call(SequenceCalls.fetchSequenceRun, { runId }, { silent: true });
        if (stop) return;
        setRun(r);
        setError('');
        if (r.state === 'running') timer = window.setTimeout(load, RUN_POLL_MS);
      } catch (err) {
        if (stop) return;
        setError(messageOf(err));
        timer = window.setTimeout(load, RUN_POLL_MS * 3);
      }
    };
    void load();
    return () => {
      stop = true;
      window.clearTimeout(timer);
    };
  }, [runId]);
  const running = run?.state === 'running';
  return (
    <Modal
      open
      onClose={closeSequenceDialog}
      title={t('run.title', { name: run?.sequenceName ?? '…' })}
      width="max-w-3xl"
      closeLabel={t('run.close')}
      testId="sequence-run"
      footer={
        <>
          <Button variant="ghost" icon="book" onClick={openSequences}>
            {t('list.title')}
          </Button>
          {running ? (
            <Button
              variant="danger"
              loading={cancelling}
              onClick={async () => {
                setCancelling(true);
                try {
                  setRun(await call(SequenceCalls.cancelSequenceRun, { runId }, { silent: true }));
                } catch (err) {
                  notify('error', messageOf(err));
                } finally {
                  setCancelling(false);
                }
              }}
              data-testid="sequence-run-cancel"
            >
              {t('run.cancel')}
            </Button>
          ) : null}
          <Button autoFocus onClick={closeSequenceDialog} data-testid="sequence-run-close">
            {running ? t('run.hide') : t('run.close')}
          </Button>
        </>
      }
    >
      {error ? <Alert tone="danger">{error}</Alert> : null}
      {!run ? (
        <div className="flex justify-center py-8">
          <Spinner />
        </div>
      ) : (
        <div className="space-y-3">
          <div className="flex items-center justify-between text-[12px] text-zinc-500 dark:text-zinc-400">
            <span>
              {t('run.by', { name: run.userName, time: dateTimeText(i18n.language, run.startedAt) })}
            </span>
            <span
              className={cx('font-semibold', RUN_TONE[run.state])}
              data-testid="sequence-run-state"
              data-state={run.state}
            >
              {running ? <Spinner size={12} className="mr-1 inline" /> : null}
              {t(`run.state.${run.state}`)}
            </span>
          </div>
          <div className="max-h-[55vh] divide-y divide-zinc-100 overflow-y-auto rounded-md border border-zinc-200 dark:divide-zinc-800 dark:border-zinc-800">
            {run.boards.map((b) => {
              const now =
                b.steps.find((s) => s.state === 'running') ?? b.steps.findLast((s) => s.state !== 'pending');
              const expanded = open === b.deviceId;
              return (
                <div
                  key={b.deviceId}
                  data-testid="sequence-run-board"
                  data-board={b.serverName}
                  data-state={b.state}
                >
                  <button
                    type="button"
                    className="flex w-full items-center gap-3 px-3 py-2 text-left hover:bg-zinc-50 focus-ring dark:hover:bg-zinc-800/50"
                    onClick={() => setOpen(expanded ? null : b.deviceId)}
                    aria-expanded={expanded}
                  >
                    <Icon
                      name={expanded ? 'chevronDown' : 'chevronRight'}
                      size={14}
                      className="text-zinc-400"
                    />
                    <span className="w-32 truncate font-medium text-zinc-900 dark:text-zinc-100">
                      {b.serverName}
                    </span>
                    <StepChips steps={b.steps} />
                    <span className="min-w-0 flex-1 truncate text-[12px] text-zinc-500 dark:text-zinc-400">
                      {now ? `${now.label}${now.detail ? ` — ${now.detail}` : ''}` : ''}
                    </span>
                    <span className={cx('text-[12px] font-semibold', RUN_TONE[b.state])}>
                      {t(`run.state.${b.state}`)}
                    </span>
                  </button>
                  {expanded ? (
                    <ol className="space-y-2 bg-zinc-50/60 px-9 py-2 dark:bg-zinc-950/40">
                      {b.steps.map((s, i) => (
                        // biome-ignore lint/suspicious/noArrayIndexKey: steps are positional and never reorder
                        <li key={i} data-testid="sequence-run-step" data-state={s.state}>
                          <div className="flex items-center gap-2 text-[13px]">
                            <span
                              className={cx(
                                'inline-flex h-5 w-5 items-center justify-center rounded text-[11px]',
                                STEP_TONE[s.state],
                              )}
                            >
                              {STEP_MARK[s.state]}
                            </span>
                            <code className="min-w-0 flex-1 truncate">{s.label}</code>
                            <span className="text-[12px] text-zinc-500">
                              {t(`run.step.${s.state}`)}
                              {s.detail ? ` · ${s.detail}` : ''}
                            </span>
                          </div>
                          {s.kind === 'exec' && s.state !== 'pending' ? (
                            <pre
                              className="mt-1 max-h-48 overflow-auto rounded bg-zinc-900 px-2 py-1.5 font-mono text-[12px] whitespace-pre-wrap text-zinc-100"
                              data-testid="sequence-step-output"
                            >
                              {s.output || t('run.noOutput')}
                            </pre>
                          ) : null}
                        </li>
                      ))}
                    </ol>
                  ) : null}
                </div>
              );
            })}
          </div>
        </div>
      )}
    </Modal>
  );
}

const NEW_SOURCE = 'description: \non-failure: stop\nsteps:\n  - exec: uname -a\n';

function SequencesDialog() {
  const { t, i18n } = useTranslation('sequences');
  const [items, setItems] = useState<SequenceDto[] | null>(null);
  const [runs, setRuns] = useState<SequenceRunDto[]>([]);
  const [chosen, setChosen] = useState<string | null>(null);
  const [name, setName] = useState('');
  const [source, setSource] = useState(NEW_SOURCE);
  const [problem, setProblem] = useState('');
  const [saving, setSaving] = useState(false);
  const [targets, setTargets] = useState<string[]>([]);
  const held = dataOf(useSnapshot(leases).mine)?.items ?? [];
  const load = async () => {
    const [list, recent] = await Promise.all([
      call(SequenceCalls.fetchSequences, {}, { silent: true }),
      call(SequenceCalls.fetchSequenceRuns, {}, { silent: true }),
    ]);
    setItems(list.items);
    setRuns(recent.items);
    return list.items;
  };
  // biome-ignore lint/correctness/useExhaustiveDependencies: loads once when the dialog opens; saves reload it
  useEffect(() => {
    load().catch((err: unknown) => setProblem(messageOf(err)));
  }, []);
  const current = items?.find((s) => s.sequenceId === chosen) ?? null;
  const pick = (s: SequenceDto | null) => {
    setChosen(s?.sequenceId ?? null);
    setName(s?.name ?? '');
    setSource(s?.source ?? NEW_SOURCE);
    setProblem('');
  };
  const save = async () => {
    setSaving(true);
    setProblem('');
    try {
      const saved = await call(
        SequenceCalls.saveSequence,
        { name, source, groupName: current?.groupName ?? null },
        { silent: true },
      );
      notify('success', t('list.saved', { name: saved.name }));
      await load();
      setChosen(saved.sequenceId);
    } catch (err) {
      const data = (err as { data?: { line?: number; column?: number; message?: string } }).data;
      setProblem(
        data?.line
          ? t('list.problem', { line: data.line, column: data.column, message: data.message })
          : messageOf(err),
      );
    } finally {
      setSaving(false);
    }
  };
  const runIt = async () => {
    if (!current) return;
    if (!targets.length) {
      setProblem(t('list.pickBoards'));
      return;
    }
    try {
      const run = await call(
        SequenceCalls.runSequence,
        { sequenceId: current.sequenceId, targets, params: {} },
        { silent: true },
      );
      openRun(run.runId);
    } catch (err) {
      setProblem(messageOf(err));
    }
  };
  const remove = async () => {
    if (!current || !window.confirm(t('list.deleteConfirm', { name: current.name }))) return;
    try {
      await call(SequenceCalls.deleteSequence, { sequenceId: current.sequenceId }, { silent: true });
      pick(null);
      await load();
    } catch (err) {
      setProblem(messageOf(err));
    }
  };
  const editable = !current || current.mine;
  return (
    <Modal
      open
      onClose={closeSequenceDialog}
      title={t('list.title')}
      width="max-w-4xl"
      closeLabel={t('list.close')}
      testId="sequences-dialog"
    >
      <div className="grid min-h-[420px] grid-cols-[220px_1fr] gap-4">
        <div className="flex flex-col gap-1 border-r border-zinc-100 pr-3 dark:border-zinc-800">
          <Button
            size="sm"
            icon="sparkle"
            variant={chosen ? 'ghost' : 'secondary'}
            onClick={() => pick(null)}
          >
            {t('list.new')}
          </Button>
          {items === null ? <Spinner className="m-4" /> : null}
          {items?.length === 0 ? (
            <p className="px-1 py-2 text-[12px] text-zinc-500">{t('list.empty')}</p>
          ) : null}
          <ul className="flex-1 space-y-0.5 overflow-y-auto" data-testid="sequences-list">
            {items?.map((s) => (
              <li key={s.sequenceId}>
                <button
                  type="button"
                  onClick={() => pick(s)}
                  className={cx(
                    'w-full rounded-md px-2 py-1.5 text-left text-[13px] focus-ring',
                    s.sequenceId === chosen
                      ? 'bg-zinc-100 dark:bg-zinc-800'
                      : 'hover:bg-zinc-50 dark:hover:bg-zinc-800/50',
                  )}
                  data-sequence={s.name}
                >
                  <div className="truncate font-medium text-zinc-900 dark:text-zinc-100">{s.name}</div>
                  <div className="truncate text-[11px] text-zinc-500">
                    {t('list.steps', { count: s.steps.length })} ·{' '}
                    {s.mine ? t('list.mine') : t('list.by', { name: s.ownerName })}
                    {s.groupName ? ` · ${t('list.sharedWith', { group: s.groupName })}` : ''}
                  </div>
                </button>
              </li>
            ))}
          </ul>
          <div className="border-t border-zinc-100 pt-2 dark:border-zinc-800">
            <div className="mb-1 text-[11px] font-medium tracking-wide text-zinc-400 uppercase">
              {t('list.recentRuns')}
            </div>
            {runs.length === 0 ? <p className="text-[12px] text-zinc-500">{t('list.noRuns')}</p> : null}
            <ul className="max-h-40 space-y-0.5 overflow-y-auto">
              {runs.slice(0, 8).map((r) => (
                <li key={r.runId}>
                  <button
                    type="button"
                    onClick={() => openRun(r.runId)}
                    className="flex w-full items-center justify-between gap-2 rounded px-1.5 py-1 text-left text-[12px] hover:bg-zinc-50 focus-ring dark:hover:bg-zinc-800/50"
                  >
                    <span className="truncate">{r.sequenceName}</span>
                    <span className={cx('shrink-0', RUN_TONE[r.state])}>{t(`run.state.${r.state}`)}</span>
                  </button>
                  <div className="px-1.5 text-[10px] text-zinc-400">
                    {dateTimeText(i18n.language, r.startedAt)}
                  </div>
                </li>
              ))}
            </ul>
          </div>
        </div>
        <div className="flex min-w-0 flex-col gap-3">
          <label
            htmlFor="sequence-name"
            className="block text-[12px] font-medium text-zinc-600 dark:text-zinc-300"
          >
            {t('list.name')}
            <Input
              id="sequence-name"
              value={name}
              onChange={(e) => setName(e.target.value)}
              disabled={!editable}
              data-testid="sequence-name"
              className="mt-1"
            />
          </label>
          <label className="flex flex-1 flex-col text-[12px] font-medium text-zinc-600 dark:text-zinc-300">
            {t('list.source')}
            <textarea
              value={source}
              onChange={(e) => setSource(e.target.value)}
              readOnly={!editable}
              spellCheck={false}
              data-testid="sequence-source"
              className="mt-1 min-h-[220px] flex-1 rounded-md border border-zinc-300 bg-white p-2 font-mono text-[12px] text-zinc-900 focus-ring dark:border-zinc-700 dark:bg-zinc-950 dark:text-zinc-100"
            />
          </label>
          {problem ? (
            <Alert tone="danger" role="alert">
              <span data-testid="sequence-problem">{problem}</span>
            </Alert>
          ) : null}
          <div className="flex flex-wrap items-center gap-2">
            {editable ? (
              <Button
                variant="primary"
                icon="check"
                loading={saving}
                onClick={save}
                disabled={!name.trim()}
                data-testid="sequence-save"
              >
                {t('list.save')}
              </Button>
            ) : null}
            {current?.mine ? (
              <Button variant="ghost" icon="x" onClick={remove}>
                {t('list.delete')}
              </Button>
            ) : null}
          </div>
          {current ? (
            <fieldset className="rounded-md border border-zinc-200 p-2 dark:border-zinc-800">
              <legend className="px-1 text-[12px] font-medium text-zinc-600 dark:text-zinc-300">
                {t('list.boards')}
              </legend>
              <div className="flex flex-wrap gap-3">
                {held.map((l) => (
                  <label key={l.deviceId} className="flex items-center gap-1.5 text-[13px]">
                    <input
                      type="checkbox"
                      checked={targets.includes(l.deviceId)}
                      onChange={(e) =>
                        setTargets((ts) =>
                          e.target.checked ? [...ts, l.deviceId] : ts.filter((x) => x !== l.deviceId),
                        )
                      }
                    />
                    {l.serverName}
                  </label>
                ))}
                <Button size="sm" icon="arrowRight" onClick={runIt} data-testid="sequence-run-button">
                  {t('list.runOn')}
                </Button>
              </div>
            </fieldset>
          ) : null}
        </div>
      </div>
    </Modal>
  );
}

export default function SequenceHost() {
  const { dialog } = useSnapshot(seqUi);
  return (
    <>
      <RecordingBadge />
      {dialog?.kind === 'run' ? <RunView key={dialog.runId} runId={dialog.runId} /> : null}
      {dialog?.kind === 'list' ? <SequencesDialog /> : null}
    </>
  );
}
