// The workbench on a phone: one pane at a time under a row of tabs (shells, files, editor, load, and the
// desktop, code and flash panes while they are open) instead of the resizable desktop columns.
//
// A pane mounts the first time it is shown and then stays mounted, hidden, so shells keep streaming, an
// unsaved editor keeps its text and a desktop keeps its connection; terminals are refitted whenever the
// shells come back to the front (a hidden pane has no size to fit to). What the user does elsewhere
// brings its pane forward: opening a file shows the editor, a new shell shows the shells, a pane turned
// on from the palette shows that pane.

import { type ReactNode, useEffect, useState } from 'react';
import { useTranslation } from 'react-i18next';
import { proxy, subscribe, useSnapshot } from 'valtio';
import { Icon, type IconName } from '#web/components/icons.tsx';
import { cx } from '#web/components/ui.tsx';
import { codeWindow, vncWindow } from '#web/desktop/state.ts';
import { editorOf } from '#web/files/state.ts';
import { flash } from '#web/flash/state.ts';
import { findShell } from '#web/terminal/registry.ts';
import { workbench } from './store.ts';

export type PhonePane = 'shells' | 'files' | 'editor' | 'load' | 'vnc' | 'code' | 'flash';

/** The pane in front on a phone (not persisted: a phone visit starts at the shells). */
export const phoneUi = proxy({ pane: 'shells' as PhonePane });

export function showPhonePane(pane: PhonePane): void {
  phoneUi.pane = pane;
}

export interface PhonePaneDef {
  id: PhonePane;
  label: string;
  icon: IconName;
  node: ReactNode;
}

/** Refits the terminals of the shells pane once it has a size again (two frames: layout, then paint). */
function refitShells(root: HTMLElement | null): void {
  requestAnimationFrame(() =>
    requestAnimationFrame(() => {
      for (const el of root?.querySelectorAll<HTMLElement>('[data-testid="terminal-pane"]') ?? []) {
        const id = el.dataset.shellId;
        if (id) findShell(id)?.refit();
      }
    }),
  );
}

/** Brings a pane forward when something outside the tab bar asks for it. */
function useFollowActions(applyId: string): void {
  useEffect(() => {
    const offs: Array<() => void> = [];
    const ed = editorOf(applyId);
    let active = ed.active;
    offs.push(
      subscribe(ed, () => {
        if (ed.active && ed.active !== active) showPhonePane('editor');
        active = ed.active;
      }),
    );
    const layout = workbench.layout;
    let tabCount = layout.tabs.length;
    let activeTab = layout.activeTab;
    const show = { ...layout.show };
    offs.push(
      subscribe(layout, () => {
        // A new shell, or another shell tab chosen from the palette or by key.
        if (layout.tabs.length > tabCount || (layout.activeTab && layout.activeTab !== activeTab))
          showPhonePane('shells');
        tabCount = layout.tabs.length;
        activeTab = layout.activeTab;
        for (const k of ['files', 'editor', 'load'] as const) {
          if (layout.show[k] !== show[k]) {
            if (layout.show[k]) showPhonePane(k);
            else if (phoneUi.pane === k) showPhonePane('shells');
            show[k] = layout.show[k];
          }
        }
      }),
    );
    let vnc = vncWindow.opened;
    offs.push(
      subscribe(vncWindow, () => {
        if (vncWindow.opened !== vnc) showPhonePane(vncWindow.opened ? 'vnc' : 'shells');
        vnc = vncWindow.opened;
      }),
    );
    let code = codeWindow.opened;
    offs.push(
      subscribe(codeWindow, () => {
        if (codeWindow.opened !== code) showPhonePane(codeWindow.opened ? 'code' : 'shells');
        code = codeWindow.opened;
      }),
    );
    let flashOpen = flash.paneOpen;
    offs.push(
      subscribe(flash, () => {
        if (flash.paneOpen !== flashOpen && flash.paneOpen) showPhonePane('flash');
        flashOpen = flash.paneOpen;
      }),
    );
    return () => {
      for (const off of offs) off();
    };
  }, [applyId]);
}

export function PhoneWorkbench({ applyId, panes }: { applyId: string; panes: PhonePaneDef[] }) {
  const { t } = useTranslation('workbench');
  const ui = useSnapshot(phoneUi);
  const current = panes.some((p) => p.id === ui.pane) ? ui.pane : 'shells';
  const [mounted, setMounted] = useState<ReadonlySet<PhonePane>>(() => new Set(['shells', current]));
  const [shellsEl, setShellsEl] = useState<HTMLElement | null>(null);
  useFollowActions(applyId);

  useEffect(() => {
    setMounted((m) => (m.has(current) ? m : new Set([...m, current])));
    if (current === 'shells') refitShells(shellsEl);
  }, [current, shellsEl]);

  return (
    <div
      className="flex min-h-0 flex-1 flex-col"
      data-testid="phone-workbench"
      // What a soft keyboard overlays (KeyRow's useKeyboardInset; 0 where the page is resized for it).
      style={{ paddingBottom: 'var(--keyboard-inset, 0px)' }}
    >
      <div
        role="tablist"
        aria-label={t('phone.panes')}
        className="flex shrink-0 items-stretch overflow-x-auto border-b border-zinc-200 bg-white [scrollbar-width:none] dark:border-zinc-800 dark:bg-zinc-950"
      >
        {panes.map((p) => {
          const selected = p.id === current;
          return (
            <button
              key={p.id}
              type="button"
              role="tab"
              id={`phone-tab-${p.id}`}
              aria-selected={selected}
              aria-controls={`phone-pane-${p.id}`}
              data-testid="phone-tab"
              data-pane={p.id}
              onClick={() => showPhonePane(p.id)}
              className={cx(
                'relative inline-flex min-h-11 min-w-16 flex-1 shrink-0 items-center justify-center gap-1.5 px-3 text-[13px] font-medium whitespace-nowrap transition-colors outline-none focus-visible:bg-zinc-100 dark:focus-visible:bg-zinc-800',
                selected
                  ? 'text-zinc-900 dark:text-zinc-50'
                  : 'text-zinc-500 active:bg-zinc-100 dark:text-zinc-400 dark:active:bg-zinc-800',
              )}
            >
              <Icon
                name={p.icon}
                size={15}
                className={selected ? 'text-emerald-600 dark:text-emerald-400' : ''}
              />
              {p.label}
              <span
                aria-hidden="true"
                className={cx(
                  'absolute inset-x-2 bottom-0 h-0.5 rounded-full',
                  selected ? 'bg-zinc-900 dark:bg-zinc-100' : 'bg-transparent',
                )}
              />
            </button>
          );
        })}
      </div>
      <div className="relative min-h-0 flex-1">
        {panes.map((p) =>
          mounted.has(p.id) || p.id === current ? (
            <div
              key={p.id}
              ref={p.id === 'shells' ? setShellsEl : undefined}
              id={`phone-pane-${p.id}`}
              role="tabpanel"
              aria-labelledby={`phone-tab-${p.id}`}
              hidden={p.id !== current}
              data-testid="phone-pane"
              data-phone-pane={p.id}
              // The attribute alone loses to `flex`: the class hides it too.
              className={cx('absolute inset-0 flex-col', p.id === current ? 'flex' : 'hidden')}
            >
              {p.node}
            </div>
          ) : null,
        )}
      </div>
    </div>
  );
}
