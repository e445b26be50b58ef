// One shell slot of the workbench. A slot without a clientId opens its shell (apply-device-shell) and
// remembers the clientId in the persisted layout; a slot with one (after a reload) simply attaches to
// it, and the terminal resumes from the server's scrollback. Closing a slot closes the shell on the
// server and disposes its live terminal (which takes it out of the broadcast set). A broadcasting shell
// is framed and banded in amber (BroadcastMarks.tsx).

import { lazy, Suspense, useEffect, useRef, useState } from 'react';
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { shellCalls } from '#shared/shells.ts';
import { call } from '#web/api/http.ts';
import { keyOf, leaseOf, leases, messageOf } from '#web/boards/store.ts';
import { Button, Spinner } from '#web/components/ui.tsx';
import { disposeShell } from '#web/terminal/registry.ts';
import type { TerminalPaneHandle } from '#web/terminal/TerminalPane.tsx';
import { BroadcastBar, BroadcastFrame } from './BroadcastMarks.tsx';
import { type ShellSlot, setClientId, slotApply } from './store.ts';

// The terminal (xterm) and its share bar load with the first slot that shows a shell, not with the
// workbench: both from one request, so the bar is there when the pane is.
const loadTerminal = () =>
  Promise.all([import('#web/terminal/TerminalPane.tsx'), import('#web/share/ShellShareBar.tsx')]);
const TerminalPane = lazy(() => loadTerminal().then(([m]) => ({ default: m.TerminalPane })));
const ShellShareBar = lazy(() => loadTerminal().then(([, m]) => ({ default: m.ShellShareBar })));

const applyShell = shellCalls.find((c) => c.name === 'applyDeviceShell') as Extract<
  (typeof shellCalls)[number],
  { name: 'applyDeviceShell' }
>;
const unapplyShell = shellCalls.find((c) => c.name === 'unapplyDeviceShell') as Extract<
  (typeof shellCalls)[number],
  { name: 'unapplyDeviceShell' }
>;

/** Mounted terminal panes by slot id, for focus and search from keys and the palette. */
const handles = new Map<string, TerminalPaneHandle>();
/** Shells being opened by slot id, so a re-render (or StrictMode) never opens two. */
const opening = new Map<string, Promise<string>>();
/** How often a shell on a board that is still booting is asked for again. */
const BOOTING_RETRY_MS = 3000;

export function focusSlot(slotId: string): void {
  const h = handles.get(slotId);
  if (h) h.focus();
  else document.querySelector<HTMLElement>(`[data-pane-id="shell:${slotId}"]`)?.focus();
}

/** Replaces the slot's shell with a new one of its kind (after it ended: board reset, exit, …). */
export function restartSlot(applyId: string, slot: ShellSlot): void {
  const old = slot.clientId;
  if (!old) return;
  handles.delete(slot.id);
  disposeShell(old);
  void call(unapplyShell, { applyId: slotApply(slot, applyId), clientId: old }, { silent: true }).catch(
    () => {},
  );
  setClientId(slot.id, null);
}

export function searchSlot(slotId: string): void {
  handles.get(slotId)?.openSearch();
}

export async function closeShell(applyId: string, slot: ShellSlot): Promise<void> {
  handles.delete(slot.id);
  const clientId = slot.clientId ?? (await opening.get(slot.id)?.catch(() => null));
  if (!clientId) return;
  disposeShell(clientId);
  try {
    await call(unapplyShell, { applyId: slotApply(slot, applyId), clientId }, { silent: true });
  } catch {
    // Already closed (apply ended, board reset): nothing left to close.
  }
}

function openShell(applyId: string, slot: ShellSlot): Promise<string> {
  let p = opening.get(slot.id);
  if (!p) {
    p = call(applyShell, { applyId: slotApply(slot, applyId), shellType: slot.kind }, { silent: true }).then(
      (r) => r.clientId,
    );
    opening.set(slot.id, p);
    p.then(
      (id) => {
        setClientId(slot.id, id);
        opening.delete(slot.id);
      },
      () => opening.delete(slot.id),
    );
  }
  return p;
}

export function TerminalSlot({
  applyId,
  deviceId,
  slot,
  hidden,
}: {
  applyId: string;
  deviceId: string;
  slot: ShellSlot;
  hidden: boolean;
}) {
  const { t } = useTranslation('workbench');
  const [error, setError] = useState('');
  const [attempt, setAttempt] = useState(0);
  const paneRef = useRef<TerminalPaneHandle | null>(null);
  const clientId = slot.clientId;
  // A shell asked for while the board resets or flashes cannot open; it opens by itself once the
  // board is back, instead of waiting for a Retry.
  useSnapshot(leases);
  const boardState = leaseOf(slot.board?.deviceId ?? deviceId)?.boardState;
  // biome-ignore lint/correctness/useExhaustiveDependencies: only the board coming back retries.
  useEffect(() => {
    if (error && boardState === 'leased') setAttempt((a) => a + 1);
  }, [boardState]);

  // biome-ignore lint/correctness/useExhaustiveDependencies: `attempt` retries a failed open.
  useEffect(() => {
    if (clientId) return;
    let stopped = false;
    setError('');
    let again: ReturnType<typeof setTimeout> | undefined;
    openShell(applyId, slot).catch((err) => {
      if (stopped) return;
      setError(messageOf(err));
      // A riscv64 board still booting answers at once that it is: try again until its agent answers.
      if (keyOf(err) === 'board.booting')
        again = setTimeout(() => setAttempt((a) => a + 1), BOOTING_RETRY_MS);
    });
    return () => {
      stopped = true;
      if (again) clearTimeout(again);
    };
  }, [applyId, clientId, slot.id, attempt]);

  useEffect(() => {
    if (!clientId) return;
    const h: TerminalPaneHandle = {
      focus: () => paneRef.current?.focus(),
      openSearch: () => paneRef.current?.openSearch(),
    };
    handles.set(slot.id, h);
    return () => {
      if (handles.get(slot.id) === h) handles.delete(slot.id);
    };
  }, [clientId, slot.id]);

  if (!clientId) {
    return (
      <div
        className="flex h-full items-center justify-center bg-zinc-950 p-4 text-xs text-zinc-400"
        data-testid="terminal-opening"
      >
        {error ? (
          <div className="flex flex-col items-center gap-2 text-center">
            <span className="text-red-400">{error}</span>
            {boardState && boardState !== 'leased' ? (
              <span data-testid="terminal-waits-board">{t('shells.waitsForBoard')}</span>
            ) : null}
            <Button size="sm" autoFocus={!hidden} onClick={() => setAttempt((a) => a + 1)}>
              {t('devices:common.retry')}
            </Button>
          </div>
        ) : (
          <span className="flex items-center gap-2">
            <Spinner size={12} /> {t(slot.kind === 'serial' ? 'shells.newSerial' : 'shells.newShell')}…
          </span>
        )}
      </div>
    );
  }
  return (
    <BroadcastFrame shellId={clientId}>
      <Suspense fallback={<div className="h-full bg-zinc-950" data-testid="terminal-loading" />}>
        <TerminalPane
          ref={paneRef}
          shellId={clientId}
          autoFocus={!hidden}
          className="h-full"
          onRestart={() => restartSlot(applyId, slot)}
          bar={
            <>
              <BroadcastBar shellId={clientId} />
              <Suspense fallback={null}>
                <ShellShareBar shellId={clientId} />
              </Suspense>
            </>
          }
        />
      </Suspense>
    </BroadcastFrame>
  );
}
