// The code window: VS Code (code-server) on the board, shown from the code origin in an iframe, where
// the board runs one and the service runs the code proxy; otherwise it says why and offers the
// built-in file tree and editor. The iframe never shows the console's origin: its URL is a one-time
// ticket (codeTicket) that the code listener turns into a cookie of its own, on a host name of its own
// that shares none of the console's cookies (src/shared/desktop.ts, "The code window"). The sandbox keeps
// the board's page from navigating the console itself.
import { useCallback, useEffect, useState } from 'react';
import { useTranslation } from 'react-i18next';
import { CodeReason, DesktopUnavailable, desktopCalls } from '#shared/desktop.ts';
import { ApiError, call } from '#web/api/http.ts';
import { Button, Spinner } from '#web/components/ui.tsx';

const [statusCall, ticketCall] = desktopCalls;

type State =
  | { kind: 'checking' }
  | { kind: 'frame'; url: string }
  | {
      kind: 'fallback';
      reason: 'none' | 'proxyOff' | 'noOwnHost' | 'installing' | 'riscv' | 'statusFailed' | 'ticketFailed';
    };

const REASONS: Record<string, 'proxyOff' | 'noOwnHost' | 'installing' | 'riscv'> = {
  [DesktopUnavailable.codeProxyOff]: 'proxyOff',
  [DesktopUnavailable.codeNoOwnHost]: 'noOwnHost',
  [DesktopUnavailable.codeInstalling]: 'installing',
  [DesktopUnavailable.codeNoRiscvBuild]: 'riscv',
};

export function CodePane({
  applyId,
  onOpenFiles,
  onOpenEditor,
}: {
  applyId: string;
  /** Shows the workbench's file tree and editor (the built-in fallback). */
  onOpenFiles: () => void;
  onOpenEditor: () => void;
}) {
  const { t } = useTranslation('desktop');
  const [state, setState] = useState<State>({ kind: 'checking' });
  const [opening, setOpening] = useState(false);
  // Asking again from the status (an install finished meanwhile), not only for a new ticket.
  const [round, setRound] = useState(0);
  // The frame URL whose page has loaded: until then the pane says it is opening, since the first
  // request may wait for the board to start code-server (seconds) and an empty frame looks broken.
  const [loadedUrl, setLoadedUrl] = useState<string | null>(null);

  const ticket = useCallback(async (): Promise<State> => {
    try {
      const r = await call(ticketCall, { applyId }, { silent: true });
      return { kind: 'frame', url: r.url };
    } catch (err) {
      const key = err instanceof ApiError ? err.key : undefined;
      return {
        kind: 'fallback',
        reason:
          key === CodeReason.proxyOff
            ? 'proxyOff'
            : key === CodeReason.noOwnHost
              ? 'noOwnHost'
              : 'ticketFailed',
      };
    }
  }, [applyId]);

  // biome-ignore lint/correctness/useExhaustiveDependencies: a new round asks the status again
  useEffect(() => {
    let stop = false;
    setState({ kind: 'checking' });
    (async () => {
      let next: State;
      try {
        const r = await call(statusCall, { applyId }, { silent: true });
        if (r.code.available) next = await ticket();
        else next = { kind: 'fallback', reason: REASONS[r.code.reason ?? ''] ?? 'none' };
      } catch {
        next = { kind: 'fallback', reason: 'statusFailed' };
      }
      if (!stop) setState(next);
    })();
    return () => {
      stop = true;
    };
  }, [applyId, ticket, round]);

  const reload = async () => {
    setState({ kind: 'checking' });
    setState(await ticket());
  };

  const openTab = async () => {
    setOpening(true);
    // The tab is opened at once (a popup blocker allows it during the click) and sent to the ticket
    // URL when it arrives; `opener` is cut so the board's page cannot reach the console's window.
    const w = window.open('about:blank', '_blank');
    if (w) w.opener = null;
    const next = await ticket();
    setOpening(false);
    if (next.kind === 'frame') {
      if (w) w.location.href = next.url;
    } else {
      w?.close();
      setState(next);
    }
  };

  if (state.kind === 'checking')
    return (
      <div className="flex h-full items-center justify-center gap-2 text-[13px] text-zinc-500">
        <Spinner size={14} /> {t('code.checking')}
      </div>
    );

  const fallbackButtons = (variant: 'ghost' | 'secondary') => (
    <>
      <Button size="sm" variant={variant} icon="layers" onClick={onOpenFiles} data-testid="code-open-files">
        {t('code.openFiles')}
      </Button>
      <Button size="sm" variant={variant} icon="book" onClick={onOpenEditor} data-testid="code-open-editor">
        {t('code.openEditor')}
      </Button>
    </>
  );

  if (state.kind === 'frame')
    return (
      <div className="flex h-full min-h-0 flex-col" data-testid="code-pane" data-available="yes">
        <div className="flex shrink-0 flex-wrap items-center gap-1.5 border-b border-zinc-200 px-2 py-1 text-[11px] dark:border-zinc-800">
          <span className="mr-auto text-zinc-500">{t('code.title')}</span>
          <Button size="sm" variant="ghost" icon="refresh" onClick={reload} data-testid="code-reload">
            {t('code.reload')}
          </Button>
          <Button
            size="sm"
            variant="ghost"
            icon="external"
            onClick={openTab}
            loading={opening}
            data-testid="code-open-tab"
          >
            {t('code.openTab')}
          </Button>
          {fallbackButtons('ghost')}
        </div>
        {loadedUrl !== state.url && (
          <div
            className="flex shrink-0 items-center gap-2 border-b border-zinc-200 px-3 py-2 text-[12px] text-zinc-500 dark:border-zinc-800"
            role="status"
            data-testid="code-starting"
          >
            <Spinner size={12} /> {t('code.starting')}
          </div>
        )}
        <iframe
          key={state.url}
          onLoad={() => setLoadedUrl(state.url)}
          src={state.url}
          title={t('code.frameTitle')}
          className="min-h-0 w-full flex-1 border-0 bg-white"
          data-testid="code-frame"
          referrerPolicy="no-referrer"
          // A different origin may keep its own origin (it is not the console's); no top navigation.
          sandbox="allow-scripts allow-same-origin allow-forms allow-popups allow-downloads allow-modals"
          allow="clipboard-read; clipboard-write"
        />
      </div>
    );

  return (
    <div
      className="flex h-full flex-col items-center justify-center gap-3 p-4 text-center text-[13px] text-zinc-600 dark:text-zinc-400"
      data-testid="code-pane"
      data-available={
        state.reason === 'none' || state.reason === 'riscv'
          ? 'no'
          : state.reason === 'proxyOff' || state.reason === 'noOwnHost'
            ? 'off'
            : state.reason === 'installing'
              ? 'installing'
              : 'failed'
      }
      data-reason={state.reason}
    >
      <p data-testid="code-message">{t(`code.${state.reason}`)}</p>
      <div className="flex gap-2">
        {(state.reason === 'ticketFailed' || state.reason === 'installing') && (
          <Button
            size="sm"
            icon="refresh"
            onClick={state.reason === 'installing' ? () => setRound((n) => n + 1) : reload}
            data-testid="code-reload"
          >
            {t('code.reload')}
          </Button>
        )}
        {fallbackButtons('secondary')}
      </div>
    </div>
  );
}
