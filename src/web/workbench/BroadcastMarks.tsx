// How a shell in the broadcast set looks (terminal/broadcast.ts): an amber band across the top of its
// pane saying how many shells the keys go to, with buttons to stop here or stop everywhere, and an
// amber frame around the whole terminal, so no one types into several boards without seeing it. The
// same amber marks the tab (ShellArea). Amber on dark text reads in both the light and dark themes.
import type { ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import { useSnapshot } from 'valtio';
import { broadcast, leaveBroadcast } from '#web/terminal/broadcast.ts';
import { stopAllBroadcast } from './broadcast-slots.ts';

/** Radio waves around a dot: the broadcast mark. */
export function BroadcastIcon({ size = 14, className }: { size?: number; className?: string }) {
  return (
    <svg
      width={size}
      height={size}
      viewBox="0 0 24 24"
      fill="none"
      stroke="currentColor"
      strokeWidth={2}
      strokeLinecap="round"
      aria-hidden="true"
      focusable="false"
      className={className}
    >
      <path d="M12 12h.01M8.5 15.5a5 5 0 0 1 0-7M15.5 8.5a5 5 0 0 1 0 7M5.6 18.4a9 9 0 0 1 0-12.8M18.4 5.6a9 9 0 0 1 0 12.8" />
    </svg>
  );
}

/** The band above a broadcasting shell's terminal; nothing while the shell is not in the set. */
export function BroadcastBar({ shellId }: { shellId: string }) {
  const { t } = useTranslation('workbench');
  const { members } = useSnapshot(broadcast);
  if (!members.includes(shellId)) return null;
  const btn =
    'rounded border border-amber-900/40 bg-amber-100/70 px-1.5 py-0.5 font-medium hover:bg-amber-50 focus-visible:outline-2 focus-visible:outline-amber-950';
  return (
    <div
      className="flex flex-wrap items-center gap-x-2 gap-y-1 bg-amber-400 px-2 py-1 text-xs text-amber-950"
      data-testid="broadcast-bar"
      data-count={members.length}
    >
      <BroadcastIcon size={14} className="shrink-0" />
      <span role="status" className="font-semibold whitespace-nowrap" data-testid="broadcast-count">
        {t('broadcast.bar', { count: members.length })}
      </span>
      <span className="ml-auto flex shrink-0 items-center gap-1">
        <button
          type="button"
          className={btn}
          onClick={() => leaveBroadcast([shellId])}
          data-testid="broadcast-leave"
        >
          {t('broadcast.leave')}
        </button>
        <button
          type="button"
          className={btn}
          onClick={() => stopAllBroadcast()}
          data-testid="broadcast-stop-all"
        >
          {t('broadcast.stopAll')}
        </button>
      </span>
    </div>
  );
}

/** Frames a shell's pane in amber while it broadcasts; `data-broadcast` tells tests and styles. */
export function BroadcastFrame({ shellId, children }: { shellId: string; children: ReactNode }) {
  const { members } = useSnapshot(broadcast);
  const on = members.includes(shellId);
  return (
    <div className="relative h-full" data-broadcast={on ? 'on' : 'off'}>
      {children}
      {on ? (
        <div
          aria-hidden
          className="pointer-events-none absolute inset-0 z-20 ring-[3px] ring-amber-500 ring-inset"
        />
      ) : null}
    </div>
  );
}
