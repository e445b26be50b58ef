// /cloudsetting?tab=keys: the workbench keymap. Pick a preset, rebind an action by pressing the new
// keys, remove or reset a key. Every change is checked here first (reserved by the browser or the
// console, already taken, the first key of another's sequence) and refused with the reason; what
// passes is in force at once and saved on the service (web/keymap/sync.ts), which checks it again.
import { useEffect, useRef, useState } from 'react';
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import {
  bindProblem,
  chordProblem,
  formatStroke,
  KEYMAP_ACTIONS,
  KEYMAP_PRESETS,
  type KeymapAction,
  type KeymapPreset,
  type KeymapProblem,
  type KeymapSettings,
  keymapProblems,
  PRESET_BINDINGS,
  resolveBindings,
} from '#shared/keymap.ts';
import { ShortcutKeys } from '#web/components/ShortcutKeys.tsx';
import { Alert, Button, cx, IconButton } from '#web/components/ui.tsx';
import { loadKeymap, saveKeymap, startKeymapSync } from '#web/keymap/sync.ts';
import { chordKeys, keymapState } from '#web/state/keymap.ts';
import { strokeOf } from '#web/state/strokes.ts';
import { Section } from './Section.tsx';

type Status = { kind: 'idle' } | { kind: 'saving' } | { kind: 'saved' } | { kind: 'failed'; text: string };

/** A chord as the user reads it: Ctrl+Alt+N, Ctrl+B › C. */
export function chordText(chord: string): string {
  return chordKeys(chord).join('+').replaceAll('+›+', ' › ');
}

const MODIFIER_KEYS = new Set(['Control', 'Alt', 'Shift', 'Meta', 'AltGraph', 'OS']);

export function KeymapTab() {
  const { t } = useTranslation('settings');
  const { t: tw } = useTranslation('workbench');
  const km = useSnapshot(keymapState);
  const [recording, setRecording] = useState<KeymapAction | null>(null);
  const [problem, setProblem] = useState<{ action: KeymapAction; text: string } | null>(null);
  const [status, setStatus] = useState<Status>({ kind: 'idle' });

  useEffect(() => {
    startKeymapSync();
    void loadKeymap();
  }, []);

  const actionTitle = (a: KeymapAction) => tw(`palette.${a}`);
  const problemText = (p: KeymapProblem): string => {
    const chord = chordText(p.chord);
    if (p.kind === 'reserved')
      return t(p.by === 'browser' ? 'keymap.problem.reserved' : 'keymap.problem.reservedConsole', { chord });
    if (p.kind === 'duplicate') return t('keymap.problem.duplicate', { chord, other: actionTitle(p.other) });
    // The sequence is the other action's (the new key is its first key), or the new one's (its first
    // key is the other action's key).
    return keymapState.bindings[p.other].includes(p.sequence)
      ? t('keymap.problem.prefix', { chord, other: actionTitle(p.other) })
      : t('keymap.problem.duplicate', { chord, other: actionTitle(p.other) });
  };

  const save = async (next: KeymapSettings) => {
    setStatus({ kind: 'saving' });
    try {
      await saveKeymap(next);
      setStatus({ kind: 'saved' });
    } catch (err) {
      setStatus({ kind: 'failed', text: t('keymap.failed', { error: (err as Error).message }) });
    }
  };

  const current = (): KeymapSettings => ({
    preset: keymapState.settings.preset,
    overrides: { ...keymapState.settings.overrides },
  });

  const bind = (action: KeymapAction, chord: string | null) => {
    const next = current();
    const presetChords = PRESET_BINDINGS[next.preset][action];
    if (chord === null) next.overrides[action] = [];
    else if (presetChords.length === 1 && presetChords[0] === chord) delete next.overrides[action];
    else next.overrides[action] = [chord];
    setProblem(null);
    void save(next);
  };

  const choosePreset = (preset: KeymapPreset) => {
    // The user's own keys stay, unless they would clash with the new preset's.
    const next: KeymapSettings = { preset, overrides: { ...keymapState.settings.overrides } };
    for (const p of keymapProblems(resolveBindings(next))) delete next.overrides[p.action];
    setProblem(null);
    void save(next);
  };

  // A recorded chord is checked, then bound or refused with the reason (read through a ref: the
  // recording effect must not restart when the wording functions change).
  const recorded = useRef((action: KeymapAction, chord: string) => {
    void action;
    void chord;
  });
  recorded.current = (action, chord) => {
    if (chordProblem(chord)) {
      setProblem({ action, text: t('keymap.problem.needsModifier') });
      return;
    }
    const clash = bindProblem(keymapState.bindings, action, chord);
    if (clash) {
      setProblem({ action, text: problemText(clash) });
      return;
    }
    bind(action, chord);
  };

  // Recording: the next key press (or a prefix and a key) becomes the action's chord.
  useEffect(() => {
    if (!recording) return;
    let first = '';
    const prefixes = new Set(
      Object.values(keymapState.bindings)
        .flat()
        .filter((c) => c.includes(' '))
        .map((c) => c.split(' ')[0]),
    );
    const onKey = (e: KeyboardEvent) => {
      if (MODIFIER_KEYS.has(e.key)) return;
      e.preventDefault();
      e.stopPropagation();
      if (e.key === 'Escape' && !first && !e.ctrlKey && !e.altKey && !e.metaKey) {
        setRecording(null);
        return;
      }
      const stroke = strokeOf(e);
      if (!stroke) return;
      const s = formatStroke(stroke);
      if (!first && prefixes.has(s)) {
        first = s;
        return;
      }
      setRecording(null);
      recorded.current(recording, first ? `${first} ${s}` : s);
    };
    window.addEventListener('keydown', onKey, { capture: true });
    return () => window.removeEventListener('keydown', onKey, { capture: true });
  }, [recording]);

  const overrides = km.settings.overrides;
  return (
    <div className="space-y-4" data-testid="keymap">
      <Section title={t('keymap.preset.title')} description={t('keymap.preset.description')}>
        <fieldset aria-label={t('keymap.preset.title')} className="grid gap-2 border-0 p-0 sm:grid-cols-3">
          {KEYMAP_PRESETS.map((p) => (
            <button
              key={p}
              type="button"
              aria-pressed={km.settings.preset === p}
              onClick={() => choosePreset(p)}
              data-testid={`keymap-preset-${p}`}
              className={cx(
                'flex flex-col gap-1.5 rounded-lg border p-3 text-left text-[13px] transition-colors focus-ring',
                km.settings.preset === p
                  ? 'border-zinc-900 ring-1 ring-zinc-900 dark:border-zinc-100 dark:ring-zinc-100'
                  : 'border-zinc-200 hover:border-zinc-300 dark:border-zinc-800 dark:hover:border-zinc-700',
              )}
            >
              <span className="font-medium text-zinc-800 dark:text-zinc-200">{t(`keymap.preset.${p}`)}</span>
              <ShortcutKeys keys={chordKeys(PRESET_BINDINGS[p].newShell[0])} />
              <span className="text-xs leading-relaxed text-zinc-500 dark:text-zinc-400">
                {t(`keymap.preset.${p}Hint`)}
              </span>
            </button>
          ))}
        </fieldset>
      </Section>
      <Section title={t('keymap.title')} description={t('keymap.description')}>
        <div className="space-y-3">
          {status.kind === 'failed' ? <Alert tone="danger">{status.text}</Alert> : null}
          <table className="w-full text-[13px]">
            <thead className="sr-only">
              <tr>
                <th>{t('keymap.action')}</th>
                <th>{t('keymap.keys')}</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {KEYMAP_ACTIONS.map((a) => {
                const chord = km.bindings[a][0];
                const custom = overrides[a] !== undefined;
                return (
                  <tr
                    key={a}
                    data-action={a}
                    data-testid="keymap-row"
                    className="border-t border-zinc-100 align-middle dark:border-zinc-800"
                  >
                    <td className="py-1.5 pr-3 text-zinc-800 dark:text-zinc-200">
                      {actionTitle(a)}
                      {custom ? (
                        <span className="ml-2 rounded bg-violet-50 px-1.5 py-0.5 text-[10px] font-medium text-violet-700 dark:bg-violet-950 dark:text-violet-300">
                          {t('keymap.custom')}
                        </span>
                      ) : null}
                      {problem?.action === a ? (
                        <p
                          role="alert"
                          className="mt-1 text-xs text-red-600 dark:text-red-400"
                          data-testid="keymap-problem"
                        >
                          {problem.text}
                        </p>
                      ) : null}
                    </td>
                    <td className="py-1.5 pr-3 text-right whitespace-nowrap" data-testid="keymap-keys">
                      {recording === a ? (
                        <span className="text-xs text-violet-600 dark:text-violet-400">
                          {t('keymap.press')}
                        </span>
                      ) : chord ? (
                        <ShortcutKeys keys={chordKeys(chord)} className="inline-flex items-center gap-1" />
                      ) : (
                        <span className="text-xs text-zinc-400">{t('keymap.none')}</span>
                      )}
                    </td>
                    <td className="py-1.5 text-right whitespace-nowrap">
                      <span className="inline-flex gap-1">
                        <Button
                          size="sm"
                          variant="ghost"
                          aria-label={t('keymap.rebindLabel', { action: actionTitle(a) })}
                          title={t('keymap.pressHint')}
                          onClick={() => {
                            setProblem(null);
                            setRecording(recording === a ? null : a);
                          }}
                          data-testid={`keymap-rebind-${a}`}
                        >
                          {t('keymap.rebind')}
                        </Button>
                        <IconButton
                          icon="x"
                          size={14}
                          label={t('keymap.unbind')}
                          disabled={!chord}
                          onClick={() => bind(a, null)}
                          data-testid={`keymap-unbind-${a}`}
                        />
                        <IconButton
                          icon="rotate"
                          size={14}
                          label={t('keymap.resetLabel', { action: actionTitle(a) })}
                          disabled={!custom}
                          onClick={() => {
                            const next = current();
                            delete next.overrides[a];
                            const clash = keymapProblems(resolveBindings(next)).find(
                              (p) => p.action === a || (p.kind !== 'reserved' && p.other === a),
                            );
                            if (clash) {
                              setProblem({ action: a, text: problemText(clash) });
                              return;
                            }
                            setProblem(null);
                            void save(next);
                          }}
                          data-testid={`keymap-reset-${a}`}
                        />
                      </span>
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
          <div className="flex items-center gap-3">
            <Button
              variant="ghost"
              icon="rotate"
              disabled={Object.keys(overrides).length === 0}
              onClick={() => {
                setProblem(null);
                void save({ preset: km.settings.preset, overrides: {} });
              }}
              data-testid="keymap-reset-all"
            >
              {t('keymap.resetAll')}
            </Button>
            <div aria-live="polite" className="text-xs text-zinc-500" data-testid="keymap-status">
              {status.kind === 'saving'
                ? t('keymap.saving')
                : status.kind === 'saved'
                  ? t('keymap.saved')
                  : null}
            </div>
          </div>
        </div>
      </Section>
    </div>
  );
}
